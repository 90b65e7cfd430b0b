package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
)

// The fuzz targets feed the decoders arbitrary bytes. Properties: no panic
// (the fuzzer reports one) and no hang, errors are *pluginsdk.Error, input
// that is not JSON is an error, and output is valid JSON. The adapt_*
// hooks also run with validate_input off: then malformed input may give
// a best-effort result, but still never a panic, and valid input must
// still give valid output.

func seeds(f *testing.F, pattern string) {
	files, _ := filepath.Glob(pattern)
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"body":`))
	f.Add([]byte(`[`))
}

// checkOutput checks the properties; stream hooks accept an empty batch
// (the end-of-stream call).
func checkOutput(t *testing.T, in []byte, out pluginsdk.Output, err error, stream bool) {
	t.Helper()
	checkLoose(t, in, out, err)
	if err != nil {
		if _, ok := err.(*pluginsdk.Error); !ok {
			t.Fatalf("error is not a *pluginsdk.Error: %T %v", err, err)
		}
		return
	}
	if !json.Valid(in) && (!stream || len(bytes.TrimSpace(in)) > 0) {
		t.Fatalf("malformed input accepted: %q", in)
	}
	if !json.Valid(out.Body) {
		t.Fatalf("invalid output for %q:\n%s", in, out.Body)
	}
	if len(out.State) > 0 && !json.Valid(out.State) {
		t.Fatalf("invalid state for %q:\n%s", in, out.State)
	}
}

// checkLoose checks what holds without input validation.
func checkLoose(t *testing.T, in []byte, out pluginsdk.Output, err error) {
	t.Helper()
	if err != nil {
		if _, ok := err.(*pluginsdk.Error); !ok {
			t.Fatalf("error is not a *pluginsdk.Error: %T %v", err, err)
		}
		return
	}
	if json.Valid(in) && !json.Valid(out.Body) {
		t.Fatalf("invalid output for valid input %q:\n%s", in, out.Body)
	}
}

func loose() *Adapter { a := New(); a.validate = false; return a }

func FuzzAdaptRequest(f *testing.F) {
	seeds(f, "testdata/request/*.json")
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := New().AdaptRequest(in)
		checkOutput(t, in, out, err, false)
		out, err = loose().AdaptRequest(in)
		checkLoose(t, in, out, err)
	})
}

func FuzzAdaptResponse(f *testing.F) {
	seeds(f, "testdata/response/*.json")
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := New().AdaptResponse(in)
		checkOutput(t, in, out, err, false)
		out, err = loose().AdaptResponse(in)
		checkLoose(t, in, out, err)
	})
}

func FuzzAdaptStream(f *testing.F) {
	f.Add([]byte(`[{"data":{"candidates":[{"content":{"parts":[{"text":"hi"},{"functionCall":{"name":"f","args":{}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1}}}]`), []byte(nil), true)
	f.Add([]byte(`[{"data":{"error":{"code":503}}}]`), []byte(`{"id":"x","role":1}`), false)
	f.Add([]byte(`[{"data":"[DONE]"}]`), []byte(`{"usage":{"prompt_tokens":1}}`), true)
	f.Fuzz(func(t *testing.T, batch, state []byte, end bool) {
		in := pluginsdk.StreamInput{State: state, Batch: batch, End: end}
		out, err := New().AdaptStream(in)
		checkOutput(t, batch, out, err, true)
		out, err = loose().AdaptStream(in)
		checkLoose(t, batch, out, err)
	})
}

func FuzzIngress(f *testing.F) {
	seeds(f, "testdata/native/ingress.json")
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := New().IngressRequest(in)
		checkOutput(t, in, out, err, false)
	})
}

func FuzzEgress(f *testing.F) {
	seeds(f, "testdata/response/*.golden")
	f.Add([]byte(`[{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]},"finish_reason":"tool_calls"}]}]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := New().EgressResponse(in)
		checkOutput(t, in, out, err, false)
		out, err = New().EgressStream(pluginsdk.StreamInput{Batch: in, End: true})
		checkOutput(t, in, out, err, true)
	})
}
