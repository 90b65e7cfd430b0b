package fakeupstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/eventstream"
	"github.com/wasmgate/gateway/host/upstreamauth"
)

var anthropicHdr = map[string]string{"x-api-key": "sk-ant", "anthropic-version": "2023-06-01", "content-type": "application/json"}

func TestAnthropicMessages(t *testing.T) {
	s := Start(t, Anthropic, Options{CachedTokens: 5})
	body := `{"model":"claude-x","max_tokens":100,"thinking":{"type":"enabled","budget_tokens":1024},"tools":[{"name":"lookup","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hi"}]}`
	_, _, b := do(t, s, "POST", "/v1/messages", anthropicHdr, body)
	var r struct {
		ID, Type, Role, Model string
		Content               []map[string]any
		StopReason            string `json:"stop_reason"`
		Usage                 map[string]any
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Type != "message" || r.Role != "assistant" || r.StopReason != "tool_use" || len(r.Content) != 3 {
		t.Fatalf("%s", b)
	}
	if r.Content[0]["type"] != "thinking" || r.Content[1]["text"] != "hello from anthropic" || r.Content[2]["type"] != "tool_use" || path(r.Content[2], "input", "echo") != "hello" {
		t.Fatalf("content %v", r.Content)
	}
	if num(r.Usage["cache_read_input_tokens"]) != 5 || num(r.Usage["input_tokens"]) != (len(body)+3)/4 {
		t.Fatalf("usage %v", r.Usage)
	}

	_, _, b = do(t, s, "POST", "/v1/messages", map[string]string{"Authorization": "Bearer sk-ant", "anthropic-version": "2023-06-01"},
		strings.Replace(body, `"model"`, `"stream":true,"model"`, 1))
	evs := parseSSE(t, b)
	var names []string
	blocks := map[int]string{}
	for _, e := range evs {
		m := jsonOf(t, e.Data)
		if m["type"] != e.Event {
			t.Fatalf("event %q with type %v", e.Event, m["type"])
		}
		names = append(names, e.Event)
		if e.Event == "content_block_delta" {
			d := m["delta"].(map[string]any)
			i := num(m["index"])
			switch d["type"] {
			case "text_delta":
				blocks[i] += str(d["text"])
			case "input_json_delta":
				blocks[i] += str(d["partial_json"])
			case "thinking_delta":
				blocks[i] += str(d["thinking"])
			case "signature_delta":
				if str(d["signature"]) == "" {
					t.Fatal("empty signature")
				}
			default:
				t.Fatalf("delta type %v", d["type"])
			}
		}
		if e.Event == "message_delta" && (path(m, "delta", "stop_reason") != "tool_use" || num(path(m, "usage", "output_tokens")) != 7) {
			t.Fatalf("message_delta %v", m)
		}
	}
	if names[0] != "message_start" || names[1] != "ping" || names[len(names)-1] != "message_stop" {
		t.Fatalf("events %v", names)
	}
	if blocks[0] != "Let me think." || blocks[1] != "hello from anthropic" || blocks[2] != `{"echo":"hello"}` {
		t.Fatalf("blocks %v", blocks)
	}

	status, _, b := do(t, s, "POST", "/v1/messages", map[string]string{"x-api-key": "k"}, body)
	if status != 400 || path(jsonOf(t, string(b)), "error", "type") != "invalid_request_error" {
		t.Fatalf("missing version: %d %s", status, b)
	}
	_, _, b = do(t, s, "POST", "/v1/messages/count_tokens", anthropicHdr, body)
	if num(jsonOf(t, string(b))["input_tokens"]) != (len(body)+3)/4 {
		t.Fatalf("count_tokens %s", b)
	}
	_, _, b = do(t, s, "GET", "/v1/models", anthropicHdr, "")
	if path(jsonOf(t, string(b)), "data", 0, "type") != "model" {
		t.Fatalf("models %s", b)
	}
}

func TestAnthropicErrorEvents(t *testing.T) {
	s := Start(t, Anthropic, Options{})
	for _, mode := range []StreamError{StreamErrorBeforeContent, StreamErrorMidStream} {
		h := map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01", HeaderStreamError: string(mode)}
		_, _, b := do(t, s, "POST", "/v1/messages", h, `{"model":"m","stream":true,"messages":[]}`)
		evs := parseSSE(t, b)
		last := evs[len(evs)-1]
		if last.Event != "error" || path(jsonOf(t, last.Data), "error", "type") != "overloaded_error" {
			t.Fatalf("%s: last event %+v", mode, last)
		}
		if (len(evs) > 1) != (mode == StreamErrorMidStream) {
			t.Fatalf("%s: %d events", mode, len(evs))
		}
	}
	s.FailNext(1, 529, "")
	status, _, b := do(t, s, "POST", "/v1/messages", anthropicHdr, `{"model":"m","messages":[]}`)
	if status != 529 || path(jsonOf(t, string(b)), "type") != "error" || path(jsonOf(t, string(b)), "error", "type") != "overloaded_error" {
		t.Fatalf("%d %s", status, b)
	}
}

func TestGemini(t *testing.T) {
	s := Start(t, Gemini, Options{APIKey: "g-key", BearerToken: "ya29.tok", CachedTokens: 2})
	body := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"find"}]}],"generationConfig":{"thinkingConfig":{"includeThoughts":true}}}`
	key := map[string]string{"x-goog-api-key": "g-key"}
	_, _, b := do(t, s, "POST", "/v1beta/models/gemini-2.5-flash:generateContent", key, body)
	r := jsonOf(t, string(b))
	parts := path(r, "candidates", 0, "content", "parts").([]any)
	if path(r, "candidates", 0, "content", "role") != "model" || path(r, "candidates", 0, "finishReason") != "STOP" || len(parts) != 3 {
		t.Fatalf("%s", b)
	}
	if path(parts[0], "thought") != true || path(parts[1], "text") != "hello from gemini" || path(parts[2], "functionCall", "name") != "find" || str(path(parts[2], "thoughtSignature")) == "" {
		t.Fatalf("parts %v", parts)
	}
	u := r["usageMetadata"].(map[string]any)
	if num(u["totalTokenCount"]) != num(u["promptTokenCount"])+num(u["candidatesTokenCount"])+num(u["thoughtsTokenCount"]) || num(u["thoughtsTokenCount"]) != 2 || num(u["cachedContentTokenCount"]) != 2 {
		t.Fatalf("usage %v", u)
	}

	// SSE with ?key= and CRLF framing.
	_, hdr, b := do(t, s, "POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=g-key", nil, body)
	if !strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream") || !bytes.Contains(b, []byte("\r\n\r\n")) {
		t.Fatalf("sse framing %q", b)
	}
	text, fn := "", ""
	evs := parseSSE(t, b)
	for _, e := range evs {
		for _, p := range asSlice(path(jsonOf(t, e.Data), "candidates", 0, "content", "parts")) {
			if path(p, "thought") != true {
				text += str(path(p, "text"))
			}
			fn += str(path(p, "functionCall", "name"))
		}
	}
	if text != "hello from gemini" || fn != "find" || path(jsonOf(t, evs[len(evs)-1].Data), "candidates", 0, "finishReason") != "STOP" {
		t.Fatalf("stream text %q fn %q", text, fn)
	}

	// Without alt=sse: one JSON array.
	_, _, b = do(t, s, "POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", key, `{"contents":[]}`)
	var arr []map[string]any
	if err := json.Unmarshal(b, &arr); err != nil || len(arr) != 3 {
		t.Fatalf("array stream: %v %s", err, b)
	}

	// Vertex path with bearer; API key alone is refused there.
	vp := "/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent"
	if status, _, _ := do(t, s, "POST", vp, map[string]string{"Authorization": "Bearer ya29.tok"}, body); status != 200 {
		t.Fatalf("vertex status %d", status)
	}
	status, _, b := do(t, s, "POST", vp, key, body)
	if status != 401 || path(jsonOf(t, string(b)), "error", "status") != "UNAUTHENTICATED" {
		t.Fatalf("vertex without token: %d %s", status, b)
	}
	if status, _, _ := do(t, s, "POST", "/v1beta/models/m:generateContent", map[string]string{"x-goog-api-key": "wrong"}, body); status != 400 {
		t.Fatalf("wrong key: %d", status)
	}

	_, _, b = do(t, s, "POST", "/v1beta/models/text-embedding-004:embedContent", key, `{"content":{"parts":[{"text":"a"}]},"outputDimensionality":5}`)
	if len(asSlice(path(jsonOf(t, string(b)), "embedding", "values"))) != 5 {
		t.Fatalf("embed %s", b)
	}
	_, _, b = do(t, s, "POST", "/v1beta/models/m:countTokens", key, body)
	if num(jsonOf(t, string(b))["totalTokens"]) != (len(body)+3)/4 {
		t.Fatalf("countTokens %s", b)
	}
	_, _, b = do(t, s, "POST", "/v1beta/models/m:streamGenerateContent?alt=sse", map[string]string{"x-goog-api-key": "g-key", HeaderStreamError: "mid"}, body)
	evs = parseSSE(t, b)
	if path(jsonOf(t, evs[len(evs)-1].Data), "error", "status") != "UNAVAILABLE" {
		t.Fatalf("mid-stream error %s", b)
	}
}

var awsCreds = upstreamauth.AWSCredentials{AccessKeyID: "AKIDFAKE", SecretAccessKey: "secret/fake+key", SessionToken: "sess"}

func bedrockRequest(t *testing.T, s *Server, op, body string, sign bool) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+"/model/anthropic.claude-3-haiku-20240307-v1%3A0/"+op, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if sign {
		signer, err := upstreamauth.NewBedrockSigner(awsCreds, "us-east-1")
		if err != nil {
			t.Fatal(err)
		}
		if err := signer.Apply(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestBedrockConverse(t *testing.T) {
	s := Start(t, Bedrock, Options{AWS: &awsCreds, CachedTokens: 1})
	body := `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"calc","inputSchema":{"json":{}}}}]}}`
	resp := bedrockRequest(t, s, "converse", body, true)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r := jsonOf(t, string(b))
	content := asSlice(path(r, "output", "message", "content"))
	if resp.StatusCode != 200 || r["stopReason"] != "tool_use" || path(content[0], "text") != "hello from bedrock" || path(content[1], "toolUse", "name") != "calc" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if u := r["usage"].(map[string]any); num(u["totalTokens"]) != num(u["inputTokens"])+num(u["outputTokens"]) || num(u["cacheReadInputTokens"]) != 1 || num(path(r, "metrics", "latencyMs")) == 0 {
		t.Fatalf("usage %v", r)
	}
	if got := s.LastRequest().Path; got != "/model/anthropic.claude-3-haiku-20240307-v1:0/converse" {
		t.Fatalf("recorded path %q", got)
	}

	resp = bedrockRequest(t, s, "converse-stream", body, true)
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "application/vnd.amazon.eventstream" {
		t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
	}
	dec := eventstream.NewDecoder(resp.Body)
	var names []string
	text, input := "", ""
	for {
		m, err := dec.Decode() // verifies both CRCs
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Header(":message-type") != "event" || m.Header(":content-type") != "application/json" {
			t.Fatalf("headers %+v", m.Headers)
		}
		ev := m.Header(":event-type")
		names = append(names, ev)
		p := jsonOf(t, string(m.Payload))
		if ev == "contentBlockDelta" {
			text += str(path(p, "delta", "text"))
			input += str(path(p, "delta", "toolUse", "input"))
		}
		if ev == "contentBlockStart" && path(p, "start", "toolUse", "name") != "calc" {
			t.Fatalf("tool start %v", p)
		}
		if ev == "metadata" && num(path(p, "usage", "outputTokens")) != 5 {
			t.Fatalf("metadata %v", p)
		}
	}
	want := "messageStart contentBlockDelta contentBlockDelta contentBlockDelta contentBlockStop contentBlockStart contentBlockDelta contentBlockDelta contentBlockStop messageStop metadata"
	if strings.Join(names, " ") != want || text != "hello from bedrock" || input != `{"echo":"hello"}` {
		t.Fatalf("events %v text %q input %q", names, text, input)
	}
}

func TestBedrockAuthAndExceptions(t *testing.T) {
	s := Start(t, Bedrock, Options{AWS: &awsCreds})
	resp := bedrockRequest(t, s, "converse", `{}`, false)
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("unsigned: %d", resp.StatusCode)
	}
	other := Start(t, Bedrock, Options{AWS: &upstreamauth.AWSCredentials{AccessKeyID: "AKIDFAKE", SecretAccessKey: "different"}})
	resp = bedrockRequest(t, other, "converse", `{}`, true)
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("wrong secret: %d", resp.StatusCode)
	}

	s.FailNext(1, 429, "")
	resp = bedrockRequest(t, s, "converse", `{}`, true)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || !strings.HasPrefix(resp.Header.Get("X-Amzn-ErrorType"), "ThrottlingException") || jsonOf(t, string(b))["message"] == nil {
		t.Fatalf("throttle: %d %v %s", resp.StatusCode, resp.Header, b)
	}

	for _, mode := range []StreamError{StreamErrorBeforeContent, StreamErrorMidStream} {
		s.SetStreamError(mode)
		resp = bedrockRequest(t, s, "converse-stream", `{}`, true)
		dec := eventstream.NewDecoder(resp.Body)
		var last eventstream.Message
		n := 0
		for {
			m, err := dec.Decode()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			last, n = m, n+1
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || last.Header(":message-type") != "exception" || last.Header(":exception-type") != "throttlingException" {
			t.Fatalf("%s: last frame %+v", mode, last.Headers)
		}
		if (n > 1) != (mode == StreamErrorMidStream) {
			t.Fatalf("%s: %d frames", mode, n)
		}
	}
}

func TestCohere(t *testing.T) {
	s := Start(t, Cohere, Options{})
	body := `{"model":"command-r","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"search","parameters":{}}}]}`
	_, _, b := do(t, s, "POST", "/v2/chat", bearer, body)
	r := jsonOf(t, string(b))
	if r["finish_reason"] != "TOOL_CALL" || path(r, "message", "content", 0, "type") != "text" || path(r, "message", "content", 0, "text") != "hello from cohere" ||
		path(r, "message", "tool_calls", 0, "function", "name") != "search" || num(path(r, "usage", "billed_units", "output_tokens")) != 5 || path(r, "usage", "tokens") == nil {
		t.Fatalf("%s", b)
	}
	_, _, b = do(t, s, "POST", "/v2/chat", bearer, strings.Replace(body, `"model"`, `"stream":true,"model"`, 1))
	var names []string
	text, args := "", ""
	for _, e := range parseSSE(t, b) {
		m := jsonOf(t, e.Data)
		if m["type"] != e.Event {
			t.Fatalf("event %q type %v", e.Event, m["type"])
		}
		names = append(names, e.Event)
		text += str(path(m, "delta", "message", "content", "text"))
		args += str(path(m, "delta", "message", "tool_calls", "function", "arguments"))
		if e.Event == "message-end" && (path(m, "delta", "finish_reason") != "TOOL_CALL" || path(m, "delta", "usage", "billed_units") == nil) {
			t.Fatalf("message-end %v", m)
		}
	}
	want := "message-start content-start content-delta content-delta content-delta content-end tool-call-start tool-call-delta tool-call-delta tool-call-end message-end"
	if strings.Join(names, " ") != want || text != "hello from cohere" || args != `{"echo":"hello"}` {
		t.Fatalf("events %v text %q args %q", names, text, args)
	}
	_, _, b = do(t, s, "POST", "/v2/embed", bearer, `{"model":"embed-v4.0","texts":["a","b"],"input_type":"search_document","embedding_types":["float"]}`)
	if vs := asSlice(path(jsonOf(t, string(b)), "embeddings", "float")); len(vs) != 2 || len(asSlice(vs[0])) != 8 {
		t.Fatalf("embed %s", b)
	}
	_, _, b = do(t, s, "POST", "/v2/rerank", bearer, `{"model":"rerank-v3.5","query":"cat","documents":["dog","a cat","zzz"],"top_n":2}`)
	res := asSlice(jsonOf(t, string(b))["results"])
	if len(res) != 2 || num(path(res[0], "index")) != 1 || path(res[0], "relevance_score").(float64) < path(res[1], "relevance_score").(float64) {
		t.Fatalf("rerank %s", b)
	}
}

func TestKnobs(t *testing.T) {
	s := Start(t, OpenAI, Options{})
	chat := `{"model":"m","messages":[]}`

	s.FailNext(2, 429, "3")
	for i := range 2 {
		status, hdr, _ := do(t, s, "POST", "/v1/chat/completions", bearer, chat)
		if status != 429 || hdr.Get("Retry-After") != "3" {
			t.Fatalf("attempt %d: %d %q", i, status, hdr.Get("Retry-After"))
		}
	}
	if status, _, _ := do(t, s, "POST", "/v1/chat/completions", bearer, chat); status != 200 {
		t.Fatalf("third attempt %d", status)
	}
	h := map[string]string{"Authorization": "Bearer k", HeaderFail: "500"}
	if status, _, b := do(t, s, "POST", "/v1/chat/completions", h, chat); status != 500 || path(jsonOf(t, string(b)), "error", "type") != "server_error" {
		t.Fatalf("header fail %d %s", status, b)
	}
	if s.Count() != 4 || len(s.Requests()) != 4 || s.LastRequest().Header.Get(HeaderFail) != "500" || string(s.LastRequest().Body) != chat {
		t.Fatalf("recording: count %d", s.Count())
	}

	// Hang before headers: the client's cancellation reaches the server.
	s.SetHang(HangBeforeHeaders)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	req, _ := http.NewRequestWithContext(ctx, "POST", s.URL+"/v1/chat/completions", strings.NewReader(chat))
	req.Header.Set("Authorization", "Bearer k")
	if _, err := s.Client().Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hang: %v", err)
	}
	cancel()
	if !s.WaitCancelled(1, 2*time.Second) {
		t.Fatal("server did not see the client disconnect")
	}
	s.SetHang(HangNone)

	// Hang mid-stream: the first chunk arrives, then nothing.
	ctx, cancel = context.WithCancel(context.Background())
	req, _ = http.NewRequestWithContext(ctx, "POST", s.URL+"/v1/chat/completions", strings.NewReader(`{"stream":true}`))
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set(HeaderHang, string(HangMidStream))
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	if !strings.Contains(string(buf[:n]), `"role":"assistant"`) {
		t.Fatalf("first chunk %q", buf[:n])
	}
	for s.Hanging() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	resp.Body.Close()
	if !s.WaitCancelled(2, 2*time.Second) {
		t.Fatal("mid-stream disconnect not seen")
	}

	// Per-chunk delay.
	start := time.Now()
	_, _, b := do(t, s, "POST", "/v1/chat/completions", map[string]string{"Authorization": "Bearer k", HeaderChunkDelay: "20ms"}, `{"stream":true}`)
	if el := time.Since(start); el < 100*time.Millisecond || !strings.Contains(string(b), "[DONE]") {
		t.Fatalf("delay: %v", el)
	}
	s.Reset()
	if s.Count() != 0 || len(s.Requests()) != 0 {
		t.Fatal("reset")
	}
}

func TestCloseReleasesHangingHandlers(t *testing.T) {
	s := New(OpenAI, Options{}).Start()
	s.SetHang(HangBeforeHeaders)
	done := make(chan struct{})
	go func() {
		req, _ := http.NewRequest("POST", s.URL+"/v1/chat/completions", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer k")
		if resp, err := s.Client().Do(req); err == nil {
			resp.Body.Close()
		}
		close(done)
	}()
	for s.Hanging() == 0 {
		time.Sleep(time.Millisecond)
	}
	s.Close() // must not block on the hanging handler
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("client still blocked after Close")
	}
}
