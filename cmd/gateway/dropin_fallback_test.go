package main_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/fakeupstream"
)

// TestDropInFallbacksEveryPrefix fails the primary provider of a request
// on each drop-in prefix and checks the answer comes from a fallback of
// another family, in the caller's wire: named by the x-gw-fallbacks
// header (every prefix) or by a "fallbacks" member of the native body.
func TestDropInFallbacksEveryPrefix(t *testing.T) {
	cfg, set := fakeProviderSet(t)
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)
	cases := []struct {
		name, path, header, body string
		down                     fakeupstream.Family
		want                     []string
	}{
		{"openai header", "/openai/v1/chat/completions", "anthropic/claude-3-5-haiku",
			`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`,
			fakeupstream.OpenAI, []string{`"object":"chat.completion"`, "hello from anthropic"}},
		{"anthropic header", "/anthropic/v1/messages", "gemini/gemini-2.0-flash",
			`{"model":"claude-3-5-haiku","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`,
			fakeupstream.Anthropic, []string{`"type":"message"`, "hello from gemini"}},
		{"genai body", "/genai/v1beta/models/gemini-2.0-flash:generateContent", "",
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"fallbacks":["openai/gpt-4o-mini"]}`,
			fakeupstream.Gemini, []string{`"candidates"`, "hello from openai"}},
		{"genai header", "/genai/v1beta/models/gemini-2.0-flash:generateContent", "cohere/command-r",
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
			fakeupstream.Gemini, []string{`"candidates"`, "hello from cohere"}},
		{"cohere body", "/cohere/v2/chat", "",
			`{"model":"command-r","messages":[{"role":"user","content":"hi"}],"fallbacks":["anthropic/claude-3-5-haiku"]}`,
			fakeupstream.Cohere, []string{`"finish_reason":"COMPLETE"`, "hello from anthropic"}},
		{"bedrock converse body", "/bedrock/model/anthropic.claude-3-haiku-20240307-v1:0/converse", "",
			`{"messages":[{"role":"user","content":[{"text":"hi"}]}],"fallbacks":["openai/gpt-4o-mini"]}`,
			fakeupstream.Bedrock, []string{`"stopReason":"end_turn"`, "hello from openai"}},
		{"bedrock invoke header", "/bedrock/model/anthropic.claude-3-haiku-20240307-v1:0/invoke", "openai/gpt-4o-mini",
			`{"anthropic_version":"bedrock-2023-05-31","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`,
			fakeupstream.Bedrock, []string{`"type":"message"`, "hello from openai"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			down := set.Servers[tc.down]
			down.FailNext(100, http.StatusServiceUnavailable, "")
			defer down.FailNext(0, 0, "")
			req, _ := http.NewRequest(http.MethodPost, p.base+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			if tc.header != "" {
				req.Header.Set("x-gw-fallbacks", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, raw)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(raw), w) {
					t.Errorf("answer lacks %q: %s", w, raw)
				}
			}
		})
	}
	t.Run("bad header is a 400 naming it", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, p.base+"/cohere/v2/chat",
			strings.NewReader(`{"model":"command-r","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("x-gw-fallbacks", " , ")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(raw), "x-gw-fallbacks") {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
	})
}
