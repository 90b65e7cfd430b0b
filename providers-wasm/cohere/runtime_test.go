package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// Every golden case gives the same bytes under the real wazero runtime as
// natively (the clock aside: the wasm module's "created" is real, so
// responses are compared without it).
func TestUnderWasm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a wasm module")
	}
	p := plugintest.LoadWasm(t, plugintest.BuildWasm(t, "."), plugintest.Options{Name: "adapter-cohere"})
	ctx := context.Background()
	if m := p.Manifest(); m.Name != "adapter-cohere" || m.Wire != "cohere" || !m.HasCapability("request:rerank") {
		t.Fatalf("manifest %+v", m)
	}
	native := New()
	check := func(name string, got pluginsdk.Output, gerr error, want pluginsdk.Output, werr error) {
		t.Helper()
		if werr != nil {
			pe, ok := gerr.(*plugins.Error)
			if !ok || pe.Kind != plugins.KindRejected || pe.Code != pluginsdk.AsError(werr).Code {
				t.Fatalf("%s: wasm error %v, native %v", name, gerr, werr)
			}
			return
		}
		if gerr != nil {
			t.Fatalf("%s: %v", name, gerr)
		}
		if got.Status != want.Status || (len(want.Body) > 0 && withoutCreated(t, got.Body) != withoutCreated(t, want.Body)) {
			t.Fatalf("%s:\nwasm   %s\nnative %s", name, got.Body, want.Body)
		}
	}
	files, _ := filepath.Glob("testdata/adapt_request/*.in.json")
	for _, f := range files {
		in, _ := os.ReadFile(f)
		got, gerr := p.AdaptRequest(ctx, in)
		want, werr := native.AdaptRequest(in)
		check(f, got, gerr, want, werr)
	}
	files, _ = filepath.Glob("testdata/adapt_response/*.in.json")
	for _, f := range files {
		in, _ := os.ReadFile(f)
		got, gerr := p.AdaptResponse(ctx, in)
		want, werr := native.AdaptResponse(in)
		check(f, got, gerr, want, werr)
	}
	files, _ = filepath.Glob("testdata/adapt_stream/*.in.json")
	for _, f := range files {
		in, _ := os.ReadFile(f)
		var sc streamCase
		if err := json.Unmarshal(in, &sc); err != nil {
			t.Fatal(err)
		}
		wstate, nstate := []byte(sc.State), []byte(sc.State)
		for i, ev := range sc.Events {
			batch, _ := json.Marshal([]pluginsdk.UpstreamEvent{ev})
			end := i == len(sc.Events)-1
			got, gerr := p.AdaptStream(ctx, pluginsdk.StreamInput{State: wstate, Batch: batch, End: end})
			want, werr := native.AdaptStream(pluginsdk.StreamInput{State: nstate, Batch: batch, End: end})
			check(f, got, gerr, want, werr)
			if werr != nil {
				break
			}
			wstate, nstate = append([]byte(nil), got.State...), append([]byte(nil), want.State...)
		}
	}
}

// withoutCreated drops every "created" member so a real clock compares
// equal to the pinned one.
func withoutCreated(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	var strip func(any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "created")
			for _, e := range x {
				strip(e)
			}
		case []any:
			for _, e := range x {
				strip(e)
			}
		}
	}
	strip(v)
	out, _ := json.Marshal(v)
	return string(out)
}
