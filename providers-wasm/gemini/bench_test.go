package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// The benchmarks translate the shared 2 KB chat request
// (plugintest.ChatRequest2KB) with adapt_request and a ~1 KB
// generateContent answer with adapt_response: one chat round trip's
// adapter work, natively and under wasm (trusted, as first-party adapters
// are deployed).

func benchInputs(b *testing.B) (req, resp []byte) {
	req, err := json.Marshal(pluginsdk.AdaptRequestInput{RequestType: pluginsdk.RequestChat, Provider: "gemini",
		Model: "gemini-2.5-flash", Body: plugintest.ChatRequest2KB()})
	if err != nil {
		b.Fatal(err)
	}
	answer := strings.Repeat("The main risks are churn in the mid-market segment and the delayed release. ", 12)
	gresp := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Considering the report.","thought":true},{"text":` +
		string(jsonString(answer)) + `}]},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":540,"candidatesTokenCount":210,"totalTokenCount":790,"thoughtsTokenCount":40},` +
		`"modelVersion":"gemini-2.5-flash","responseId":"bench-1"}`
	resp, err = json.Marshal(pluginsdk.AdaptResponseInput{RequestType: pluginsdk.RequestChat, Provider: "gemini",
		Model: "gemini-2.5-flash", Status: 200, Body: json.RawMessage(gresp)})
	if err != nil {
		b.Fatal(err)
	}
	return req, resp
}

func BenchmarkRoundTrip(b *testing.B) {
	req, resp := benchInputs(b)
	b.Logf("request envelope %d B, response envelope %d B", len(req), len(resp))
	b.Run("native", func(b *testing.B) {
		a := New()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.AdaptRequest(req); err != nil {
				b.Fatal(err)
			}
			if _, err := a.AdaptResponse(resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	// json.Valid alone on both inputs: the share of the up-front check.
	b.Run("native-validate-only", func(b *testing.B) {
		for b.Loop() {
			_ = json.Valid(req)
			_ = json.Valid(resp)
		}
	})
	b.Run("wasm-trusted", func(b *testing.B) {
		p := wasmAdapter(b, true)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.AdaptRequest(ctx, req); err != nil {
				b.Fatal(err)
			}
			if _, err := p.AdaptResponse(ctx, resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wasm-trusted-novalidate", func(b *testing.B) {
		p := plugintest.LoadWasm(b, plugintest.BuildWasm(b, "."), plugintest.Options{Name: "adapter-gemini", Trusted: true,
			Config: map[string]any{"validate_input": false}})
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.AdaptRequest(ctx, req); err != nil {
				b.Fatal(err)
			}
			if _, err := p.AdaptResponse(ctx, resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("native-novalidate", func(b *testing.B) {
		a := New()
		a.validate = false
		for b.Loop() {
			if _, err := a.AdaptRequest(req); err != nil {
				b.Fatal(err)
			}
			if _, err := a.AdaptResponse(resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wasm-trusted-request-only", func(b *testing.B) {
		p := wasmAdapter(b, true)
		ctx := context.Background()
		for b.Loop() {
			if _, err := p.AdaptRequest(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStreamEvent is one SSE event mapped (the per-chunk cost).
func BenchmarkStreamEvent(b *testing.B) {
	batch := []byte(`[{"data":{"candidates":[{"content":{"parts":[{"text":" the quarterly report"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":540,"candidatesTokenCount":3,"totalTokenCount":543},"modelVersion":"gemini-2.5-flash","responseId":"bench-1"}}]`)
	state := []byte(`{"id":"chatcmpl-bench-1","created":1700000000,"model":"gemini-2.5-flash","role":1,"calls":0,"tools":0}`)
	in := pluginsdk.StreamInput{State: state, Batch: batch}
	b.Run("native", func(b *testing.B) {
		a := New()
		for b.Loop() {
			if _, err := a.AdaptStream(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wasm-trusted", func(b *testing.B) {
		p := wasmAdapter(b, true)
		ctx := context.Background()
		for b.Loop() {
			if _, err := p.AdaptStream(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	})
}
