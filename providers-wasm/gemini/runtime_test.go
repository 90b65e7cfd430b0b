package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// wasmAdapter builds the real module and loads it under the gateway's
// wazero runtime.
func wasmAdapter(t testing.TB, trusted bool) plugins.Plugin {
	t.Helper()
	path := plugintest.BuildWasm(t, ".")
	return plugintest.LoadWasm(t, path, plugintest.Options{Name: "adapter-gemini", Trusted: trusted})
}

// Every hook of the module under wasm gives the bytes the native code
// gives (the golden files), and errors keep their status codes.
func TestUnderWasm(t *testing.T) {
	p := wasmAdapter(t, true)
	ctx := context.Background()
	m := p.Manifest()
	if m.Name != "adapter-gemini" || m.Kind != pluginsdk.KindProvider || m.Wire != "gemini" ||
		!m.HasCapability("request:chat.completion") || !m.HasCapability("request:list_models") || len(m.Hooks) != 6 {
		t.Fatalf("manifest: %+v", m)
	}
	same := func(hook string, got pluginsdk.Output, err error, native pluginsdk.Output, nerr error) {
		t.Helper()
		if err != nil || nerr != nil {
			t.Fatalf("%s: wasm %v native %v", hook, err, nerr)
		}
		if !bytes.Equal(got.Body, native.Body) || !bytes.Equal(got.State, native.State) {
			t.Fatalf("%s differs under wasm:\n%s\n%s", hook, got.Body, native.Body)
		}
	}
	n := New()

	req, _ := os.ReadFile("testdata/request/chat_gemini.json")
	req = compact(t, req)
	got, err := p.AdaptRequest(ctx, req)
	want, nerr := n.AdaptRequest(req)
	same("adapt_request", got, err, want, nerr)

	resp, _ := os.ReadFile("testdata/response/chat_tool_thought.json")
	resp = compact(t, resp)
	got, err = p.AdaptResponse(ctx, resp)
	// created comes from the clock, which tests pin natively only.
	if err != nil || !bytes.Contains(got.Body, []byte(`"thought_signature":"c2lnLTE="`)) || !bytes.Contains(got.Body, []byte(`"reasoning_tokens":25`)) {
		t.Fatalf("adapt_response: %v %s", err, got.Body)
	}

	sse, _ := os.ReadFile("testdata/stream_fake.sse")
	evs, _ := json.Marshal(splitSSE(t, sse))
	got, err = p.AdaptStream(ctx, pluginsdk.StreamInput{Batch: evs, End: true})
	if err != nil || !bytes.Contains(got.Body, []byte(`"finish_reason":"tool_calls"`)) || !bytes.Contains(got.Body, []byte(`"choices":[],"usage"`)) {
		t.Fatalf("adapt_stream: %v %s", err, got.Body)
	}
	_, err = p.AdaptStream(ctx, pluginsdk.StreamInput{Batch: []byte(`[{"data":{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"quota"}}}]`)})
	if pe, ok := err.(*plugins.Error); !ok || pe.HTTPStatus() != 429 {
		t.Fatalf("stream error: %v", err)
	}

	ing, _ := os.ReadFile("testdata/native/ingress.json")
	ing = compact(t, ing)
	got, err = p.IngressRequest(ctx, ing)
	want, nerr = n.IngressRequest(ing)
	same("ingress_request", got, err, want, nerr)

	uni, _ := os.ReadFile("testdata/response/chat_tool_thought.golden")
	uni = compact(t, uni)
	got, err = p.EgressResponse(ctx, uni)
	want, nerr = n.EgressResponse(uni)
	same("egress_response", got, err, want, nerr)

	chunks, _ := os.ReadFile("testdata/stream_fake.golden")
	in := pluginsdk.StreamInput{Batch: compact(t, chunks), End: true}
	got, err = p.EgressStream(ctx, in)
	want, nerr = n.EgressStream(in)
	same("egress_stream", got, err, want, nerr)

	_, err = p.AdaptRequest(ctx, []byte(`{"request_type":"chat.completion","provider":"gemini","model":"m","body":{"messages":3}}`))
	if pe, ok := err.(*plugins.Error); !ok || pe.Kind != plugins.KindRejected || pe.HTTPStatus() != 400 {
		t.Fatalf("bad request: %v", err)
	}
}
