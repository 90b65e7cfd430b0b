package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// BenchmarkInvoke measures the InvokeModel passthrough hooks on inputs the
// size of BenchmarkNative's (a ~2 KB request, a ~2.6 KB answer, one
// stream event), natively and under wazero: the adapter's whole share of
// a passed-through InvokeModel call.
func BenchmarkInvoke(b *testing.B) {
	text := strings.Repeat("The quarterly report shows steady revenue and lower churn; risks are hiring and scope. ", 20)
	native, _ := json.Marshal(map[string]any{"anthropic_version": "bedrock-2023-05-31", "max_tokens": 512,
		"messages": []any{map[string]any{"role": "user", "content": text}}})
	req, _ := json.Marshal(pluginsdk.AdaptRequestInput{RequestType: RequestInvoke, Provider: "bedrock",
		Model: "anthropic.claude-3-5-sonnet-20240620-v1:0", KeyConfig: []byte(`{"region":"us-east-1"}`),
		Body: json.RawMessage(`{"model":"bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0","stream":false,"body":` + string(native) + `}`)})
	answer, _ := json.Marshal(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
		"content": []any{map[string]any{"type": "text", "text": text}}, "stop_reason": "end_turn",
		"usage": map[string]any{"input_tokens": 512, "output_tokens": 380}})
	resp, _ := json.Marshal(pluginsdk.AdaptResponseInput{RequestType: RequestInvoke, Provider: "bedrock", Status: 200,
		Headers: map[string]string{"x-amzn-bedrock-input-token-count": "512", "x-amzn-bedrock-output-token-count": "380"}, Body: answer})
	evJSON := `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" steady revenue"}}`
	ev := []byte(`[{"event":"chunk","data":{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(evJSON)) + `","p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"}}]`)
	state := []byte(`{"invoke":true,"in":512,"out":3}`)

	a := New()
	b.Run("native/adapt_request", func(b *testing.B) {
		for b.Loop() {
			if _, err := a.AdaptRequest(req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("native/adapt_response", func(b *testing.B) {
		for b.Loop() {
			if _, err := a.AdaptResponse(resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("native/stream_event", func(b *testing.B) {
		for b.Loop() {
			if _, err := a.AdaptStream(pluginsdk.StreamInput{State: state, Batch: ev}); err != nil {
				b.Fatal(err)
			}
		}
	})
	p := plugintest.LoadWasm(b, plugintest.BuildWasm(b, "."), plugintest.Options{Name: "adapter-bedrock", Trusted: true})
	ctx := context.Background()
	b.Run("wasm/adapt_request", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.AdaptRequest(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wasm/adapt_response", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.AdaptResponse(ctx, resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wasm/stream_event", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.AdaptStream(ctx, pluginsdk.StreamInput{State: state, Batch: ev}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
