package main_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/fakeupstream"
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
			env := []string{"BASE_URL=" + p.base + tc.prefix, "MODEL=" + tc.model, "AUTH=" + tc.auth}
			// count_tokens is served by providers that count (Anthropic, Gemini).
			counts := !strings.HasPrefix(tc.model, "openai/")
			if counts {
				env = append(env, "COUNT=1")
			}
			out := nodeScript(t, "anthropic.mjs", env...)
			if ms, _ := out["models"].([]any); len(ms) == 0 {
				t.Errorf("no models listed")
			}
			if n, _ := out["count"].(float64); counts && n <= 0 {
				t.Errorf("count_tokens: %v", out["count"])
			}
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
	// Drop-in traffic is visible: the request log keeps the ingress path,
	// metrics count by route pattern.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, logs := p.do("GET", "/api/logs?limit=200", nil)
		mcode, metrics := p.do("GET", "/metrics", nil)
		okLog := strings.Contains(string(logs), `"route":"/anthropic/v1/messages"`) && strings.Contains(string(logs), `"route":"/langchain/anthropic/v1/messages"`)
		okMetric := strings.Contains(string(metrics), `wasmgate_inference_route_requests_total{route="/anthropic/v1/messages",status="200"}`)
		if okLog && okMetric {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("route not recorded: log %v metric %v (GET /metrics: %d %.600s)\n%s", okLog, okMetric, mcode, metrics, routeLines(metrics))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestOpenAIDropInNodeSDK runs the openai npm client against /openai/v1
// (bare names are OpenAI's) and a framework prefix.
func TestOpenAIDropInNodeSDK(t *testing.T) {
	cfg := fakeProviders(t)
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)
	cases := []struct{ name, prefix, model string }{
		{"openai-bare", "/openai/v1", "gpt-4o-mini"},
		{"openai-anthropic", "/openai/v1", "anthropic/claude-3-5-haiku"},
		{"langchain-gemini", "/langchain/v1", "gemini/gemini-2.0-flash"},
		{"litellm-openai", "/litellm/v1", "openai/gpt-4o-mini"},
		{"pydanticai-anthropic", "/pydanticai/v1", "anthropic/claude-3-5-haiku"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := []string{"BASE_URL=" + p.base + tc.prefix, "MODEL=" + tc.model}
			if strings.Contains(tc.model, "gpt") {
				env = append(env, "EMBED_MODEL=text-embedding-3-small")
				if !strings.HasPrefix(tc.prefix, "/openai") {
					env[len(env)-1] = "EMBED_MODEL=openai/text-embedding-3-small"
				}
			}
			out := nodeScript(t, "openai.mjs", env...)
			for _, path := range [][]string{{"chat", "content"}, {"chatStream", "text"}, {"responses", "text"}, {"responsesStream", "text"}} {
				if s, _ := get(out, path...).(string); !strings.Contains(s, "hello") {
					t.Errorf("%v = %v", path, get(out, path...))
				}
			}
			if get(out, "chatStream", "args") != `{"echo":"hello"}` {
				t.Errorf("streamed tool arguments: %v", get(out, "chatStream", "args"))
			}
			for _, path := range [][]string{{"chat", "usage", "total_tokens"}, {"chatStream", "usage", "total_tokens"}, {"responsesStream", "usage", "total_tokens"}} {
				if n, _ := get(out, path...).(float64); n <= 0 {
					t.Errorf("%v = %v", path, get(out, path...))
				}
			}
			if strings.Contains(tc.model, "gpt") {
				if n, _ := get(out, "embeddings", "dims").(float64); n <= 0 {
					t.Errorf("embeddings: %v", out["embeddings"])
				}
			}
		})
	}
}

// TestGenAIDropInNodeSDK runs the official @google/genai client against
// /genai (and a framework prefix) with Gemini and other families' models.
func TestGenAIDropInNodeSDK(t *testing.T) {
	cfg := fakeProviders(t)
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)
	cases := []struct{ name, prefix, model string }{
		{"gemini-bare", "/genai", "gemini-2.0-flash"},
		{"anthropic", "/genai", "anthropic/claude-3-5-haiku"},
		{"openai", "/genai", "openai/gpt-4o-mini"},
		{"pydanticai-anthropic", "/pydanticai/genai", "anthropic/claude-3-5-haiku"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := []string{"BASE_URL=" + p.base + tc.prefix, "MODEL=" + tc.model}
			if tc.model == "gemini-2.0-flash" {
				env = append(env, "EMBED_MODEL=text-embedding-004", "COUNT=1")
			}
			if tc.model == "openai/gpt-4o-mini" {
				env = append(env, "EMBED_MODEL=openai/text-embedding-3-small")
			}
			out := nodeScript(t, "genai.mjs", env...)
			if len(env) > 2 {
				if get(out, "embed", "n") != 1.0 || get(out, "embed", "dims").(float64) <= 0 {
					t.Errorf("embeddings: %v", out["embed"])
				}
			}
			if ms, _ := out["models"].([]any); len(ms) == 0 {
				t.Errorf("no models listed")
			}
			if n, _ := out["count"].(float64); tc.model == "gemini-2.0-flash" && n <= 0 {
				t.Errorf("countTokens: %v", out["count"])
			}
			for _, path := range [][]string{{"generate", "text"}, {"stream", "text"}} {
				if s, _ := get(out, path...).(string); !strings.Contains(s, "hello") {
					t.Errorf("%v = %v", path, get(out, path...))
				}
			}
			calls, _ := get(out, "tool", "calls").([]any)
			if len(calls) != 1 || get(calls[0].(map[string]any), "name") != "lookup" || get(calls[0].(map[string]any), "args", "echo") != "hello" {
				t.Errorf("tool calls: %v", get(out, "tool"))
			}
			scalls, _ := get(out, "stream", "calls").([]any)
			if len(scalls) != 1 || get(scalls[0].(map[string]any), "args", "echo") != "hello" {
				t.Errorf("streamed tool calls: %v", get(out, "stream"))
			}
			for _, path := range [][]string{{"generate", "usage", "promptTokenCount"}, {"generate", "usage", "candidatesTokenCount"},
				{"tool", "usage", "totalTokenCount"}, {"stream", "usage", "promptTokenCount"}, {"stream", "usage", "candidatesTokenCount"}} {
				if n, _ := get(out, path...).(float64); n <= 0 {
					t.Errorf("%v = %v", path, get(out, path...))
				}
			}
			if st, _ := get(out, "error", "status").(float64); st != 404 {
				t.Errorf("native error: %v", out["error"])
			}
		})
	}
}

// TestCohereDropInNodeSDK runs the official cohere-ai v2 client against
// /cohere with Cohere and other families' models.
func TestCohereDropInNodeSDK(t *testing.T) {
	cfg := fakeProviders(t)
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)
	for _, model := range []string{"command-r", "anthropic/claude-3-5-haiku", "openai/gpt-4o-mini"} {
		t.Run(model, func(t *testing.T) {
			env := []string{"BASE_URL=" + p.base + "/cohere", "MODEL=" + model}
			if model == "command-r" {
				env = append(env, "EMBED_MODEL=embed-english-v3.0", "RERANK_MODEL=rerank-v3.5")
			}
			if model == "openai/gpt-4o-mini" {
				env = append(env, "EMBED_MODEL=openai/text-embedding-3-small")
			}
			out := nodeScript(t, "cohere.mjs", env...)
			if rr, _ := out["rerank"].([]any); model == "command-r" && len(rr) != 2 {
				t.Errorf("rerank: %v", out["rerank"])
			}
			if len(env) > 2 {
				if get(out, "embed", "n") != 2.0 || get(out, "embed", "dims").(float64) <= 0 {
					t.Errorf("embeddings: %v", out["embed"])
				}
			}
			for _, path := range [][]string{{"chat", "text"}, {"stream", "text"}} {
				if s, _ := get(out, path...).(string); !strings.Contains(s, "hello") {
					t.Errorf("%v = %v", path, get(out, path...))
				}
			}
			if get(out, "tool", "name") != "lookup" || get(out, "tool", "args") != `{"echo":"hello"}` || get(out, "tool", "finish") != "TOOL_CALL" {
				t.Errorf("tool call: %v", out["tool"])
			}
			if get(out, "stream", "name") != "lookup" || get(out, "stream", "args") != `{"echo":"hello"}` || get(out, "stream", "finish") != "TOOL_CALL" {
				t.Errorf("streamed tool call: %v", out["stream"])
			}
			for _, path := range [][]string{{"chat", "usage", "inputTokens"}, {"chat", "usage", "outputTokens"},
				{"stream", "usage", "inputTokens"}, {"stream", "usage", "outputTokens"}} {
				if n, _ := get(out, path...).(float64); n <= 0 {
					t.Errorf("%v = %v", path, get(out, path...))
				}
			}
			if st, _ := get(out, "error", "status").(float64); st != 404 {
				t.Errorf("native error: %v", out["error"])
			}
		})
	}
}

// TestBedrockDropInNodeSDK runs the official AWS SDK Bedrock Runtime client
// (Converse, ConverseStream with AWS event-stream framing) against
// /bedrock with Bedrock and other families' models.
func TestBedrockDropInNodeSDK(t *testing.T) {
	cfg := fakeProviders(t)
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)
	for _, model := range []string{"anthropic.claude-3-haiku-20240307-v1:0", "anthropic/claude-3-5-haiku", "openai/gpt-4o-mini"} {
		t.Run(model, func(t *testing.T) {
			out := nodeScript(t, "bedrock.mjs", "BASE_URL="+p.base+"/bedrock", "MODEL="+model)
			for _, path := range [][]string{{"converse", "text"}, {"stream", "text"}} {
				if s, _ := get(out, path...).(string); !strings.Contains(s, "hello") {
					t.Errorf("%v = %v", path, get(out, path...))
				}
			}
			if get(out, "tool", "name") != "lookup" || get(out, "tool", "input", "echo") != "hello" || get(out, "tool", "stop") != "tool_use" {
				t.Errorf("tool use: %v", out["tool"])
			}
			if get(out, "stream", "name") != "lookup" || get(out, "stream", "args") != `{"echo":"hello"}` || get(out, "stream", "stop") != "tool_use" {
				t.Errorf("streamed tool use: %v", out["stream"])
			}
			for _, path := range [][]string{{"converse", "usage", "inputTokens"}, {"converse", "usage", "outputTokens"},
				{"tool", "usage", "totalTokens"}, {"stream", "usage", "inputTokens"}, {"stream", "usage", "outputTokens"}} {
				if n, _ := get(out, path...).(float64); n <= 0 {
					t.Errorf("%v = %v", path, get(out, path...))
				}
			}
			if st, _ := get(out, "error", "status").(float64); st != 404 || get(out, "error", "name") != "ResourceNotFoundException" {
				t.Errorf("native error: %v", out["error"])
			}
		})
	}
}

// TestFrameworkClients runs the Vercel AI SDK (OpenAI chat, OpenAI
// Responses, Anthropic providers) and LangChain (ChatOpenAI, ChatAnthropic
// on /langchain) with models of several families.
func TestFrameworkClients(t *testing.T) {
	cfg := fakeProviders(t)
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)
	for _, model := range []string{"anthropic/claude-3-5-haiku", "openai/gpt-4o-mini", "gemini/gemini-2.0-flash"} {
		t.Run(model, func(t *testing.T) {
			out := nodeScript(t, "frameworks.mjs", "GATEWAY="+p.base, "MODEL="+model)
			for _, client := range []string{"vercelChat", "vercelResponses", "vercelAnthropic", "langchainOpenAI", "langchainAnthropic"} {
				for _, f := range []string{"text", "streamText"} {
					if s, _ := get(out, client, f).(string); !strings.Contains(s, "hello") {
						t.Errorf("%s %s = %v", client, f, get(out, client, f))
					}
				}
				for _, f := range []string{"args", "streamCall"} {
					if get(out, client, f) != `{"echo":"hello"}` {
						t.Errorf("%s %s = %v", client, f, get(out, client, f))
					}
				}
				if get(out, client, "streamArgs") != `{"echo":"hello"}` {
					t.Errorf("%s streamed argument deltas = %v", client, get(out, client, "streamArgs"))
				}
				for _, f := range []string{"input", "output", "streamInput", "streamOutput"} {
					if n, _ := get(out, client, f).(float64); n <= 0 {
						t.Errorf("%s %s = %v", client, f, get(out, client, f))
					}
				}
			}
			checkLangChainAnthropicUsage(t, p, model, out)
		})
	}
}

// checkLangChainAnthropicUsage checks the exact token counts LangChain's
// ChatAnthropic reports for a stream against what the wire carried and
// what the upstream reported (the request log keeps the upstream's
// count). ChatAnthropic takes input tokens from message_start only and
// adds message_start's and message_delta's output tokens.
func checkLangChainAnthropicUsage(t *testing.T, p *proc, model string, out map[string]any) {
	t.Helper()
	lc := func(f string) int64 { n, _ := get(out, "langchainAnthropic", f).(float64); return int64(n) }
	wire := func(f string) int64 { n, _ := get(out, "langchainAnthropicWire", f).(float64); return int64(n) }
	if lc("streamInput") != wire("startInput") || lc("streamOutput") != wire("startOutput")+wire("deltaOutput") {
		t.Errorf("LangChain reports %d in / %d out; the wire carried %v", lc("streamInput"), lc("streamOutput"), out["langchainAnthropicWire"])
	}
	// The upstream's own count, as metered.
	var real struct{ prompt, completion int64 }
	deadline := time.Now().Add(10 * time.Second)
	for real.prompt == 0 && time.Now().Before(deadline) {
		_, raw := p.do("GET", "/api/logs?limit=200", nil)
		var l struct {
			Logs []struct {
				Route            string `json:"route"`
				Model            string `json:"model"`
				Stream           bool   `json:"stream"`
				PromptTokens     int64  `json:"prompt_tokens"`
				CompletionTokens int64  `json:"completion_tokens"`
			} `json:"logs"`
		}
		_ = json.Unmarshal(raw, &l)
		for _, r := range l.Logs {
			if r.Route == "/langchain/anthropic/v1/messages" && r.Model == model && r.Stream {
				real.prompt, real.completion = r.PromptTokens, r.CompletionTokens
			}
		}
		if real.prompt == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if real.prompt == 0 {
		t.Fatalf("no logged LangChain stream for %s", model)
	}
	t.Logf("%s: LangChain %d in / %d out; wire %v; upstream %d / %d", model, lc("streamInput"), lc("streamOutput"), out["langchainAnthropicWire"], real.prompt, real.completion)
	if wire("deltaOutput") != real.completion || lc("streamOutput") != real.completion+wire("startOutput") {
		t.Errorf("output tokens: message_delta %d, LangChain %d, upstream %d", wire("deltaOutput"), lc("streamOutput"), real.completion)
	}
	if strings.HasPrefix(model, "anthropic/") {
		// Passed through: message_start carries the upstream's count.
		if lc("streamInput") != real.prompt {
			t.Errorf("LangChain input tokens %d, upstream %d", lc("streamInput"), real.prompt)
		}
		return
	}
	// Translated: message_delta carries the upstream's count (which the
	// Anthropic SDKs read), message_start the gateway's estimate, which
	// must be near it (within a factor of 2).
	if wire("deltaInput") != real.prompt {
		t.Errorf("message_delta carried %d input tokens, the upstream reported %d", wire("deltaInput"), real.prompt)
	}
	if est := lc("streamInput"); est*2 < real.prompt || est > real.prompt*2 {
		t.Errorf("LangChain input tokens %d (estimate), upstream %d", est, real.prompt)
	}
}

func routeLines(metrics []byte) string {
	var out []string
	for _, l := range strings.Split(string(metrics), "\n") {
		if strings.Contains(l, "route_requests") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestDropInFailures covers the failure paths on a drop-in route: retries,
// fallbacks named in the native body, an error before content (falling
// back from a passed-through stream to a translated one), an upstream 4xx
// in the native error shape and a mid-stream error as the wire's event.
func TestDropInFailures(t *testing.T) {
	cfg, set := fakeProviderSet(t)
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)
	anth, oai := set.Servers[fakeupstream.Anthropic], set.Servers[fakeupstream.OpenAI]
	msg := `{"model":"%s","max_tokens":50,"messages":[{"role":"user","content":"hi"}]%s}`
	url := p.base + "/anthropic/v1/messages"

	t.Run("retry after 429", func(t *testing.T) {
		anth.FailNext(1, 429, "0")
		resp, raw := post(t, url, fmt.Sprintf(msg, "claude-3-5-haiku", ""))
		if resp.StatusCode != 200 || !strings.Contains(string(raw), `"type":"message"`) {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
	})
	t.Run("fallback named in the native body", func(t *testing.T) {
		anth.FailNext(10, 529, "")
		defer anth.FailNext(0, 0, "")
		resp, raw := post(t, url, fmt.Sprintf(msg, "claude-3-5-haiku", `,"fallbacks":["openai/gpt-4o-mini"]`))
		if resp.StatusCode != 200 || !strings.Contains(string(raw), "hello from openai") || !strings.Contains(string(raw), `"type":"message"`) {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
	})
	t.Run("stream error before content falls back", func(t *testing.T) {
		anth.SetStreamError(fakeupstream.StreamErrorBeforeContent)
		defer anth.SetStreamError(fakeupstream.StreamErrorNone)
		resp, raw := post(t, url, fmt.Sprintf(msg, "claude-3-5-haiku", `,"stream":true,"fallbacks":["openai/gpt-4o-mini"]`))
		s := string(raw)
		if resp.StatusCode != 200 || !strings.Contains(s, "event: message_start") || !strings.Contains(s, `"text":" openai"`) ||
			!strings.Contains(s, "event: message_stop") || strings.Contains(s, "event: error") {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
	})
	t.Run("upstream 400 in the native error shape", func(t *testing.T) {
		anth.FailNext(1, 400, "")
		resp, raw := post(t, url, fmt.Sprintf(msg, "claude-3-5-haiku", ""))
		if resp.StatusCode != 400 || !strings.Contains(string(raw), `"type":"error"`) || !strings.Contains(string(raw), `"invalid_request_error"`) {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
	})
	for _, tc := range []struct {
		name  string
		up    *fakeupstream.Server
		model string
	}{{"mid-stream error, translated", oai, "openai/gpt-4o-mini"}, {"mid-stream error, passed through", anth, "claude-3-5-haiku"}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.up.SetStreamError(fakeupstream.StreamErrorMidStream)
			defer tc.up.SetStreamError(fakeupstream.StreamErrorNone)
			resp, raw := post(t, url, fmt.Sprintf(msg, tc.model, `,"stream":true`))
			s := string(raw)
			if resp.StatusCode != 200 || !strings.Contains(s, "text_delta") || strings.Count(s, "event: error") != 1 {
				t.Fatalf("%d %s", resp.StatusCode, raw)
			}
		})
	}
}

// TestDropInStreamErrors checks a mid-stream upstream error in each
// translated SSE wire: GenAI ends with Google's error object, Cohere with
// message-end ERROR.
func TestDropInStreamErrors(t *testing.T) {
	cfg, set := fakeProviderSet(t)
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)
	oai := set.Servers[fakeupstream.OpenAI]
	oai.SetStreamError(fakeupstream.StreamErrorMidStream)
	defer oai.SetStreamError(fakeupstream.StreamErrorNone)
	resp, raw := post(t, p.base+"/genai/v1beta/models/openai/gpt-4o-mini:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	if s := string(raw); resp.StatusCode != 200 || !strings.Contains(s, `"text":"hello"`) || !strings.Contains(s, `data: {"error":{"code":`) {
		t.Errorf("genai: %d %s", resp.StatusCode, raw)
	}
	resp, raw = post(t, p.base+"/cohere/v2/chat", `{"model":"openai/gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if s := string(raw); resp.StatusCode != 200 || !strings.Contains(s, "content-delta") || !strings.Contains(s, `"finish_reason":"ERROR"`) {
		t.Errorf("cohere: %d %s", resp.StatusCode, raw)
	}
}
