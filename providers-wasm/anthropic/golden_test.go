package main

import (
	"encoding/json"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
)

// Golden files: testdata/<hook>/*.json hold {"input", "want"}. Outputs are
// compared as decoded JSON. go test -update rewrites "want"; every rewrite
// is reviewed by hand before it is committed.

func runGolden(t *testing.T, dir string, hook func(t *testing.T, in []byte) []byte) {
	for _, path := range goldenFiles(t, dir+"/*.json") {
		t.Run(path, func(t *testing.T) {
			g := readGolden(t, path)
			checkGolden(t, path, g, hook(t, g.Input))
		})
	}
}

func must(t *testing.T, out pluginsdk.Output, err error) []byte {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != pluginsdk.StatusOK {
		t.Fatalf("status %v", out.Status)
	}
	return out.Body
}

func TestGoldenAdaptRequest(t *testing.T) {
	a := testAdapter()
	runGolden(t, "request", func(t *testing.T, in []byte) []byte {
		out, err := a.AdaptRequest(in)
		return must(t, out, err)
	})
}

func TestGoldenAdaptResponse(t *testing.T) {
	a := testAdapter()
	runGolden(t, "response", func(t *testing.T, in []byte) []byte {
		out, err := a.AdaptResponse(in)
		return must(t, out, err)
	})
}

func TestGoldenIngress(t *testing.T) {
	a := testAdapter()
	runGolden(t, "ingress", func(t *testing.T, in []byte) []byte {
		out, err := a.IngressRequest(in)
		return must(t, out, err)
	})
}

func TestGoldenEgress(t *testing.T) {
	a := testAdapter()
	runGolden(t, "egress", func(t *testing.T, in []byte) []byte {
		out, err := a.EgressResponse(in)
		return must(t, out, err)
	})
}

// Stream goldens run twice, one event per batch and everything in one
// batch: the state blob must make batching invisible.
func TestGoldenAdaptStream(t *testing.T) {
	a := testAdapter()
	runGolden(t, "stream", func(t *testing.T, in []byte) []byte {
		var spec struct {
			File string `json:"sse_file"`
		}
		if err := json.Unmarshal(in, &spec); err != nil {
			t.Fatal(err)
		}
		events := readSSE(t, readTestdata(t, spec.File))
		one := arrayOf(runStream(t, a.AdaptStream, splitBatches(t, events, 1)))
		all := arrayOf(runStream(t, a.AdaptStream, splitBatches(t, events, 0)))
		assertJSONEqual(t, "batched vs whole", one, all)
		return one
	})
}

func TestGoldenEgressStream(t *testing.T) {
	a := testAdapter()
	runGolden(t, "egress_stream", func(t *testing.T, in []byte) []byte {
		var chunks []json.RawMessage
		if err := json.Unmarshal(in, &chunks); err != nil {
			t.Fatal(err)
		}
		var single [][]byte
		for _, c := range chunks {
			single = append(single, arrayOf([]json.RawMessage{c}))
		}
		one := arrayOf(runStream(t, a.EgressStream, single))
		all := arrayOf(runStream(t, a.EgressStream, [][]byte{in}))
		assertJSONEqual(t, "batched vs whole", one, all)
		return one
	})
}
