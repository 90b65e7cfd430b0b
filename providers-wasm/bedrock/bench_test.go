package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// Benchmarks of the figures in the report: the shared ~2 KB chat request
// (plugintest.ChatRequest2KB) through adapt_request, a Converse answer of
// similar size through adapt_response, and one stream event, natively and
// under wazero (trusted, as first-party adapters run).

func benchInputs(b *testing.B) (req, resp, ev []byte) {
	in, err := json.Marshal(pluginsdk.AdaptRequestInput{RequestType: pluginsdk.RequestChat, Provider: "bedrock",
		Model: "anthropic.claude-3-5-sonnet-20240620-v1:0", KeyConfig: []byte(`{"region":"us-east-1"}`), Body: plugintest.ChatRequest2KB()})
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("The quarterly report shows steady revenue and lower churn; risks are hiring and scope. ", 20)
	body, _ := json.Marshal(map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"text": text}}}},
		"stopReason": "end_turn", "usage": map[string]any{"inputTokens": 512, "outputTokens": 380, "totalTokens": 892, "cacheReadInputTokens": 0},
		"metrics": map[string]any{"latencyMs": 1200},
	})
	out, err := json.Marshal(pluginsdk.AdaptResponseInput{RequestType: pluginsdk.RequestChat, Provider: "bedrock",
		Model: "anthropic.claude-3-5-sonnet-20240620-v1:0", Status: 200, Headers: map[string]string{"x-amzn-requestid": "r-1"}, Body: body})
	if err != nil {
		b.Fatal(err)
	}
	ev = []byte(`[{"event":"contentBlockDelta","data":{"contentBlockIndex":0,"delta":{"text":" steady revenue"},"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"}}]`)
	return in, out, ev
}

func BenchmarkNative(b *testing.B) {
	req, resp, ev := benchInputs(b)
	a := New()
	state := []byte(`{"id":"chatcmpl-bedrock-1","created":1,"role":true,"tools":[]}`)
	b.Run("adapt_request", func(b *testing.B) {
		b.SetBytes(int64(len(req)))
		for b.Loop() {
			if _, err := a.AdaptRequest(req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("adapt_response", func(b *testing.B) {
		for b.Loop() {
			if _, err := a.AdaptResponse(resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("request+response", func(b *testing.B) {
		for b.Loop() {
			if _, err := a.AdaptRequest(req); err != nil {
				b.Fatal(err)
			}
			if _, err := a.AdaptResponse(resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stream_event", func(b *testing.B) {
		for b.Loop() {
			if _, err := a.AdaptStream(pluginsdk.StreamInput{State: state, Batch: ev}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkWasm(b *testing.B) {
	req, resp, ev := benchInputs(b)
	p := plugintest.LoadWasm(b, plugintest.BuildWasm(b, "."), plugintest.Options{Name: "adapter-bedrock", Trusted: true})
	ctx := context.Background()
	state := []byte(`{"id":"chatcmpl-bedrock-1","created":1,"role":true,"tools":[]}`)
	b.Run("adapt_request", func(b *testing.B) {
		b.SetBytes(int64(len(req)))
		for b.Loop() {
			if _, err := p.AdaptRequest(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("adapt_response", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.AdaptResponse(ctx, resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("request+response", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.AdaptRequest(ctx, req); err != nil {
				b.Fatal(err)
			}
			if _, err := p.AdaptResponse(ctx, resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stream_event", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.AdaptStream(ctx, pluginsdk.StreamInput{State: state, Batch: ev}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
