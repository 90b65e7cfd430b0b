package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
)

func seed(f *testing.F, dir string) {
	files, _ := filepath.Glob(filepath.Join("testdata", dir, "*.in.json"))
	for _, file := range files {
		b, _ := os.ReadFile(file)
		f.Add(b)
	}
}

func checkErr(t *testing.T, err error) {
	t.Helper()
	if pe, ok := err.(*pluginsdk.Error); !ok || pe.Code < 400 || pe.Code > 599 {
		t.Fatalf("error is not a status: %v", err)
	}
}

// FuzzAdaptResponse: malformed bytes are an error; accepted input gives
// valid JSON; never a panic or a hang.
func FuzzAdaptResponse(f *testing.F) {
	seed(f, "adapt_response")
	a := New()
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := a.AdaptResponse(in)
		if err != nil {
			checkErr(t, err)
			return
		}
		if !json.Valid(out.Body) {
			t.Fatalf("invalid output %q for %q", out.Body, in)
		}
	})
}

// FuzzAdaptStream fuzzes the state and the batch.
func FuzzAdaptStream(f *testing.F) {
	files, _ := filepath.Glob("testdata/adapt_stream/*.in.json")
	for _, file := range files {
		var sc streamCase
		b, _ := os.ReadFile(file)
		if json.Unmarshal(b, &sc) == nil {
			batch, _ := json.Marshal(sc.Events)
			f.Add([]byte(sc.State), batch)
		}
	}
	f.Add([]byte("c1|2|1|5|id|m"), []byte(`[{"data":{"type":"tool-call-delta","delta":{"message":{"tool_calls":{"function":{"arguments":"x"}}}}}}]`))
	a := New()
	f.Fuzz(func(t *testing.T, prev, batch []byte) {
		out, err := a.AdaptStream(pluginsdk.StreamInput{State: prev, Batch: batch})
		if err != nil {
			checkErr(t, err)
			return
		}
		if !json.Valid(batch) {
			t.Fatalf("malformed batch accepted: %q", batch)
		}
		if out.Status == pluginsdk.StatusOK && !json.Valid(out.Body) {
			t.Fatalf("invalid output %q for %q / %q", out.Body, prev, batch)
		}
		var st state
		if !st.parse(out.State) {
			t.Fatalf("unreadable state written: %q", out.State)
		}
	})
}

// FuzzAdaptRequest: the request side is fed host-validated JSON; on any
// valid input it must give a decodable spec or a 4xx, never panic.
func FuzzAdaptRequest(f *testing.F) {
	seed(f, "adapt_request")
	a := New()
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := a.AdaptRequest(in)
		if err != nil {
			checkErr(t, err)
			return
		}
		if !json.Valid(in) {
			return // outside the contract: only "no panic" holds
		}
		var spec pluginsdk.UpstreamRequest
		if err := json.Unmarshal(out.Body, &spec); err != nil {
			t.Fatalf("spec %q for %q: %v", out.Body, in, err)
		}
	})
}
