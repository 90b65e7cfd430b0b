package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"flag"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/fakeupstream"
	"github.com/wasmgate/gateway/pluginsdk"
)

// -update rewrites the golden files (review the diff!); -record also
// re-records testdata/stream_fake.sse from host/fakeupstream.
var (
	update = flag.Bool("update", false, "rewrite golden files")
	record = flag.Bool("record", false, "re-record the SSE transcript from host/fakeupstream")
)

func init() { now = func() int64 { return 1700000000 } }

// indent normalises JSON for golden comparison; it fails on invalid JSON,
// so every golden also checks the adapter wrote valid JSON.
func indent(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("output is not valid JSON: %v\n%s", err, b)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	got = indent(t, got)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func compact(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return out.Bytes()
}

// Each testdata/request/*.json is an AdaptRequestInput; the .golden next
// to it is the upstream request spec.
func TestAdaptRequestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/request/*.json")
	if len(files) == 0 {
		t.Fatal("no request fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			in, _ := os.ReadFile(f)
			out, err := New().AdaptRequest(compact(t, in))
			if err != nil {
				t.Fatal(err)
			}
			var spec pluginsdk.UpstreamRequest
			if err := json.Unmarshal(out.Body, &spec); err != nil {
				t.Fatalf("spec: %v", err)
			}
			golden(t, strings.TrimSuffix(f, ".json")+".golden", out.Body)
		})
	}
}

// Each testdata/response/*.json is an AdaptResponseInput; the .golden is
// the unified answer.
func TestAdaptResponseGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/response/*.json")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			in, _ := os.ReadFile(f)
			out, err := New().AdaptResponse(compact(t, in))
			if err != nil {
				t.Fatal(err)
			}
			golden(t, strings.TrimSuffix(f, ".json")+".golden", out.Body)
		})
	}
}

// The chat response decodes into the SDK's unified types with tool-call
// arguments, the signature and usage intact.
func TestChatResponseFields(t *testing.T) {
	in, _ := os.ReadFile("testdata/response/chat_tool_thought.json")
	out, err := New().AdaptResponse(compact(t, in))
	if err != nil {
		t.Fatal(err)
	}
	var r pluginsdk.ChatResponse
	if err := json.Unmarshal(out.Body, &r); err != nil {
		t.Fatal(err)
	}
	m := r.Choices[0].Message
	if len(m.ToolCalls) != 2 || m.ToolCalls[0].Function.Arguments != `{"city":"Paris","days":[1,2]}` || m.ToolCalls[1].ID != "call_1" {
		t.Fatalf("tool calls: %+v", m.ToolCalls)
	}
	if string(m.ToolCalls[0].Extra["extra_content"]) != `{"google":{"thought_signature":"c2lnLTE="}}` {
		t.Fatalf("signature: %s", m.ToolCalls[0].Extra["extra_content"])
	}
	if string(m.Extra["reasoning_content"]) != `"Let me think about \"weather\"."` || r.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("reasoning/finish: %s %s", m.Extra["reasoning_content"], r.Choices[0].FinishReason)
	}
	u := r.Usage
	if u.PromptTokens != 120 || u.CompletionTokens != 55 || u.TotalTokens != 175 ||
		u.PromptTokensDetails.CachedTokens != 100 || u.CompletionTokensDetails.ReasoningTokens != 25 {
		t.Fatalf("usage: %+v", u)
	}
}

// A response with a signature, fed back as the next request's history,
// puts the signature back on the same functionCall part.
func TestThoughtSignatureRoundTrip(t *testing.T) {
	in, _ := os.ReadFile("testdata/response/chat_tool_thought.json")
	out, err := New().AdaptResponse(compact(t, in))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Choices []struct {
			Message json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(out.Body, &r); err != nil {
		t.Fatal(err)
	}
	req := `{"request_type":"chat.completion","provider":"gemini","model":"gemini-2.5-flash","body":{"messages":[` +
		`{"role":"user","content":"weather?"},` + string(r.Choices[0].Message) + `,` +
		`{"role":"tool","tool_call_id":"call_0","content":"{\"t\":1}"},{"role":"tool","tool_call_id":"call_1","content":"noon"}]}}`
	spec, err := New().AdaptRequest([]byte(req))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Body struct {
			Contents []struct {
				Role  string `json:"role"`
				Parts []struct {
					Text             string          `json:"text"`
					ThoughtSignature string          `json:"thoughtSignature"`
					FunctionCall     json.RawMessage `json:"functionCall"`
					FunctionResp     json.RawMessage `json:"functionResponse"`
				} `json:"parts"`
			} `json:"contents"`
		} `json:"body"`
	}
	if err := json.Unmarshal(spec.Body, &s); err != nil {
		t.Fatal(err)
	}
	c := s.Body.Contents
	if len(c) != 3 || c[1].Role != "model" || len(c[1].Parts) != 3 {
		t.Fatalf("contents: %s", spec.Body)
	}
	if c[1].Parts[1].ThoughtSignature != "c2lnLTE=" || string(c[1].Parts[1].FunctionCall) != `{"name":"get_weather","args":{"city":"Paris","days":[1,2]}}` {
		t.Fatalf("signature not restored: %s", spec.Body)
	}
	if c[1].Parts[2].ThoughtSignature != "" || len(c[2].Parts) != 2 ||
		string(c[2].Parts[0].FunctionResp) != `{"name":"get_weather","response":{"t":1}}` ||
		string(c[2].Parts[1].FunctionResp) != `{"name":"get_time","response":{"content":"noon"}}` {
		t.Fatalf("function responses: %s", spec.Body)
	}
}

func TestBase64EmbeddingFloats(t *testing.T) {
	in, _ := os.ReadFile("testdata/response/embed_base64.json")
	out, err := New().AdaptResponse(compact(t, in))
	if err != nil {
		t.Fatal(err)
	}
	var r pluginsdk.EmbeddingResponse
	if err := json.Unmarshal(out.Body, &r); err != nil {
		t.Fatal(err)
	}
	var s string
	if err := json.Unmarshal(r.Data[0].Embedding, &s); err != nil {
		t.Fatalf("not a base64 string: %s", r.Data[0].Embedding)
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw) != 12 {
		t.Fatalf("%v %d", err, len(raw))
	}
	want := []float32{0.5, -1.25, 3}
	for i, w := range want {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); got != w {
			t.Fatalf("float %d = %v, want %v", i, got, w)
		}
	}
}

func TestErrors(t *testing.T) {
	a := New()
	bad := []string{
		`{"request_type":"chat.completion","provider":"gemini","model":"m","body":{"messages":"x"}}`,
		`{"request_type":"chat.completion","provider":"gemini","model":"m","body":{"messages":[{"role":"tool","tool_call_id":"nope","content":"x"}]}}`,
		`{"request_type":"chat.completion","provider":"vertex","model":"m","key_config":{"region":"x"},"body":{"messages":[]}}`,
		`{"request_type":"chat.completion","provider":"gemini","model":"a/../b","body":{"messages":[]}}`,
		`{"request_type":"embedding","provider":"gemini","model":"m","body":{"input":[[1,2]]}}`,
		`{"request_type":"rerank","provider":"gemini","model":"m","body":{}}`,
		`{"request_type":"chat.completion","provider":"gemini","model":"m","body":{"messages":[{"role":"user","content":[{"type":"video","x":1}]}]}}`,
	}
	for _, b := range bad {
		_, err := a.AdaptRequest([]byte(b))
		if pe, ok := err.(*pluginsdk.Error); !ok || pe.Code != 400 {
			t.Errorf("%s: %v", b, err)
		}
	}
}

// splitSSE reads an SSE transcript into the events the host would pass:
// {"event","data"} with JSON data kept raw. Google ends events with CRLF.
func splitSSE(t *testing.T, b []byte) []pluginsdk.UpstreamEvent {
	t.Helper()
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	var evs []pluginsdk.UpstreamEvent
	for _, block := range bytes.Split(b, []byte("\n\n")) {
		var data []byte
		for _, line := range bytes.Split(block, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				data = append(data, d...)
			}
		}
		if len(data) == 0 {
			continue
		}
		if !json.Valid(data) {
			data, _ = json.Marshal(string(data))
		}
		evs = append(evs, pluginsdk.UpstreamEvent{Data: data})
	}
	return evs
}

// runStream feeds events to AdaptStream in batches of size n (carrying the
// state as the host does) and returns every chunk.
func runStream(t *testing.T, a *Adapter, evs []pluginsdk.UpstreamEvent, n int) ([]json.RawMessage, error) {
	t.Helper()
	var state []byte
	var all []json.RawMessage
	for i := 0; ; i += n {
		end := i+n >= len(evs)
		batch := evs[i:min(i+n, len(evs))]
		b, _ := json.Marshal(batch)
		out, err := a.AdaptStream(pluginsdk.StreamInput{State: state, Batch: b, End: end})
		if err != nil {
			return all, err
		}
		state = append([]byte(nil), out.State...)
		var chunks []json.RawMessage
		if err := json.Unmarshal(out.Body, &chunks); err != nil {
			t.Fatalf("chunks: %v: %s", err, out.Body)
		}
		all = append(all, chunks...)
		if end {
			return all, nil
		}
	}
}

const fakeRequest = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],` +
	`"tools":[{"functionDeclarations":[{"name":"find","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}]}],` +
	`"generationConfig":{"thinkingConfig":{"includeThoughts":true,"thinkingBudget":1024}}}`

// recordFake captures host/fakeupstream's SSE answer with thoughts and a
// function call into testdata/stream_fake.sse.
func recordFake(t *testing.T) {
	s := fakeupstream.Start(t, fakeupstream.Gemini, fakeupstream.Options{CachedTokens: 2})
	req, _ := http.NewRequest("POST", s.URL+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", strings.NewReader(fakeRequest))
	req.Header.Set("x-goog-api-key", "k")
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := os.WriteFile("testdata/stream_fake.sse", b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The recorded fakeupstream transcript (thoughts, text, a function call
// with a signature, cumulative usage) maps to the expected chunks, whether
// the host batches events one by one or all at once.
func TestStreamGolden(t *testing.T) {
	if *record {
		recordFake(t)
	}
	b, err := os.ReadFile("testdata/stream_fake.sse")
	if err != nil {
		t.Fatal(err)
	}
	evs := splitSSE(t, b)
	var first []byte
	for _, n := range []int{1, 2, len(evs)} {
		chunks, err := runStream(t, New(), evs, n)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(chunks)
		if first == nil {
			first = got
			golden(t, "testdata/stream_fake.golden", got)
		} else if !bytes.Equal(got, first) {
			t.Fatalf("batch size %d changes the output:\n%s\n%s", n, got, first)
		}
	}
	var last pluginsdk.ChatChunk
	var tc *pluginsdk.ToolCall
	role := 0
	for _, c := range bytesChunks(first) {
		var ch pluginsdk.ChatChunk
		if err := json.Unmarshal(c, &ch); err != nil {
			t.Fatal(err)
		}
		for _, cc := range ch.Choices {
			if cc.Delta.Role != "" {
				role++
			}
			if len(cc.Delta.ToolCalls) > 0 {
				tc = &cc.Delta.ToolCalls[0]
			}
		}
		last = ch
	}
	if role != 1 || tc == nil || tc.Function.Arguments != `{"echo":"hello"}` || tc.Function.Name != "find" || tc.ID != "call_0" || tc.Extra["extra_content"] == nil {
		t.Fatalf("role chunks %d, tool call %+v", role, tc)
	}
	if last.Usage == nil || len(last.Choices) != 0 || last.Usage.CompletionTokensDetails == nil || last.Usage.PromptTokensDetails.CachedTokens != 2 {
		t.Fatalf("final usage chunk: %+v", last)
	}
}

func bytesChunks(b []byte) []json.RawMessage {
	var cs []json.RawMessage
	_ = json.Unmarshal(b, &cs)
	return cs
}

// An error event before content is a *pluginsdk.Error with the status it
// stands for, so the host retries or falls back.
func TestStreamErrorEvent(t *testing.T) {
	for body, code := range map[string]int{
		`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`: 503,
		`{"error":{"code":429,"message":"Quota","status":"RESOURCE_EXHAUSTED"}}`:             429,
		`{"error":{"code":500,"message":"Internal","status":"INTERNAL"}}`:                    500,
		`{"error":{"code":0,"message":"weird"}}`:                                             500,
	} {
		_, err := runStream(t, New(), []pluginsdk.UpstreamEvent{{Data: json.RawMessage(body)}}, 1)
		if pe, ok := err.(*pluginsdk.Error); !ok || pe.Code != code {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// End to end against host/fakeupstream: the specs the adapter builds are
// accepted by the fake's exact wire (gemini key and vertex bearer paths),
// and its answers translate.
func TestAgainstFakeUpstream(t *testing.T) {
	s := fakeupstream.Start(t, fakeupstream.Gemini, fakeupstream.Options{APIKey: "g-key", BearerToken: "tok", CachedTokens: 2})
	a := New()
	do := func(provider, reqType string, stream bool, body string) (*http.Response, []byte) {
		in, _ := json.Marshal(pluginsdk.AdaptRequestInput{RequestType: reqType, Provider: provider, Model: "gemini-2.5-flash", Stream: stream,
			BaseURL: s.URL + "/v1beta", KeyConfig: json.RawMessage(`{"project_id":"p1","region":"us-central1"}`), Body: json.RawMessage(body)})
		if provider == "vertex" {
			in, _ = json.Marshal(pluginsdk.AdaptRequestInput{RequestType: reqType, Provider: provider, Model: "gemini-2.5-flash", Stream: stream,
				BaseURL: s.URL, KeyConfig: json.RawMessage(`{"project_id":"p1","region":"us-central1"}`), Body: json.RawMessage(body)})
		}
		out, err := a.AdaptRequest(in)
		if err != nil {
			t.Fatal(err)
		}
		var spec pluginsdk.UpstreamRequest
		_ = json.Unmarshal(out.Body, &spec)
		url := spec.URL
		if url == "" {
			url = s.URL + "/v1beta" + spec.Path
		}
		req, _ := http.NewRequest(spec.Method, url, bytes.NewReader(spec.Body))
		if provider == "vertex" {
			req.Header.Set("Authorization", "Bearer tok")
		} else {
			req.Header.Set("x-goog-api-key", "g-key")
		}
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", provider, url, resp.StatusCode, b)
		}
		return resp, b
	}
	chat := `{"messages":[{"role":"user","content":"hi"}],"reasoning_effort":"low",` +
		`"tools":[{"type":"function","function":{"name":"find","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}]}`
	for _, provider := range []string{"gemini", "vertex"} {
		_, b := do(provider, pluginsdk.RequestChat, false, chat)
		env, _ := json.Marshal(pluginsdk.AdaptResponseInput{RequestType: pluginsdk.RequestChat, Model: "gemini-2.5-flash", Status: 200, Body: b})
		out, err := a.AdaptResponse(env)
		if err != nil {
			t.Fatal(err)
		}
		var r pluginsdk.ChatResponse
		_ = json.Unmarshal(out.Body, &r)
		m := r.Choices[0].Message
		if string(m.Content) != `"hello from gemini"` || m.ToolCalls[0].Function.Name != "find" || r.Choices[0].FinishReason != "tool_calls" ||
			m.Extra["reasoning_content"] == nil || r.Usage.CompletionTokensDetails.ReasoningTokens != 2 {
			t.Fatalf("%s: %s", provider, out.Body)
		}

		_, b = do(provider, pluginsdk.RequestChat, true, chat)
		chunks, err := runStream(t, a, splitSSE(t, b), 3)
		if err != nil || len(chunks) < 5 {
			t.Fatalf("%s stream: %v %d", provider, err, len(chunks))
		}

		_, b = do(provider, pluginsdk.RequestCountTokens, false, `{"messages":[{"role":"user","content":"count me"}]}`)
		env, _ = json.Marshal(pluginsdk.AdaptResponseInput{RequestType: pluginsdk.RequestCountTokens, Status: 200, Body: b})
		if out, err = a.AdaptResponse(env); err != nil || !bytes.Contains(out.Body, []byte(`"input_tokens":`)) {
			t.Fatalf("count: %v %s", err, out.Body)
		}
	}
	// Gemini embeddings (the fake knows embedContent only).
	_, b := do("gemini", pluginsdk.RequestEmbedding, false, `{"input":"hello","dimensions":4}`)
	env, _ := json.Marshal(pluginsdk.AdaptResponseInput{RequestType: pluginsdk.RequestEmbedding, Model: "e", Status: 200, Body: b, EncodingFormat: "base64"})
	out, err := a.AdaptResponse(env)
	if err != nil {
		t.Fatal(err)
	}
	var er pluginsdk.EmbeddingResponse
	_ = json.Unmarshal(out.Body, &er)
	var s64 string
	_ = json.Unmarshal(er.Data[0].Embedding, &s64)
	if raw, _ := base64.StdEncoding.DecodeString(s64); len(raw) != 16 {
		t.Fatalf("embedding: %s", out.Body)
	}
}
