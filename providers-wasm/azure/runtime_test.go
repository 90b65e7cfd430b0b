package main

import (
	"context"
	"testing"

	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// The real module under the gateway's wazero runtime, every hook.
func TestUnderWasm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a wasm module")
	}
	p := plugintest.LoadWasm(t, plugintest.BuildWasm(t, "."), plugintest.Options{Name: "adapter-azure"})
	ctx := context.Background()
	if m := p.Manifest(); m.Name != "adapter-azure" || m.Wire != "azure" || !m.HasCapability("request:embedding") {
		t.Fatalf("manifest %+v", m)
	}
	native := New()
	for _, req := range []string{
		`{"request_type":"chat.completion","model":"dep","stream":true,"key_config":{"endpoint":"https://r.openai.azure.com"},"body":{"messages":[]}}`,
		`{"request_type":"list_models","key_config":{"endpoint":"https://r.openai.azure.com","api_version":"2024-06-01"},"body":{}}`,
	} {
		out, err := p.AdaptRequest(ctx, []byte(req))
		want, _ := native.AdaptRequest([]byte(req))
		if err != nil || string(out.Body) != string(want.Body) {
			t.Fatalf("adapt_request: %s %v, want %s", out.Body, err, want.Body)
		}
	}
	_, err := p.AdaptRequest(ctx, []byte(`{"request_type":"chat.completion","model":"dep","body":{}}`))
	if pe, ok := err.(*plugins.Error); !ok || pe.Kind != plugins.KindRejected || pe.HTTPStatus() != 400 {
		t.Fatalf("no endpoint: %v", err)
	}
	out, err := p.AdaptResponse(ctx, []byte(`{"request_type":"list_models","status":200,"body":{"data":[{"id":"gpt-4o","object":"model"}]}}`))
	if err != nil || string(out.Body) != `{"object":"list","data":[{"id":"gpt-4o","object":"model","owned_by":"azure"}]}` {
		t.Fatalf("adapt_response: %s %v", out.Body, err)
	}
	out, err = p.AdaptStream(ctx, pluginsdk.StreamInput{Batch: []byte(`[{"data":{"id":"c","choices":[]}},{"data":"[DONE]"}]`), End: true})
	if err != nil || string(out.Body) != `[{"id":"c","choices":[]}]` {
		t.Fatalf("adapt_stream: %s %v", out.Body, err)
	}
	_, err = p.AdaptStream(ctx, pluginsdk.StreamInput{Batch: []byte(`[{"data":{"error":{"code":"429","message":"x"}}}]`)})
	if pe, ok := err.(*plugins.Error); !ok || pe.HTTPStatus() != 429 {
		t.Fatalf("stream error: %v", err)
	}
}
