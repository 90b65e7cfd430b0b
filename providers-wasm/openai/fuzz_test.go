package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/openaiwire"
)

// FuzzAdaptStream: whatever the batch, the stream hook returns chunks that
// are valid JSON or an error; malformed bytes are always an error; it never
// panics or loops.
func FuzzAdaptStream(f *testing.F) {
	files, _ := filepath.Glob("testdata/adapt_stream/*.in.json")
	for _, file := range files {
		var sc streamCase
		b, _ := os.ReadFile(file)
		if json.Unmarshal(b, &sc) == nil {
			batch, _ := json.Marshal(sc.Events)
			f.Add(batch)
		}
	}
	f.Add([]byte(`[{"event":"error","data":"x"}]`))
	f.Add([]byte(`[{"data":{"error":{"code":"429"}}}]`))
	f.Add([]byte(`[{"data":{"type":"response.failed","response":{"error":{"code":"rate_limit_exceeded","message":"\u00e9"}}}}]`))
	a := New()
	f.Fuzz(func(t *testing.T, batch []byte) {
		out, err := a.AdaptStream(pluginsdk.StreamInput{Batch: batch})
		if err != nil {
			if pe, ok := err.(*pluginsdk.Error); !ok || pe.Code < 400 || pe.Code > 599 {
				t.Fatalf("error is not a status: %v", err)
			}
			return
		}
		if !json.Valid(batch) {
			t.Fatalf("malformed batch accepted: %q", batch)
		}
		if out.Status == pluginsdk.StatusOK && !json.Valid(out.Body) {
			t.Fatalf("invalid output %q for %q", out.Body, batch)
		}
	})
}

// FuzzEventError: the error detector alone, on arbitrary event/data pairs.
func FuzzEventError(f *testing.F) {
	f.Add([]byte("error"), []byte(`{"code":"server_error","message":"m"}`))
	f.Add([]byte(""), []byte(`{"error":{"code":503}}`))
	f.Add([]byte(""), []byte(`{"error":"plain"}`))
	f.Fuzz(func(t *testing.T, event, data []byte) {
		if err := openaiwire.EventError(event, data); err != nil {
			if pe, ok := err.(*pluginsdk.Error); !ok || pe.Code < 400 || pe.Code > 599 {
				t.Fatalf("error is not a status: %v", err)
			}
		}
	})
}
