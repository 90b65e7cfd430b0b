package main_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestDropInRejectionsAreLogged: a drop-in request refused before it
// reaches the pipeline (a body its native decoder cannot read, a bad
// fallback header) is answered in the caller's wire and recorded in the
// request log like every other request.
func TestDropInRejectionsAreLogged(t *testing.T) {
	cfg := fakeProviders(t)
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)
	cases := []struct {
		name, path, header, body, model, native string
	}{
		{"anthropic, truncated body", "/anthropic/v1/messages", "", `{"model":"claude-3-5-haiku","messages":[`, "", `"type":"error"`},
		{"genai, not JSON", "/genai/v1beta/models/gemini-2.0-flash:generateContent", "", `{contents`, "gemini-2.0-flash", `"status":"INVALID_ARGUMENT"`},
		{"cohere embed, no texts", "/cohere/v2/embed", "", `{"model":"embed-english-v3.0"}`, "embed-english-v3.0", `"message"`},
		{"bedrock invoke, not an object", "/bedrock/model/anthropic.claude-3-haiku-20240307-v1:0/invoke", "", `[]`, "anthropic.claude-3-haiku-20240307-v1:0", `"message"`},
		{"cohere chat, bad fallback header", "/cohere/v2/chat", " , ", `{"model":"command-r","messages":[{"role":"user","content":"hi"}]}`, "command-r", `"message"`},
	}
	for _, tc := range cases {
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
		if resp.StatusCode != 400 || !strings.Contains(string(raw), tc.native) {
			t.Errorf("%s: %d %s, want a 400 in the native shape (%s)", tc.name, resp.StatusCode, raw, tc.native)
		}
	}
	type record struct {
		Route      string `json:"route"`
		Model      string `json:"model"`
		StatusCode int    `json:"status_code"`
		Status     string `json:"status"`
	}
	var logs []record
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, raw := p.do("GET", "/api/logs?limit=50&status=error", nil)
		var out struct{ Logs []record }
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%v: %s", err, raw)
		}
		if logs = out.Logs; len(logs) >= len(cases) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, tc := range cases {
		found := false
		for _, r := range logs {
			if r.Route == tc.path && r.StatusCode == 400 && (tc.model == "" || r.Model == tc.model) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no 400 record for %s (model %q) in %+v", tc.name, tc.path, tc.model, logs)
		}
	}
}
