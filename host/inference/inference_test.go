package inference_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/fakeupstream"
	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/server"
)

// gateway starts a test gateway with a Go OpenAI-wire adapter and two
// OpenAI-compatible providers pointed at fake upstreams.
func gateway(t *testing.T, passthrough bool) (*testgw.Gateway, *fakeupstream.Server, *fakeupstream.Server, *openAIWire) {
	t.Helper()
	primary := fakeupstream.Start(t, fakeupstream.OpenAI, fakeupstream.Options{APIKey: "sk-primary"})
	backup := fakeupstream.Start(t, fakeupstream.OpenAI, fakeupstream.Options{APIKey: "sk-backup"})
	ad := &openAIWire{passthrough: passthrough, calls: map[string]int{}}
	g := testgw.Start(t, testgw.Options{ServerOptions: []server.Option{server.WithAdapters(source(ad))}})
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "openai",
		"network_config": map[string]any{"base_url": primary.URL + "/v1", "max_retries": 2, "retry_backoff_initial_ms": 10, "retry_backoff_max_ms": 50}})
	g.Expect(201, "POST", "/api/providers/openai/keys", map[string]any{"name": "k", "value": "sk-primary"})
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "groq",
		"network_config": map[string]any{"base_url": backup.URL + "/v1"}})
	g.Expect(201, "POST", "/api/providers/groq/keys", map[string]any{"name": "k", "value": "sk-backup",
		"aliases": map[string]string{"fast": "gpt-4o-mini"}})
	return g, primary, backup, ad
}

func chat(model string, stream bool, extra string) string {
	return fmt.Sprintf(`{"model":%q,"stream":%t,"messages":[{"role":"user","content":"hi"}]%s}`, model, stream, extra)
}

func TestChatNonStream(t *testing.T) {
	for _, pt := range []bool{true, false} {
		t.Run(fmt.Sprintf("passthrough=%t", pt), func(t *testing.T) {
			g, primary, _, ad := gateway(t, pt)
			r := g.Expect(200, "POST", "/v1/chat/completions", chat("openai/gpt-4o-mini", false, ""))
			var resp struct {
				Choices []struct {
					Message struct{ Content string }
				}
				Usage struct {
					PromptTokens int `json:"prompt_tokens"`
				}
				ExtraFields struct {
					Provider          string `json:"provider"`
					ResolvedModelUsed string `json:"resolved_model_used"`
					RoutingInfo       struct {
						IsFallback bool `json:"is_fallback"`
					} `json:"routing_info"`
					BilledUsage struct {
						PromptTokens int `json:"prompt_tokens"`
					} `json:"billed_usage"`
				} `json:"extra_fields"`
			}
			r.Decode(t, &resp)
			if len(resp.Choices) != 1 || !strings.Contains(resp.Choices[0].Message.Content, "hello") {
				t.Fatalf("response: %s", r.Body)
			}
			if resp.ExtraFields.Provider != "openai" || resp.ExtraFields.ResolvedModelUsed != "gpt-4o-mini" ||
				resp.ExtraFields.BilledUsage.PromptTokens != resp.Usage.PromptTokens || resp.Usage.PromptTokens == 0 {
				t.Fatalf("extra_fields: %s", r.Body)
			}
			last := primary.LastRequest()
			if last.Header.Get("Authorization") != "Bearer sk-primary" || !bytes.Contains(last.Body, []byte(`"model":"gpt-4o-mini"`)) {
				t.Fatalf("upstream saw %v %s", last.Header, last.Body)
			}
			if pt && ad.calls["adapt_request"] != 0 {
				t.Fatal("passthrough called the adapter")
			}
			if !pt && (ad.calls["adapt_request"] != 1 || ad.calls["adapt_response"] != 1) {
				t.Fatalf("adapter calls %v", ad.calls)
			}
		})
	}
}

func TestRetryAfter429ThenSuccess(t *testing.T) {
	g, primary, _, _ := gateway(t, true)
	primary.FailNext(2, 429, "0")
	r := g.Expect(200, "POST", "/v1/chat/completions", chat("openai/gpt-4o-mini", false, ""))
	if primary.Count() != 3 {
		t.Fatalf("upstream calls %d, want 3 (two 429s then success): %s", primary.Count(), r.Body)
	}
}

func TestFallbackToSecondProvider(t *testing.T) {
	g, primary, backup, _ := gateway(t, true)
	primary.FailNext(10, 500, "")
	r := g.Expect(200, "POST", "/v1/chat/completions", chat("openai/gpt-4o-mini", false, `,"fallbacks":["groq/fast"]`))
	m := r.Map(t)
	ef := m["extra_fields"].(map[string]any)
	ri := ef["routing_info"].(map[string]any)
	if ef["provider"] != "groq" || ri["is_fallback"] != true || ri["primary_provider"] != "openai" || ef["resolved_model_used"] != "gpt-4o-mini" {
		t.Fatalf("fallback extra_fields: %v", ef)
	}
	if primary.Count() != 3 || backup.Count() != 1 {
		t.Fatalf("calls primary=%d backup=%d", primary.Count(), backup.Count())
	}
	if bytes.Contains(backup.LastRequest().Body, []byte("fallbacks")) {
		t.Fatal("gateway-only field fallbacks reached the upstream")
	}
	// A client error is not retried on another provider.
	primary.FailNext(1, 400, "")
	before := backup.Count()
	testgw.WantEnvelope(t, g.Do("POST", "/v1/chat/completions", chat("openai/gpt-4o-mini", false, `,"fallbacks":["groq/fast"]`)), 400, "upstream_error")
	if backup.Count() != before {
		t.Fatal("a 400 from the primary was retried on the fallback")
	}
}

func TestErrorsAreEnvelopes(t *testing.T) {
	g, primary, _, _ := gateway(t, true)
	testgw.WantEnvelope(t, g.Do("POST", "/v1/chat/completions", `{"messages":[]}`), 400, "missing_field")
	testgw.WantEnvelope(t, g.Do("POST", "/v1/chat/completions", `{"model":"gpt-4o"}`), 400, "invalid_model")
	testgw.WantEnvelope(t, g.Do("POST", "/v1/chat/completions", `{"model":"nope/x"}`), 400, "unknown_provider")
	testgw.WantEnvelope(t, g.Do("POST", "/v1/chat/completions", `{"model":"mistral/x"}`), 404, "provider_not_configured")
	testgw.WantEnvelope(t, g.Do("POST", "/v1/chat/completions", `{"model":"openai/x","stream":"yes"}`), 400, "invalid_type")
	testgw.WantEnvelope(t, g.Do("POST", "/v1/chat/completions", `not json`), 400, "invalid_json")
	primary.FailNext(1, 401, "")
	m := testgw.WantEnvelope(t, g.Do("POST", "/v1/chat/completions", chat("openai/gpt-4o-mini", false, "")), 401, "upstream_error")
	if m["is_gateway_error"] != false {
		t.Fatalf("upstream error marked as gateway error: %v", m)
	}
}

// TestMalformedBodiesStopAtAdmission: a body that is not JSON is the
// client's mistake, answered 400 naming where it breaks, before any plugin
// or upstream is called: a passthrough used to forward it (spending a call
// on the key), and an adapter reported it as its own 502.
func TestMalformedBodiesStopAtAdmission(t *testing.T) {
	for _, pt := range []bool{true, false} {
		t.Run(fmt.Sprintf("passthrough=%t", pt), func(t *testing.T) {
			g, primary, _, ad := gateway(t, pt)
			for _, body := range []string{
				`{"model":"openai/gpt-4o-mini","messages":[`,
				`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}],}`,
				`{"model":"openai/gpt-4o-mini","messages":[]} trailing`,
				`{"model":"openai/gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi}]}`,
			} {
				m := testgw.WantEnvelope(t, g.Do("POST", "/v1/chat/completions", body), 400, "invalid_json")
				msg, _ := m["error"].(map[string]any)["message"].(string)
				if !strings.Contains(msg, "at byte") && !strings.Contains(msg, "end of JSON input") {
					t.Errorf("%s: message %q does not say where the body breaks", body, msg)
				}
			}
			if primary.Count() != 0 || ad.calls["adapt_request"] != 0 {
				t.Fatalf("malformed bodies reached the upstream (%d calls) or the adapter (%v)", primary.Count(), ad.calls)
			}
			g.Expect(200, "POST", "/v1/chat/completions", chat("openai/gpt-4o-mini", false, ""))
		})
	}
}

// sseEvents reads a whole SSE body into its data payloads.
func sseEvents(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

func TestChatStream(t *testing.T) {
	for _, pt := range []bool{true, false} {
		t.Run(fmt.Sprintf("passthrough=%t", pt), func(t *testing.T) {
			g, _, _, _ := gateway(t, pt)
			r := g.Expect(200, "POST", "/v1/chat/completions", chat("openai/gpt-4o-mini", true, `,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"lookup","parameters":{}}}]`))
			if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("content type %q", r.Header.Get("Content-Type"))
			}
			evs := sseEvents(t, r.Body)
			if len(evs) < 3 || evs[len(evs)-1] != "[DONE]" {
				t.Fatalf("events: %v", evs)
			}
			var args strings.Builder
			usage := false
			for _, e := range evs[:len(evs)-1] {
				var ch struct {
					Choices []struct {
						Delta struct {
							ToolCalls []struct {
								Function struct{ Arguments string }
							} `json:"tool_calls"`
						}
					}
					Usage *struct {
						TotalTokens int `json:"total_tokens"`
					}
				}
				if err := json.Unmarshal([]byte(e), &ch); err != nil {
					t.Fatalf("chunk %q: %v", e, err)
				}
				for _, c := range ch.Choices {
					for _, tc := range c.Delta.ToolCalls {
						args.WriteString(tc.Function.Arguments)
					}
				}
				if ch.Usage != nil && ch.Usage.TotalTokens > 0 {
					usage = true
				}
			}
			if args.String() != `{"echo":"hello"}` || !usage {
				t.Fatalf("tool args %q usage %v in %v", args.String(), usage, evs)
			}
		})
	}
}

// An error inside a 200 stream before any content falls back, whether it
// is the stream's first event or follows an opening without content (a
// role-only chunk), passed through or translated by an adapter that emits
// that opening as a chunk of its own.
func TestStreamErrorBeforeContentFallsBack(t *testing.T) {
	for _, pt := range []bool{true, false} {
		for _, mode := range []fakeupstream.StreamError{fakeupstream.StreamErrorBeforeContent, fakeupstream.StreamErrorAfterStart} {
			t.Run(fmt.Sprintf("passthrough=%t/%s", pt, mode), func(t *testing.T) {
				g, primary, backup, _ := gateway(t, pt)
				primary.SetStreamError(mode)
				r := g.Expect(200, "POST", "/v1/chat/completions", chat("openai/gpt-4o-mini", true, `,"fallbacks":["groq/fast"]`))
				evs := sseEvents(t, r.Body)
				if backup.Count() != 1 || len(evs) < 2 || strings.Contains(string(r.Body), "server_error") {
					t.Fatalf("no fallback on in-stream error: backup=%d %s", backup.Count(), r.Body)
				}
			})
		}
	}
}

func TestMidStreamErrorReachesClient(t *testing.T) {
	g, primary, _, _ := gateway(t, false)
	primary.SetStreamError(fakeupstream.StreamErrorMidStream)
	r := g.Expect(200, "POST", "/v1/chat/completions", chat("openai/gpt-4o-mini", true, ""))
	if !strings.Contains(string(r.Body), "hello") || !strings.Contains(string(r.Body), `"error"`) {
		t.Fatalf("mid-stream error not reported after content: %s", r.Body)
	}
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	g, primary, _, _ := gateway(t, true)
	primary.SetChunkDelay(200 * time.Millisecond)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Server.Serve(ln) }()
	req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/v1/chat/completions", strings.NewReader(chat("openai/gpt-4o-mini", true, "")))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := resp.Body.Read(buf); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	resp.Body.Close() // the client goes away mid-stream
	if !primary.WaitCancelled(1, 5*time.Second) {
		t.Fatal("upstream request was not cancelled after the client disconnected")
	}
}

func TestEmbeddingsAndModels(t *testing.T) {
	g, _, _, _ := gateway(t, true)
	r := g.Expect(200, "POST", "/v1/embeddings", `{"model":"openai/text-embedding-3-small","input":"hi","encoding_format":"base64"}`)
	if !strings.Contains(string(r.Body), `"embedding":"`) {
		t.Fatalf("base64 embedding: %.300s", r.Body)
	}
	r = g.Expect(200, "GET", "/v1/models", nil)
	for _, want := range []string{`"openai/gpt-4o-mini"`, `"groq/fast"`, `"status":"success"`} {
		if !strings.Contains(string(r.Body), want) {
			t.Fatalf("models lack %s: %s", want, r.Body)
		}
	}
}

func TestEveryRequestIsLogged(t *testing.T) {
	g, primary, _, _ := gateway(t, true)
	g.Expect(200, "POST", "/v1/chat/completions", chat("openai/gpt-4o-mini", false, ""))
	g.Expect(200, "POST", "/v1/chat/completions", chat("openai/gpt-4o-mini", true, `,"stream_options":{"include_usage":true}`))
	primary.FailNext(1, 401, "")
	g.Do("POST", "/v1/chat/completions", chat("openai/gpt-4o-mini", false, ""))
	g.Do("POST", "/v1/chat/completions", `{"model":"mistral/x"}`)
	// Requests the gateway cannot read are requests too.
	g.Do("POST", "/v1/chat/completions", `{"model":"openai/gpt-4o-mini","messages":[`)
	g.Do("POST", "/v1/chat/completions", `{"messages":[]}`)
	if err := g.Server.Logs().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Logs []struct {
			Status      string `json:"status"`
			StatusCode  int    `json:"status_code"`
			Stream      bool   `json:"stream"`
			TotalTokens int    `json:"total_tokens"`
			Provider    string `json:"provider"`
			Model       string `json:"model"`
			Error       struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
			TTFTMS float64 `json:"ttft_ms"`
		} `json:"logs"`
		TotalCount int `json:"total_count"`
	}
	g.Expect(200, "GET", "/api/logs?order=asc", nil).Decode(t, &out)
	if out.TotalCount != 6 {
		t.Fatalf("logged %d of 6 requests: %+v", out.TotalCount, out.Logs)
	}
	if r := out.Logs[4]; r.StatusCode != 400 || r.Model != "openai/gpt-4o-mini" || r.Error.Code != "invalid_json" {
		t.Fatalf("malformed-body record: %+v", r)
	}
	if r := out.Logs[5]; r.StatusCode != 400 || r.Model != "" || r.Error.Code != "missing_field" {
		t.Fatalf("missing-model record: %+v", r)
	}
	l := out.Logs
	if l[0].Status != "success" || l[0].TotalTokens == 0 || l[0].Provider != "openai" {
		t.Fatalf("non-stream record: %+v", l[0])
	}
	if !l[1].Stream || l[1].TotalTokens == 0 || l[1].TTFTMS <= 0 {
		t.Fatalf("stream record lacks usage or ttft: %+v", l[1])
	}
	if l[2].Status != "error" || l[2].StatusCode != 401 || l[3].StatusCode != 404 {
		t.Fatalf("error records: %+v %+v", l[2], l[3])
	}
}

func TestInferenceMetrics(t *testing.T) {
	g, primary, _, _ := gateway(t, true)
	primary.FailNext(1, 429, "0")
	g.Expect(200, "POST", "/v1/chat/completions", chat("openai/gpt-4o-mini", false, ""))
	body := string(g.Expect(200, "GET", "/metrics", nil).Body)
	for _, want := range []string{
		`wasmgate_inference_requests_total{model="openai/gpt-4o-mini",provider="openai",request_type="chat.completion",status="200"} 1`,
		`wasmgate_inference_retries_total{provider="openai"} 1`,
		`wasmgate_inference_tokens_total{kind="prompt",model="openai/gpt-4o-mini",provider="openai"}`,
		`wasmgate_inference_request_duration_seconds_bucket`,
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("metrics lack %s", want)
		}
	}
}

func TestResponsesAndCompletionsConvertedForChatOnlyAdapters(t *testing.T) {
	g, primary, _, ad := gateway(t, false)
	ad.onlyChat = true
	r := g.Expect(200, "POST", "/v1/responses", `{"model":"openai/gpt-4o-mini","input":"hi","instructions":"be brief"}`)
	var resp struct {
		Object string `json:"object"`
		Output []struct {
			Type    string `json:"type"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	r.Decode(t, &resp)
	if resp.Object != "response" || len(resp.Output) == 0 || !strings.Contains(resp.Output[len(resp.Output)-1].Content[0].Text, "hello") || resp.Usage.TotalTokens == 0 {
		t.Fatalf("converted response: %s", r.Body)
	}
	if last := primary.LastRequest(); last.Path != "/v1/chat/completions" || !bytes.Contains(last.Body, []byte(`"role":"system"`)) {
		t.Fatalf("upstream got %s %s", last.Path, last.Body)
	}
	r = g.Expect(200, "POST", "/v1/responses", `{"model":"openai/gpt-4o-mini","input":"hi","stream":true}`)
	body := string(r.Body)
	for _, want := range []string{"event: response.created", "event: response.output_text.delta", "event: response.completed", `"total_tokens"`} {
		if !strings.Contains(body, want) {
			t.Fatalf("converted stream lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "[DONE]") {
		t.Fatal("the Responses wire has no [DONE] terminator")
	}
	r = g.Expect(200, "POST", "/v1/completions", `{"model":"openai/gpt-4o-mini","prompt":"say hi"}`)
	if !strings.Contains(string(r.Body), `"object":"text_completion"`) || !strings.Contains(string(r.Body), "hello") {
		t.Fatalf("converted completion: %s", r.Body)
	}
	testgw.WantEnvelope(t, g.Do("POST", "/v1/responses", `{"model":"openai/gpt-4o-mini","input":"hi","previous_response_id":"resp_1"}`), 400, "")
}

func TestExtraFieldsAreValidJSON(t *testing.T) {
	g, _, _, _ := gateway(t, true)
	// A model name needing escapes must still give valid JSON.
	g.Expect(201, "POST", "/api/providers/groq/keys", map[string]any{"name": "k2", "value": "sk-backup",
		"aliases": map[string]string{`we"ird\model`: "gpt-4o-mini"}})
	r := g.Expect(200, "POST", "/v1/chat/completions", chat(`groq/we"ird\model`, false, ""))
	var m map[string]any
	r.Decode(t, &m)
	ef := m["extra_fields"].(map[string]any)
	if ef["model_requested"] != `groq/we"ird\model` || ef["billed_usage"].(map[string]any)["total_tokens"].(float64) == 0 {
		t.Fatalf("extra_fields: %v", ef)
	}
}

// TestHTTPClientSetting: network_config.http_client takes auto or
// net_http (a bad value is a 400 naming it), and streamed and plain
// requests are served either way (which client is used:
// TestTransportEntryHonoursHTTPClient).
// TestProviderURLsNeverPointAtMetadata: a base URL or key URL naming a
// link-local address (the clouds' metadata service) is refused with a 400
// naming the field; self-hosted loopback and private hosts are accepted.
func TestProviderURLsNeverPointAtMetadata(t *testing.T) {
	g, _, _, _ := gateway(t, true)
	for _, u := range []string{"http://169.254.169.254/v1", "http://[fe80::1]:8000/v1", "https://[::ffff:169.254.169.254]/v1"} {
		r := g.Do("POST", "/api/providers", map[string]any{"name": "vllm", "network_config": map[string]any{"base_url": u}})
		m := testgw.WantEnvelope(t, r, 400, "invalid_value")
		if m["error"].(map[string]any)["param"] != "network_config.base_url" {
			t.Errorf("%s: %s", u, r.Body)
		}
	}
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "vllm", "network_config": map[string]any{"base_url": "http://10.0.0.7:8000/v1"}})
	r := g.Do("POST", "/api/providers/vllm/keys", map[string]any{"name": "k", "value": "x",
		"vllm_key_config": map[string]any{"url": "http://169.254.169.254/", "model_name": "m"}})
	if r.Status != 400 || !strings.Contains(string(r.Body), "cloud-metadata") {
		t.Fatalf("key url: %d %s", r.Status, r.Body)
	}
}

// TestUpstreamErrorsNeverQuoteTheKey: an upstream that echoes the key it
// rejected must not hand it to the gateway's caller, in the message or in
// raw_response, on either upstream client.
func TestUpstreamErrorsNeverQuoteTheKey(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		errEvent := fmt.Sprintf(`data: {"error":{"message":"Incorrect API key provided: %s","code":401}}`+"\n\n", key)
		switch {
		case bytes.Contains(body, []byte(`"stream-early"`)):
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, errEvent)
			return
		case bytes.Contains(body, []byte(`"stream-mid"`)):
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`+"\n\n")
			io.WriteString(w, errEvent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error","header":%q}}`,
			key, r.Header.Get("Authorization"))
	}))
	defer up.Close()
	g, _, _, _ := gateway(t, true)
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "mistral", "network_config": map[string]any{"base_url": up.URL + "/v1"}})
	g.Expect(201, "POST", "/api/providers/mistral/keys", map[string]any{"name": "live", "value": key})
	for _, client := range []string{"auto", "net_http"} {
		g.Expect(200, "PUT", "/api/providers/mistral", map[string]any{"name": "mistral",
			"network_config": map[string]any{"base_url": up.URL + "/v1", "http_client": client}})
		for _, stream := range []bool{false, true} {
			r := g.Do("POST", "/v1/chat/completions", chat("mistral/small", stream, ""))
			if r.Status != 401 || strings.Contains(string(r.Body), key) || !strings.Contains(string(r.Body), "[redacted]") {
				t.Fatalf("%s, stream=%t: %d %s", client, stream, r.Status, r.Body)
			}
		}
		// An error event in a 200 stream: before any content it fails the
		// request; after, it is passed on to the client.
		for _, model := range []string{"mistral/stream-early", "mistral/stream-mid"} {
			r := g.Do("POST", "/v1/chat/completions", chat(model, true, ""))
			if strings.Contains(string(r.Body), key) || !strings.Contains(string(r.Body), "[redacted]") {
				t.Fatalf("%s, %s: %d %s", client, model, r.Status, r.Body)
			}
		}
	}
}

func TestHTTPClientSetting(t *testing.T) {
	g, primary, _, _ := gateway(t, true)
	r := g.Do("PUT", "/api/providers/openai", map[string]any{"name": "openai",
		"network_config": map[string]any{"base_url": primary.URL + "/v1", "http_client": "h3"}})
	if r.Status != 400 || !strings.Contains(string(r.Body), "network_config.http_client") {
		t.Fatalf("bad http_client: %d %s", r.Status, r.Body)
	}
	for _, client := range []string{"net_http", "auto"} {
		g.Expect(200, "PUT", "/api/providers/openai", map[string]any{"name": "openai",
			"network_config": map[string]any{"base_url": primary.URL + "/v1", "http_client": client}})
		for _, stream := range []bool{false, true} {
			r := g.Expect(200, "POST", "/v1/chat/completions", chat("openai/gpt-4o-mini", stream, ""))
			if !strings.Contains(string(r.Body), "hello") {
				t.Fatalf("http_client %s, stream=%v: %s", client, stream, r.Body)
			}
		}
	}
	var p struct {
		NetworkConfig struct {
			HTTPClient string `json:"http_client"`
		} `json:"network_config"`
	}
	g.Expect(200, "GET", "/api/providers/openai", nil).Decode(t, &p)
	if p.NetworkConfig.HTTPClient != "auto" {
		t.Fatalf("http_client reads back as %q", p.NetworkConfig.HTTPClient)
	}
}

// TestProviderConcurrencyAndQueue: concurrency_and_buffer_size bounds a
// provider's exchanges in flight (a stream until it ends) and the queue
// behind them; every way an exchange ends gives its slot back.
func TestProviderConcurrencyAndQueue(t *testing.T) {
	g, primary, _, _ := gateway(t, true)
	g.Expect(200, "PUT", "/api/providers/openai", map[string]any{"name": "openai",
		"network_config":              map[string]any{"base_url": primary.URL + "/v1", "default_request_timeout_in_seconds": 2},
		"concurrency_and_buffer_size": map[string]any{"concurrency": 1, "buffer_size": 1}})
	primary.SetChunkDelay(150 * time.Millisecond)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Server.Serve(ln) }()
	post := func(stream bool) (int, string) {
		resp, err := http.Post("http://"+ln.Addr().String()+"/v1/chat/completions", "application/json",
			strings.NewReader(chat("openai/gpt-4o-mini", stream, "")))
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	type answer struct {
		status int
		body   string
	}
	first, second := make(chan answer, 1), make(chan answer, 1)
	go func() { s, b := post(true); first <- answer{s, b} }() // holds the slot while it streams
	for primary.Count() < 1 {
		time.Sleep(5 * time.Millisecond)
	}
	go func() { s, b := post(false); second <- answer{s, b} }() // waits in the queue
	time.Sleep(50 * time.Millisecond)
	if s, b := post(false); s != 503 || !strings.Contains(b, "provider_queue_full") {
		t.Fatalf("third request with one in flight and one queued: %d %s", s, b)
	}
	if a := <-first; a.status != 200 || !strings.Contains(a.body, "[DONE]") {
		t.Fatalf("stream holding the slot: %d %.200s", a.status, a.body)
	}
	if a := <-second; a.status != 200 {
		t.Fatalf("queued request: %d %s", a.status, a.body)
	}

	// An upstream error, a stream the client leaves, then plain requests:
	// with one slot, any slot not given back would fail them (provider_busy
	// after the 2 s answer timeout).
	primary.FailNext(1, 500, "")
	if s, _ := post(false); s != 500 && s != 502 {
		t.Fatalf("upstream failure: %d", s)
	}
	req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/v1/chat/completions", strings.NewReader(chat("openai/gpt-4o-mini", true, "")))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = resp.Body.Read(make([]byte, 64))
	resp.Body.Close()
	if !primary.WaitCancelled(1, 5*time.Second) {
		t.Fatal("the left stream was not cancelled upstream")
	}
	for _, stream := range []bool{false, true, false} {
		if s, b := post(stream); s != 200 {
			t.Fatalf("stream=%v after the failures: %d %s", stream, s, b)
		}
	}
}
