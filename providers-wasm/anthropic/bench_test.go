package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// benchRequest is a ~2 KB chat request (system, a few turns, a tool) and
// benchResponse the matching Messages answer: one adapt_request plus one
// adapt_response is the adapter's work for a non-streamed call.
func benchInputs(b *testing.B) (req, resp []byte) {
	req, resp, n := benchPayloads()
	b.ReportMetric(float64(n), "req-bytes")
	return req, resp
}

// benchPayloads builds the benchmark's adapt_request and adapt_response
// inputs; n is the size of the chat body.
func benchPayloads() (req, resp []byte, n int) {
	body := map[string]any{
		"model": "claude-sonnet-4-20250514", "max_tokens": 512, "temperature": 0.3,
		"messages": []any{
			map[string]any{"role": "system", "content": strings.Repeat("You are a careful assistant. ", 12)},
			map[string]any{"role": "user", "content": strings.Repeat("Tell me about the weather in Paris. ", 10)},
			map[string]any{"role": "assistant", "content": "Let me check.", "tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
				"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris","unit":"celsius"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": strings.Repeat(`{"temp":21,"sky":"clear"} `, 8)},
			map[string]any{"role": "user", "content": strings.Repeat("And tomorrow? ", 20)},
		},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "description": "Current weather",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string"}}}}}},
	}
	bb, _ := json.Marshal(body)
	req, _ = json.Marshal(pluginsdk.AdaptRequestInput{RequestType: "chat.completion", Provider: "anthropic", Model: "claude-sonnet-4-20250514", Body: bb})
	msg := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-20250514","content":[{"type":"text","text":"` +
		strings.Repeat("Tomorrow will be sunny. ", 15) + `"}],"stop_reason":"end_turn","stop_sequence":null,` +
		`"usage":{"input_tokens":500,"output_tokens":90,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`
	resp, _ = json.Marshal(pluginsdk.AdaptResponseInput{RequestType: "chat.completion", Status: 200, Body: json.RawMessage(msg)})
	return req, resp, len(bb)
}

func BenchmarkRequestResponseNative(b *testing.B) {
	benchNative(b, New())
}

// The gateway runs its bundled adapters with {"validate_input": false}
// (see host/plugins/registry): the *Unvalidated benchmarks measure that
// configuration, the path a translated request actually takes.
func BenchmarkRequestResponseNativeUnvalidated(b *testing.B) {
	a := New()
	a.skipValidation = true
	benchNative(b, a)
}

func benchNative(b *testing.B, a *Adapter) {
	req, resp := benchInputs(b)
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

// Under wazero as a trusted module (no termination checks), the way a
// first-party adapter is installed.
func BenchmarkRequestResponseWasm(b *testing.B) {
	benchWasm(b, nil)
}

func BenchmarkRequestResponseWasmUnvalidated(b *testing.B) {
	benchWasm(b, json.RawMessage(unvalidated))
}

// unvalidated is the config the gateway gives its bundled adapters.
const unvalidated = `{"validate_input":false}`

func benchWasm(b *testing.B, config any) {
	req, resp := benchInputs(b)
	p := plugintest.LoadWasm(b, plugintest.BuildWasm(b, "."), plugintest.Options{Name: "adapter-anthropic", Trusted: true, Config: config})
	ctx := context.Background()
	if !p.Trusted() {
		b.Fatal("module not trusted")
	}
	for b.Loop() {
		if _, err := p.AdaptRequest(ctx, req); err != nil {
			b.Fatal(err)
		}
		if _, err := p.AdaptResponse(ctx, resp); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(p.Recycled()), "recycled")
}

func BenchmarkStreamEventWasm(b *testing.B) {
	benchStreamWasm(b, nil)
}

func BenchmarkStreamEventWasmUnvalidated(b *testing.B) {
	benchStreamWasm(b, json.RawMessage(unvalidated))
}

func benchStreamWasm(b *testing.B, config any) {
	p := plugintest.LoadWasm(b, plugintest.BuildWasm(b, "."), plugintest.Options{Name: "adapter-anthropic", Trusted: true, Config: config})
	events := readSSE(b, readTestdata(b, "fake_stream_text.sse"))
	batches := splitBatches(b, events, 1)
	st, _ := p.AdaptStream(context.Background(), pluginsdk.StreamInput{Batch: batches[0]})
	delta := batches[3] // one text_delta
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.AdaptStream(context.Background(), pluginsdk.StreamInput{State: st.State, Batch: delta}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStreamEventNative(b *testing.B) {
	benchStreamNative(b, New())
}

func BenchmarkStreamEventNativeUnvalidated(b *testing.B) {
	a := New()
	a.skipValidation = true
	benchStreamNative(b, a)
}

func benchStreamNative(b *testing.B, a *Adapter) {
	events := readSSE(b, readTestdata(b, "fake_stream_text.sse"))
	batches := splitBatches(b, events, 1)
	st, _ := a.AdaptStream(pluginsdk.StreamInput{Batch: batches[0]})
	delta := batches[3]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.AdaptStream(pluginsdk.StreamInput{State: st.State, Batch: delta}); err != nil {
			b.Fatal(err)
		}
	}
}
