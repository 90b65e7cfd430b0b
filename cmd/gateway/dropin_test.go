package main_test

import (
	"strings"
	"testing"
)

// TestAnthropicDropInNodeSDK points the official @anthropic-ai/sdk only at
// the gateway's /anthropic prefix (and a framework prefix) and checks
// text, tool calls and token counts, streamed and not, against Anthropic
// and against providers of other families, with both auth header styles.
func TestAnthropicDropInNodeSDK(t *testing.T) {
	cfg := fakeProviders(t)
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)
	cases := []struct{ name, prefix, model, auth string }{
		{"anthropic-bare-apikey", "/anthropic", "claude-3-5-haiku", "key"},
		{"anthropic-token", "/anthropic", "anthropic/claude-3-5-haiku", "token"},
		{"openai", "/anthropic", "openai/gpt-4o-mini", "key"},
		{"gemini", "/anthropic", "gemini/gemini-2.0-flash", "token"},
		{"langchain-openai", "/langchain/anthropic", "openai/gpt-4o-mini", "key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := nodeScript(t, "anthropic.mjs", "BASE_URL="+p.base+tc.prefix, "MODEL="+tc.model, "AUTH="+tc.auth)
			for _, path := range [][]string{{"message", "text"}, {"stream", "text"}, {"helper", "text"}} {
				if s, _ := get(out, path...).(string); !strings.Contains(s, "hello") {
					t.Errorf("%v = %v", path, get(out, path...))
				}
			}
			if get(out, "message", "role") != "assistant" || get(out, "message", "stop") != "end_turn" {
				t.Errorf("message: %v", out["message"])
			}
			if get(out, "toolMessage", "name") != "lookup" || get(out, "toolMessage", "input", "echo") != "hello" || get(out, "toolMessage", "stop") != "tool_use" {
				t.Errorf("tool message: %v", out["toolMessage"])
			}
			if get(out, "stream", "args") != `{"echo":"hello"}` || get(out, "stream", "stop") != "tool_use" {
				t.Errorf("streamed tool call: %v", out["stream"])
			}
			for _, path := range [][]string{{"message", "usage", "input_tokens"}, {"message", "usage", "output_tokens"},
				{"toolMessage", "usage", "output_tokens"}, {"stream", "input"}, {"stream", "output"},
				{"helper", "usage", "input_tokens"}, {"helper", "usage", "output_tokens"}} {
				if n, _ := get(out, path...).(float64); n <= 0 {
					t.Errorf("%v = %v", path, get(out, path...))
				}
			}
			if st, _ := get(out, "error", "status").(float64); st < 400 || get(out, "error", "type") == nil {
				t.Errorf("native error: %v", out["error"])
			}
		})
	}
}
