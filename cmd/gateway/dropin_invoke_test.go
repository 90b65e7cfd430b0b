package main_test

import (
	"encoding/json"
	"testing"
)

// TestBedrockInvokeNodeSDK runs the official AWS SDK's InvokeModel and
// InvokeModelWithResponseStream against /bedrock with native bodies in
// both supported shapes (Anthropic Messages on Bedrock, Amazon Nova):
// Bedrock models pass through to the fake's InvokeModel API byte for
// byte; models of other providers are translated and answered in the
// same native shape.
func TestBedrockInvokeNodeSDK(t *testing.T) {
	cfg := fakeProviders(t)
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)
	cases := []struct {
		name, model, format, from string
		passthrough               bool
	}{
		{"claude passthrough", "anthropic.claude-3-haiku-20240307-v1:0", "anthropic", "bedrock", true},
		{"nova passthrough", "amazon.nova-lite-v1:0", "nova", "bedrock", true},
		{"claude body to openai", "openai/gpt-4o-mini", "anthropic", "openai", false},
		{"nova body to anthropic", "anthropic/claude-3-5-haiku", "nova", "anthropic", false},
		{"claude body to gemini", "gemini/gemini-2.0-flash", "anthropic", "gemini", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := nodeScript(t, "bedrock-invoke.mjs", "BASE_URL="+p.base+"/bedrock", "MODEL="+tc.model, "FORMAT="+tc.format)
			t.Logf("%s", mustMarshal(out))
			want := "hello from " + tc.from
			if get(out, "invoke", "text") != want || get(out, "stream", "text") != want {
				t.Errorf("text: invoke %v, stream %v; want %q", get(out, "invoke", "text"), get(out, "stream", "text"), want)
			}
			if get(out, "invoke", "stop") != "end_turn" {
				t.Errorf("invoke: %v", out["invoke"])
			}
			if get(out, "tool", "tool") != "lookup" || get(out, "tool", "input", "echo") != "hello" || get(out, "tool", "stop") != "tool_use" {
				t.Errorf("tool use: %v", out["tool"])
			}
			if get(out, "stream", "tool") != "lookup" || get(out, "stream", "args") != `{"echo":"hello"}` || get(out, "stream", "stop") != "tool_use" {
				t.Errorf("streamed tool use: %v", out["stream"])
			}
			for _, k := range []string{"invoke", "tool", "stream"} {
				in, _ := get(out, k, "usage", "input").(float64)
				outTok, _ := get(out, k, "usage", "output").(float64)
				if in <= 0 || outTok <= 0 {
					t.Errorf("%s usage: %v", k, get(out, k, "usage"))
				}
				if tc.passthrough && in != get(out, k, "sent") {
					// The fake counts ceil(bytes/4) of the body it got:
					// equal only if the SDK's body reached it unchanged.
					t.Errorf("%s: upstream counted %v input tokens, the SDK sent a body of %v", k, in, get(out, k, "sent"))
				}
			}
			metrics := get(out, "stream", "metrics")
			if tc.passthrough {
				// Only the upstream sends invocation metrics: the stream's
				// events reached the client as sent.
				if get(out, "stream", "metrics", "inputTokenCount") != get(out, "stream", "usage", "input") {
					t.Errorf("passed-through stream lacks the upstream's metrics: %v", out["stream"])
				}
			} else if metrics != nil {
				t.Errorf("translated stream carries upstream metrics: %v", metrics)
			}
			if !tc.passthrough && tc.format == "anthropic" {
				// message_start carries the estimate, message_delta the
				// upstream's count.
				if n, _ := get(out, "stream", "usage", "deltaInput").(float64); n <= 0 {
					t.Errorf("message_delta lacks the input tokens: %v", out["stream"])
				}
			}
			if st, _ := get(out, "error", "status").(float64); st != 404 || get(out, "error", "name") != "ResourceNotFoundException" {
				t.Errorf("native error: %v", out["error"])
			}
		})
	}
}

func mustMarshal(v any) []byte { b, _ := json.Marshal(v); return b }
