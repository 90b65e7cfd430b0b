package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/fakeupstream"
)

// familyModels is one model per wire family, each served by its wasm
// adapter against a fake upstream speaking the family's exact wire.
var familyModels = []string{
	"openai/gpt-4o-mini",
	"anthropic/claude-3-5-haiku",
	"gemini/gemini-2.0-flash",
	"bedrock/anthropic.claude-3-haiku-20240307-v1:0",
	"cohere/command-r-plus",
}

const toolBody = `,"tools":[{"type":"function","function":{"name":"lookup","description":"look up","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}]`

func post(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, raw
}

type streamResult struct {
	text, args  string
	totalTokens int
	done        bool
	errEvent    string
}

func readStream(t *testing.T, raw []byte) streamResult {
	t.Helper()
	var r streamResult
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if d == "[DONE]" {
			r.done = true
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Function struct{ Arguments string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				TotalTokens int `json:"total_tokens"`
			} `json:"usage"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(d), &ch); err != nil {
			t.Fatalf("chunk %q: %v", d, err)
		}
		if len(ch.Error) > 0 {
			r.errEvent = string(ch.Error)
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != nil {
				r.text += *c.Delta.Content
			}
			for _, tc := range c.Delta.ToolCalls {
				r.args += tc.Function.Arguments
			}
		}
		if ch.Usage != nil && ch.Usage.TotalTokens > 0 {
			r.totalTokens = ch.Usage.TotalTokens
		}
	}
	return r
}

// TestEveryFamilyThroughTheBinary sends chat requests, plain and streamed
// with a tool, to each wire family through the real binary and its wasm
// adapters: text, tool-call arguments and token counts must come through.
func TestEveryFamilyThroughTheBinary(t *testing.T) {
	cfg := fakeProviders(t)
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)
	for _, model := range familyModels {
		t.Run(model, func(t *testing.T) {
			resp, raw := post(t, p.base+"/v1/chat/completions",
				fmt.Sprintf(`{"model":%q,"max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`, model))
			if resp.StatusCode != 200 {
				t.Fatalf("chat: %d %s", resp.StatusCode, raw)
			}
			var out struct {
				Choices []struct {
					Message struct{ Content string } `json:"message"`
				} `json:"choices"`
				Usage struct {
					TotalTokens int `json:"total_tokens"`
				} `json:"usage"`
				ExtraFields struct {
					Provider string `json:"provider"`
				} `json:"extra_fields"`
			}
			if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) == 0 {
				t.Fatalf("chat answer %s: %v", raw, err)
			}
			if !strings.Contains(out.Choices[0].Message.Content, "hello") || out.Usage.TotalTokens == 0 ||
				out.ExtraFields.Provider != strings.Split(model, "/")[0] {
				t.Fatalf("chat answer %s", raw)
			}

			resp, raw = post(t, p.base+"/v1/chat/completions",
				fmt.Sprintf(`{"model":%q,"max_tokens":100,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]%s}`, model, toolBody))
			if resp.StatusCode != 200 {
				t.Fatalf("stream: %d %s", resp.StatusCode, raw)
			}
			sr := readStream(t, raw)
			if sr.args != `{"echo":"hello"}` || sr.totalTokens == 0 || !sr.done || sr.errEvent != "" {
				t.Fatalf("stream: %+v\n%s", sr, raw)
			}
		})
	}
}

// TestTranslatedFailuresThroughTheBinary covers the failure paths on a
// translated family: retry after 429, fallback to another provider, an
// error before content and one mid-stream, a disconnecting client.
func TestTranslatedFailuresThroughTheBinary(t *testing.T) {
	cfg, set := fakeProviderSet(t)
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)
	anth := set.Servers[fakeupstream.Anthropic]
	chatBody := `{"model":"anthropic/claude-3-5-haiku","max_tokens":50,"messages":[{"role":"user","content":"hi"}]%s}`

	t.Run("retry after 429", func(t *testing.T) {
		before := anth.Count()
		anth.FailNext(1, 429, "0")
		resp, raw := post(t, p.base+"/v1/chat/completions", fmt.Sprintf(chatBody, ""))
		if resp.StatusCode != 200 || anth.Count()-before != 2 {
			t.Fatalf("%d after %d upstream calls: %s", resp.StatusCode, anth.Count()-before, raw)
		}
	})
	t.Run("fallback", func(t *testing.T) {
		anth.FailNext(10, 529, "")
		defer anth.FailNext(0, 0, "")
		resp, raw := post(t, p.base+"/v1/chat/completions", fmt.Sprintf(chatBody, `,"fallbacks":["openai/gpt-4o-mini"]`))
		if resp.StatusCode != 200 || !strings.Contains(string(raw), `"is_fallback":true`) {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
	})
	// An error before content falls back, whether it is the stream's first
	// event or follows message_start (which the adapter turns into no
	// chunk, or a role-only one: neither is content).
	for name, mode := range map[string]fakeupstream.StreamError{
		"error before content falls back":                       fakeupstream.StreamErrorBeforeContent,
		"error after message_start, before content, falls back": fakeupstream.StreamErrorAfterStart,
	} {
		t.Run(name, func(t *testing.T) {
			anth.SetStreamError(mode)
			defer anth.SetStreamError(fakeupstream.StreamErrorNone)
			resp, raw := post(t, p.base+"/v1/chat/completions", fmt.Sprintf(chatBody, `,"stream":true,"fallbacks":["openai/gpt-4o-mini"]`))
			sr := readStream(t, raw)
			if resp.StatusCode != 200 || !strings.Contains(sr.text, "hello from openai") || sr.errEvent != "" {
				t.Fatalf("%d %+v %s", resp.StatusCode, sr, raw)
			}
		})
	}
	t.Run("mid-stream error reaches the client", func(t *testing.T) {
		anth.SetStreamError(fakeupstream.StreamErrorMidStream)
		defer anth.SetStreamError(fakeupstream.StreamErrorNone)
		resp, raw := post(t, p.base+"/v1/chat/completions", fmt.Sprintf(chatBody, `,"stream":true`))
		sr := readStream(t, raw)
		if resp.StatusCode != 200 || sr.text == "" || sr.errEvent == "" {
			t.Fatalf("%d %+v %s", resp.StatusCode, sr, raw)
		}
	})
	t.Run("client disconnect cancels upstream", func(t *testing.T) {
		anth.SetChunkDelay(300 * time.Millisecond)
		defer anth.SetChunkDelay(0)
		before := anth.Cancelled()
		resp, err := http.Post(p.base+"/v1/chat/completions", "application/json", strings.NewReader(fmt.Sprintf(chatBody, `,"stream":true`)))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16)
		_, _ = resp.Body.Read(buf)
		resp.Body.Close()
		if !anth.WaitCancelled(before+1, 5*time.Second) {
			t.Fatal("the upstream call was not cancelled")
		}
	})
	t.Run("malformed upstream bytes are a 502", func(t *testing.T) {
		// An upstream that answers 200 with bytes no provider would send,
		// behind a passthrough family (mistral) and a translated one (azure).
		bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.RawQuery, "stream") || bytes.Contains(readAll(r.Body), []byte(`"stream":true`)) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "data: {broken\n\n")
				return
			}
			_, _ = io.WriteString(w, "<<< this is not JSON")
		}))
		defer bad.Close()
		for _, prov := range []map[string]any{
			{"name": "mistral", "network_config": map[string]any{"base_url": bad.URL + "/v1"}},
			{"name": "azure"},
		} {
			if code, body := p.do("POST", "/api/providers", prov); code != 201 {
				t.Fatalf("provider: %d %s", code, body)
			}
		}
		p.do("POST", "/api/providers/mistral/keys", map[string]any{"name": "k", "value": "sk-x"})
		p.do("POST", "/api/providers/azure/keys", map[string]any{"name": "k", "value": "sk-x",
			"azure_key_config": map[string]any{"endpoint": bad.URL, "api_version": "2024-10-21"}})
		for _, model := range []string{"mistral/mistral-small", "azure/gpt-4o"} {
			for _, stream := range []bool{false, true} {
				resp, raw := post(t, p.base+"/v1/chat/completions",
					fmt.Sprintf(`{"model":%q,"stream":%t,"messages":[{"role":"user","content":"hi"}]}`, model, stream))
				if stream && resp.StatusCode == 200 {
					// A stream that breaks after the headers ends with an error event.
					if sr := readStream(t, raw); sr.errEvent == "" {
						t.Fatalf("%s stream: no error event: %s", model, raw)
					}
					continue
				}
				if resp.StatusCode != 502 || !strings.Contains(string(raw), `"event_id"`) {
					t.Fatalf("%s stream=%t: %d %s", model, stream, resp.StatusCode, raw)
				}
			}
		}
		// The gateway is still serving.
		if resp, _ := post(t, p.base+"/v1/chat/completions", fmt.Sprintf(chatBody, "")); resp.StatusCode != 200 {
			t.Fatalf("gateway unhealthy after malformed upstreams: %d", resp.StatusCode)
		}
	})
}

func readAll(r io.Reader) []byte {
	b, _ := io.ReadAll(r)
	return b
}

// TestRerankAndCountTokens covers the request types without an OpenAI wire:
// they reach the adapters that support them and are refused clearly elsewhere.
func TestRerankAndCountTokens(t *testing.T) {
	cfg := fakeProviders(t)
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)
	resp, raw := post(t, p.base+"/v1/rerank", `{"model":"cohere/rerank-v3.5","query":"gateway","documents":["a gateway routes requests","bananas"],"top_n":2}`)
	if resp.StatusCode != 200 || !strings.Contains(string(raw), `"relevance_score"`) {
		t.Fatalf("rerank: %d %s", resp.StatusCode, raw)
	}
	resp, raw = post(t, p.base+"/v1/count_tokens", `{"model":"anthropic/claude-3-5-haiku","messages":[{"role":"user","content":"hello there"}]}`)
	if resp.StatusCode != 200 || !strings.Contains(string(raw), `"input_tokens"`) {
		t.Fatalf("count tokens: %d %s", resp.StatusCode, raw)
	}
	resp, raw = post(t, p.base+"/v1/rerank", `{"model":"openai/gpt-4o-mini","query":"q","documents":["d"]}`)
	if resp.StatusCode != 400 || !strings.Contains(string(raw), "unsupported_request_type") {
		t.Fatalf("rerank on openai: %d %s", resp.StatusCode, raw)
	}
	// Plugin call statistics are exported.
	req, _ := http.NewRequest("GET", p.base+"/metrics", nil)
	req.Header.Set("X-Gateway-Setup-Token", setupToken)
	mresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer mresp.Body.Close()
	body, _ := io.ReadAll(mresp.Body)
	if !strings.Contains(string(body), `wasmgate_plugin_calls_total{kind="provider",plugin="adapter-cohere",runtime="wasm"}`) {
		t.Fatalf("plugin metrics missing:\n%.3000s", body)
	}
	// The call-time summary carries the time spent, not only quantiles.
	sum := regexp.MustCompile(`(?m)^wasmgate_plugin_call_duration_seconds_sum\{kind="provider",plugin="adapter-cohere",runtime="wasm"\} (\S+)$`).FindSubmatch(body)
	if sum == nil {
		t.Fatalf("no call-time sum for adapter-cohere:\n%.3000s", body)
	}
	if v, err := strconv.ParseFloat(string(sum[1]), 64); err != nil || v <= 0 {
		t.Fatalf("adapter-cohere call-time sum %s, want the time its calls took", sum[1])
	}
}

// TestIdleAdapterUnloadsAndRestartsThroughTheBinary: with a short
// plugin_idle_unload, the anthropic adapter unloads after a translated
// request and the next request restarts it and succeeds, streamed too.
func TestIdleAdapterUnloadsAndRestartsThroughTheBinary(t *testing.T) {
	cfg, _ := fakeProviderSet(t)
	p := start(t, t.TempDir(), t.TempDir(), []string{"GATEWAY_PLUGIN_IDLE_UNLOAD=300ms"}, "--config", cfg)
	chat := func(stream bool) {
		t.Helper()
		body := `{"model":"anthropic/claude-3-5-haiku","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
		if stream {
			body = `{"model":"anthropic/claude-3-5-haiku","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
		}
		resp, raw := post(t, p.base+"/v1/chat/completions", body)
		if resp.StatusCode != 200 {
			t.Fatalf("chat (stream %v): %d %s", stream, resp.StatusCode, raw)
		}
		if stream {
			if sr := readStream(t, raw); !sr.done || sr.errEvent != "" {
				t.Fatalf("stream after restart: %+v\n%s", sr, raw)
			}
		}
	}
	waitLog := func(what string, n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		count := func() int {
			c := 0
			for _, line := range strings.Split(p.stderr.String(), "\n") {
				if strings.Contains(line, what) && strings.Contains(line, "plugin=adapter-anthropic") {
					c++
				}
			}
			return c
		}
		for count() < n {
			if time.Now().After(deadline) {
				t.Fatalf("log never showed %q for adapter-anthropic %d times:\n%s", what, n, p.stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// instances reads the adapter's instance count from /metrics (and
	// checks /api/plugins agrees).
	instances := func() string {
		t.Helper()
		code, body := p.do("GET", "/metrics", nil)
		if code != 200 {
			t.Fatalf("GET /metrics: %d", code)
		}
		var n string
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "wasmgate_plugin_instances{") && strings.Contains(line, `plugin="adapter-anthropic"`) {
				n = line[strings.LastIndexByte(line, ' ')+1:]
			}
		}
		code, body = p.do("GET", "/api/plugins/adapter-anthropic", nil)
		if code != 200 || !strings.Contains(string(body), `"instances":`+n+`,`) {
			t.Fatalf("GET /api/plugins/adapter-anthropic: %d %s; /metrics says %q instances", code, body, n)
		}
		return n
	}
	logCount := func(what string) int {
		c := 0
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			if strings.Contains(line, what) && strings.Contains(line, "plugin=adapter-anthropic") {
				c++
			}
		}
		return c
	}
	unloads := func() int { return logCount("runtime unloaded") }
	// The adapter preloaded at start may have been unloaded already.
	chat(false)
	waitLog("runtime unloaded", unloads()+1)
	if n := instances(); n != "0" {
		t.Fatalf("unloaded adapter reports %s instances", n)
	}
	restarts := logCount("plugin runtime restarted for a call")
	before := unloads()
	chat(false)
	waitLog("plugin runtime restarted for a call", restarts+1)
	if n := instances(); n != "1" && !(n == "0" && unloads() > before) {
		t.Fatalf("restarted adapter reports %s instances", n)
	}
	waitLog("runtime unloaded", before+1)
	chat(true)
	waitLog("plugin runtime restarted for a call", restarts+2)
}
