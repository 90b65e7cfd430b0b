package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// benchInputs are a ~2 KB unified chat request (the shared fixture) and a
// realistic Cohere answer of similar size.
func benchInputs(b *testing.B) (req, resp []byte) {
	body := plugintest.ChatRequest2KB()
	req, _ = json.Marshal(pluginsdk.AdaptRequestInput{RequestType: pluginsdk.RequestChat, Provider: "cohere",
		Model: "command-r-plus", BaseURL: "https://api.cohere.com/v2", Body: body})
	text := strings.Repeat("The quarterly report shows steady revenue with two key risks. ", 20)
	up, _ := json.Marshal(map[string]any{"id": "c0hf4ke0-0000-4000-8000-000000000001", "finish_reason": "COMPLETE",
		"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}},
		"usage":   map[string]any{"billed_units": map[string]any{"input_tokens": 512, "output_tokens": 260}, "tokens": map[string]any{"input_tokens": 519, "output_tokens": 260}}})
	resp, _ = json.Marshal(pluginsdk.AdaptResponseInput{RequestType: pluginsdk.RequestChat, Provider: "cohere", Model: "command-r-plus",
		Status: 200, Body: up, Context: "c1|0|0|0||command-r-plus"})
	return req, resp
}

// BenchmarkNative is adapt_request + adapt_response on the Go code.
func BenchmarkNative(b *testing.B) {
	req, resp := benchInputs(b)
	a := New()
	b.SetBytes(int64(len(req) + len(resp)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.AdaptRequest(req); err != nil {
			b.Fatal(err)
		}
		if _, err := a.AdaptResponse(resp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWasmTrusted is the same pair through the real wazero runtime,
// trusted (no termination checks), as the gateway runs first-party adapters.
func BenchmarkWasmTrusted(b *testing.B) {
	req, resp := benchInputs(b)
	p := plugintest.LoadWasm(b, plugintest.BuildWasm(b, "."), plugintest.Options{Name: "adapter-cohere", Trusted: true})
	ctx := context.Background()
	b.SetBytes(int64(len(req) + len(resp)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.AdaptRequest(ctx, req); err != nil {
			b.Fatal(err)
		}
		if _, err := p.AdaptResponse(ctx, resp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNativeStreamEvent maps one content-delta event.
func BenchmarkNativeStreamEvent(b *testing.B) {
	a := New()
	st := []byte("c1|2|0|1700000000|c0hf4ke0-0000-4000-8000-000000000001|command-r-plus")
	batch := []byte(`[{"event":"content-delta","data":{"delta":{"message":{"content":{"text":" from the model"}}},"index":0,"type":"content-delta"}}]`)
	for b.Loop() {
		if _, err := a.AdaptStream(pluginsdk.StreamInput{State: st, Batch: batch}); err != nil {
			b.Fatal(err)
		}
	}
}
