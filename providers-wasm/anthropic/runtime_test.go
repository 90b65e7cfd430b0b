package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// The module under the real host runtime (wazero, untrusted so the
// termination checks of a default install are on) gives what the Go code
// gives natively, for every hook. "created" comes from the guest's real
// clock, so it is compared after normalising.
func TestUnderWasm(t *testing.T) {
	path := plugintest.BuildWasm(t, ".")
	p := plugintest.LoadWasm(t, path, plugintest.Options{Name: "adapter-anthropic"})
	ctx := context.Background()
	native := New()

	m := p.Manifest()
	if m.Name != "adapter-anthropic" || m.Kind != pluginsdk.KindProvider || m.Wire != "anthropic" ||
		!m.HasCapability("request:chat.completion") || !m.HasCapability("request:count_tokens") ||
		!m.HasCapability("request:list_models") || m.HasCapability("request:responses") {
		t.Fatalf("manifest %+v", m)
	}
	for _, h := range []pluginsdk.Hook{pluginsdk.HookAdaptRequest, pluginsdk.HookAdaptResponse, pluginsdk.HookAdaptStream,
		pluginsdk.HookIngressRequest, pluginsdk.HookEgressResponse, pluginsdk.HookEgressStream} {
		if !m.Implements(h) {
			t.Fatalf("manifest lacks %s: %v", h, m.Hooks)
		}
	}

	same := func(name string, dir string, wasmHook func([]byte) (pluginsdk.Output, error), goHook func([]byte) (pluginsdk.Output, error)) {
		for _, f := range goldenFiles(t, dir+"/*.json") {
			g := readGolden(t, f)
			wo, werr := wasmHook(g.Input)
			no, nerr := goHook(g.Input)
			if werr != nil || nerr != nil {
				t.Fatalf("%s %s: wasm %v, native %v", name, f, werr, nerr)
			}
			assertJSONEqual(t, name+" "+f, zeroCreated(t, no.Body), zeroCreated(t, wo.Body))
		}
	}
	same("adapt_request", "request", func(b []byte) (pluginsdk.Output, error) { return p.AdaptRequest(ctx, b) }, native.AdaptRequest)
	same("adapt_response", "response", func(b []byte) (pluginsdk.Output, error) { return p.AdaptResponse(ctx, b) }, native.AdaptResponse)
	same("ingress_request", "ingress", func(b []byte) (pluginsdk.Output, error) { return p.IngressRequest(ctx, b) }, native.IngressRequest)
	same("egress_response", "egress", func(b []byte) (pluginsdk.Output, error) { return p.EgressResponse(ctx, b) }, native.EgressResponse)

	// adapt_stream then egress_stream over a recorded transcript, one
	// event per batch as the host sends while it waits for content.
	events := readSSE(t, readTestdata(t, "fake_stream_tool_thinking.sse"))
	wasmStream := func(hook func(context.Context, pluginsdk.StreamInput) (pluginsdk.Output, error)) streamHook {
		return func(in pluginsdk.StreamInput) (pluginsdk.Output, error) { return hook(ctx, in) }
	}
	gotChunks := runStream(t, wasmStream(p.AdaptStream), splitBatches(t, events, 1))
	wantChunks := runStream(t, testAdapter().AdaptStream, splitBatches(t, events, 1))
	assertJSONEqual(t, "adapt_stream", zeroCreated(t, arrayOf(wantChunks)), zeroCreated(t, arrayOf(gotChunks)))
	gotEvents := runStream(t, wasmStream(p.EgressStream), [][]byte{arrayOf(gotChunks)})
	wantEvents := runStream(t, testAdapter().EgressStream, [][]byte{arrayOf(wantChunks)})
	assertJSONEqual(t, "egress_stream", arrayOf(wantEvents), arrayOf(gotEvents))

	// An overloaded error before any content is a 529 rejection, which the
	// host turns into a retry or a fallback.
	_, err := p.AdaptStream(ctx, pluginsdk.StreamInput{Batch: []byte(
		`[{"event":"error","data":{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}}]`)})
	if pe, ok := err.(*plugins.Error); !ok || pe.Kind != plugins.KindRejected || pe.Code != 529 {
		t.Fatalf("overloaded: %v", err)
	}
	// Malformed input is an error, never a trap.
	if _, err := p.AdaptResponse(ctx, []byte(`{"body":`)); err == nil || plugins.IsFailure(err) {
		t.Fatalf("malformed adapt_response: %v", err)
	}
}

// zeroCreated sets every "created" to 0 in a chunk, response or array.
func zeroCreated(t *testing.T, b []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["created"]; ok {
				x["created"] = 0
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(v)
	out, _ := json.Marshal(v)
	return out
}
