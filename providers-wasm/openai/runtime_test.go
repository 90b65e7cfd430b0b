package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// The real module under the gateway's wazero runtime behaves as the Go code
// does, for every hook it declares.
func TestUnderWasm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a wasm module")
	}
	p := plugintest.LoadWasm(t, plugintest.BuildWasm(t, "."), plugintest.Options{Name: "adapter-openai"})
	ctx := context.Background()
	m := p.Manifest()
	if m.Name != "adapter-openai" || m.Wire != "openai" || !m.HasCapability(pluginsdk.CapabilityPassthrough) {
		t.Fatalf("manifest %+v", m)
	}
	native := New()
	req := []byte(`{"request_type":"chat.completion","provider":"vllm","model":"","key_config":{"model_name":"m1"},"stream":true,"body":{"messages":[{"role":"user","content":"hi"}]}}`)
	out, err := p.AdaptRequest(ctx, req)
	want, _ := native.AdaptRequest(req)
	if err != nil || string(out.Body) != string(want.Body) {
		t.Fatalf("adapt_request: %s %v, want %s", out.Body, err, want.Body)
	}
	resp := []byte(`{"request_type":"chat.completion","status":200,"body":{"id":"x","choices":[]}}`)
	if out, err = p.AdaptResponse(ctx, resp); err != nil || string(out.Body) != `{"id":"x","choices":[]}` {
		t.Fatalf("adapt_response: %s %v", out.Body, err)
	}
	batch := []byte(`[{"data":{"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}]}},{"data":"[DONE]"}]`)
	if out, err = p.AdaptStream(ctx, pluginsdk.StreamInput{Batch: batch}); err != nil || string(out.Body) != `[{"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}]}]` {
		t.Fatalf("adapt_stream: %s %v", out.Body, err)
	}
	if out, err = p.AdaptStream(ctx, pluginsdk.StreamInput{Batch: []byte(`[{"data":"[DONE]"}]`), End: true}); err != nil || out.Status != pluginsdk.StatusNoOutput {
		t.Fatalf("adapt_stream [DONE]: %+v %v", out, err)
	}
	_, err = p.AdaptStream(ctx, pluginsdk.StreamInput{Batch: []byte(`[{"data":{"error":{"message":"slow down","code":"rate_limit_exceeded"}}}]`)})
	if pe, ok := err.(*plugins.Error); !ok || pe.Kind != plugins.KindRejected || pe.HTTPStatus() != 429 {
		t.Fatalf("stream error: %v", err)
	}
	_, err = p.AdaptStream(ctx, pluginsdk.StreamInput{Batch: []byte(`[{"data":{"x":`)})
	if pe, ok := err.(*plugins.Error); !ok || pe.Kind != plugins.KindRejected || pe.HTTPStatus() != 502 {
		t.Fatalf("malformed batch: %v", err)
	}
	for _, call := range []func() (pluginsdk.Output, error){
		func() (pluginsdk.Output, error) { return p.IngressRequest(ctx, []byte(`{"model":"a"}`)) },
		func() (pluginsdk.Output, error) { return p.EgressResponse(ctx, []byte(`{"id":"a"}`)) },
		func() (pluginsdk.Output, error) {
			return p.EgressStream(ctx, pluginsdk.StreamInput{Batch: []byte(`[{"id":"a"}]`)})
		},
	} {
		if out, err := call(); err != nil || out.Status != pluginsdk.StatusPassThrough {
			t.Fatalf("drop-in hook: %+v %v", out, err)
		}
	}
	if !json.Valid(want.Body) {
		t.Fatal("spec not JSON")
	}
}
