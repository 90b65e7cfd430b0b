package main_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/eventstream"
	"github.com/wasmgate/gateway/host/fakeupstream"
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

// TestBedrockInvokeFailures covers InvokeModel streams' failure paths: an
// exception before any content falls back (here from the passed-through
// Bedrock stream to a translated OpenAI one), a mid-stream exception of a
// passed-through stream reaches the client as the upstream sent it, and
// passed-through requests are metered with the upstream's counts.
func TestBedrockInvokeFailures(t *testing.T) {
	cfg, set := fakeProviderSet(t)
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)
	br := set.Servers[fakeupstream.Bedrock]
	url := p.base + "/bedrock/model/anthropic.claude-3-haiku-20240307-v1:0/invoke-with-response-stream"
	body := `{"anthropic_version":"bedrock-2023-05-31","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`

	streamEvents := func(t *testing.T, fallbacks string) (events []string, text string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if fallbacks != "" {
			req.Header.Set("x-gw-fallbacks", fallbacks)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/vnd.amazon.eventstream" {
			raw, _ := io.ReadAll(resp.Body)
			t.Fatalf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
		}
		dec := eventstream.NewDecoder(resp.Body)
		for {
			m, err := dec.Decode()
			if err != nil {
				break
			}
			if exc := m.Header(eventstream.HeaderExceptionType); exc != "" {
				events = append(events, "exception:"+exc)
				continue
			}
			var ch struct{ Bytes []byte }
			if json.Unmarshal(m.Payload, &ch) != nil {
				t.Fatalf("chunk payload %s", m.Payload)
			}
			var ev struct {
				Type  string
				Delta struct{ Text string }
			}
			_ = json.Unmarshal(ch.Bytes, &ev)
			events = append(events, ev.Type)
			text += ev.Delta.Text
		}
		return events, text
	}

	t.Run("exception before content falls back", func(t *testing.T) {
		br.SetStreamError(fakeupstream.StreamErrorBeforeContent)
		defer br.SetStreamError(fakeupstream.StreamErrorNone)
		evs, text := streamEvents(t, "openai/gpt-4o-mini")
		if text != "hello from openai" || evs[0] != "message_start" || evs[len(evs)-1] != "message_stop" {
			t.Fatalf("events %v text %q", evs, text)
		}
	})
	t.Run("exception before content without fallback", func(t *testing.T) {
		br.SetStreamError(fakeupstream.StreamErrorBeforeContent)
		defer br.SetStreamError(fakeupstream.StreamErrorNone)
		resp, raw := post(t, url, body)
		if resp.StatusCode != 429 || resp.Header.Get("x-amzn-ErrorType") != "ThrottlingException" {
			t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, raw)
		}
	})
	t.Run("mid-stream exception passed as sent", func(t *testing.T) {
		br.SetStreamError(fakeupstream.StreamErrorMidStream)
		defer br.SetStreamError(fakeupstream.StreamErrorNone)
		evs, text := streamEvents(t, "")
		n := 0
		for _, e := range evs {
			if strings.HasPrefix(e, "exception:") {
				n++
			}
		}
		if text != "hello" || n != 1 || evs[len(evs)-1] != "exception:throttlingException" {
			t.Fatalf("events %v text %q", evs, text)
		}
	})
	t.Run("metered with the upstream's counts", func(t *testing.T) {
		resp, raw := post(t, strings.TrimSuffix(url, "-with-response-stream"), body)
		if resp.StatusCode != 200 || !strings.Contains(string(raw), `"msg_bdrk_fake0001"`) {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
		want := int64((len(body) + 3) / 4) // the fake's count of the body it got
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, logs := p.do("GET", "/api/logs?limit=50", nil)
			var l struct {
				Logs []struct {
					Route        string `json:"route"`
					Provider     string `json:"provider"`
					PromptTokens int64  `json:"prompt_tokens"`
				} `json:"logs"`
			}
			_ = json.Unmarshal(logs, &l)
			found := false
			for _, r := range l.Logs {
				if strings.HasSuffix(r.Route, "/invoke") && r.Provider == "bedrock" && r.PromptTokens == want {
					found = true
				}
			}
			if found {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no invoke log with %d prompt tokens: %s", want, logs)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}
