package fakeupstream

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

const openAITools = `,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`

func TestOpenAIChatNonStream(t *testing.T) {
	s := Start(t, OpenAI, Options{APIKey: "sk-test", CachedTokens: 3})
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]` + openAITools + `,"reasoning_effort":"low"}`
	status, hdr, b := do(t, s, "POST", "/v1/chat/completions", bearer, body)
	if status != 200 || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d %s", status, b)
	}
	var r struct {
		ID, Object, Model string
		Created           int64
		Choices           []struct {
			Index   int
			Message struct {
				Role, Content string
				ToolCalls     []struct {
					ID, Type string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
			Total      int `json:"total_tokens"`
			PD         struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
			CD struct {
				Reasoning int `json:"reasoning_tokens"`
			} `json:"completion_tokens_details"`
		}
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	c := r.Choices[0]
	if r.Object != "chat.completion" || r.Model != "gpt-4o-mini" || r.Created == 0 || c.Message.Content != "hello from openai" || c.FinishReason != "tool_calls" {
		t.Fatalf("reply %+v", r)
	}
	if len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Name != "get_weather" || c.Message.ToolCalls[0].Function.Arguments != `{"echo":"hello"}` {
		t.Fatalf("tool calls %+v", c.Message.ToolCalls)
	}
	u := r.Usage
	if u.Prompt != (len(body)+3)/4 || u.Total != u.Prompt+u.Completion || u.PD.Cached != 3 || u.CD.Reasoning != 2 {
		t.Fatalf("usage %+v", u)
	}
}

func TestOpenAIChatStream(t *testing.T) {
	s := Start(t, OpenAI, Options{})
	_, hdr, b := do(t, s, "POST", "/v1/chat/completions", bearer,
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]`+openAITools+`}`)
	if !strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("content type %q", hdr.Get("Content-Type"))
	}
	evs := parseSSE(t, b)
	if evs[len(evs)-1].Data != "[DONE]" {
		t.Fatal("no [DONE]")
	}
	var text, args, role, finish, toolID, toolName string
	var usage map[string]any
	for _, e := range evs[:len(evs)-1] {
		if e.Event != "" {
			t.Fatalf("chat stream uses data-only events, got event %q", e.Event)
		}
		m := jsonOf(t, e.Data)
		if m["object"] != "chat.completion.chunk" {
			t.Fatalf("object %v", m["object"])
		}
		if u, ok := m["usage"].(map[string]any); ok {
			usage = u
			if len(m["choices"].([]any)) != 0 {
				t.Fatal("usage chunk must have empty choices")
			}
			continue
		}
		ch := path(m, "choices", 0).(map[string]any)
		d := ch["delta"].(map[string]any)
		role += str(d["role"])
		text += str(d["content"])
		if tc := path(d, "tool_calls", 0); tc != nil {
			if num(path(tc, "index")) != 0 {
				t.Fatal("tool index")
			}
			toolID += str(path(tc, "id"))
			toolName += str(path(tc, "function", "name"))
			args += str(path(tc, "function", "arguments"))
		}
		if f := str(ch["finish_reason"]); f != "" {
			finish = f
		}
	}
	if role != "assistant" || text != "hello from openai" || toolID != "call_fake_0001" || toolName != "get_weather" || args != `{"echo":"hello"}` || finish != "tool_calls" {
		t.Fatalf("reassembled role=%q text=%q id=%q name=%q args=%q finish=%q", role, text, toolID, toolName, args, finish)
	}
	if usage == nil || num(usage["completion_tokens"]) != 5 {
		t.Fatalf("usage %v", usage)
	}
	// Without include_usage there is no usage chunk and no usage key.
	_, _, b = do(t, s, "POST", "/v1/chat/completions", bearer, `{"model":"m","stream":true,"messages":[]}`)
	if strings.Contains(string(b), `"usage"`) {
		t.Fatal("usage sent without stream_options.include_usage")
	}
}

func TestOpenAIStreamErrors(t *testing.T) {
	s := Start(t, OpenAI, Options{})
	for _, mode := range []StreamError{StreamErrorBeforeContent, StreamErrorMidStream} {
		s.SetStreamError(mode)
		status, _, b := do(t, s, "POST", "/v1/chat/completions", bearer, `{"model":"m","stream":true,"messages":[]}`)
		evs := parseSSE(t, b)
		last := jsonOf(t, evs[len(evs)-1].Data)
		if status != 200 || path(last, "error", "type") != "server_error" {
			t.Fatalf("%s: status %d last %v", mode, status, last)
		}
		hasContent := strings.Contains(string(b), `"content":"hello"`)
		if hasContent != (mode == StreamErrorMidStream) {
			t.Fatalf("%s: content before error = %v", mode, hasContent)
		}
	}
}

func TestOpenAIEmbeddings(t *testing.T) {
	s := Start(t, OpenAI, Options{})
	_, _, fb := do(t, s, "POST", "/v1/embeddings", bearer, `{"model":"e","input":["a","b"],"dimensions":4}`)
	_, _, bb := do(t, s, "POST", "/v1/embeddings", bearer, `{"model":"e","input":["a","b"],"dimensions":4,"encoding_format":"base64"}`)
	var f struct {
		Object string
		Data   []struct {
			Object    string
			Index     int
			Embedding []float32
		}
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	var b64 struct{ Data []struct{ Embedding string } }
	json.Unmarshal(fb, &f)
	json.Unmarshal(bb, &b64)
	if f.Object != "list" || len(f.Data) != 2 || len(f.Data[1].Embedding) != 4 || f.Data[1].Index != 1 || f.Usage.PromptTokens == 0 {
		t.Fatalf("float reply %s", fb)
	}
	for i := range f.Data {
		raw, err := base64.StdEncoding.DecodeString(b64.Data[i].Embedding)
		if err != nil || len(raw) != 16 {
			t.Fatalf("base64: %v len %d", err, len(raw))
		}
		for j := range 4 {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:])); got != f.Data[i].Embedding[j] {
				t.Fatalf("base64 float %d,%d = %v, want %v", i, j, got, f.Data[i].Embedding[j])
			}
		}
	}
}

func TestOpenAIResponses(t *testing.T) {
	s := Start(t, OpenAI, Options{})
	_, _, b := do(t, s, "POST", "/v1/responses", bearer, `{"model":"m","input":"hi"}`)
	r := jsonOf(t, string(b))
	if r["object"] != "response" || r["status"] != "completed" || path(r, "output", 0, "content", 0, "text") != "hello from openai" || num(path(r, "usage", "total_tokens")) == 0 {
		t.Fatalf("response %s", b)
	}
	_, _, b = do(t, s, "POST", "/v1/responses", bearer, `{"model":"m","input":"hi","stream":true}`)
	evs := parseSSE(t, b)
	var names []string
	text := ""
	for i, e := range evs {
		m := jsonOf(t, e.Data)
		if m["type"] != e.Event || num(m["sequence_number"]) != i {
			t.Fatalf("event %q carries type %v seq %v", e.Event, m["type"], m["sequence_number"])
		}
		names = append(names, e.Event)
		if e.Event == "response.output_text.delta" {
			text += str(m["delta"])
		}
	}
	if names[0] != "response.created" || names[len(names)-1] != "response.completed" || text != "hello from openai" {
		t.Fatalf("events %v text %q", names, text)
	}
	if num(path(jsonOf(t, evs[len(evs)-1].Data), "response", "usage", "output_tokens")) != 3 {
		t.Fatal("completed event lacks usage")
	}

	// Function calls: a function_call output item whose arguments stream in fragments.
	tools := `,"tools":[{"type":"function","name":"lookup","parameters":{}}]`
	_, _, b = do(t, s, "POST", "/v1/responses", bearer, `{"model":"m","input":"hi"`+tools+`}`)
	if r := jsonOf(t, string(b)); path(r, "output", 1, "type") != "function_call" || path(r, "output", 1, "name") != "lookup" || path(r, "output", 1, "arguments") != `{"echo":"hello"}` {
		t.Fatalf("function call output %s", b)
	}
	_, _, b = do(t, s, "POST", "/v1/responses", bearer, `{"model":"m","input":"hi","stream":true`+tools+`}`)
	args, done := "", ""
	for _, e := range parseSSE(t, b) {
		m := jsonOf(t, e.Data)
		switch e.Event {
		case "response.function_call_arguments.delta":
			args += str(m["delta"])
		case "response.function_call_arguments.done":
			done = str(m["arguments"])
		}
	}
	if args != `{"echo":"hello"}` || done != args {
		t.Fatalf("streamed arguments %q done %q", args, done)
	}
}

func TestOpenAICompletionsAndModels(t *testing.T) {
	s := Start(t, OpenAI, Options{})
	_, _, b := do(t, s, "POST", "/v1/completions", bearer, `{"model":"m","prompt":"x"}`)
	if r := jsonOf(t, string(b)); r["object"] != "text_completion" || path(r, "choices", 0, "text") != "hello from openai" {
		t.Fatalf("%s", b)
	}
	_, _, b = do(t, s, "POST", "/v1/completions", bearer, `{"model":"m","prompt":"x","stream":true}`)
	evs := parseSSE(t, b)
	if evs[len(evs)-1].Data != "[DONE]" || len(evs) != 4 {
		t.Fatalf("completion stream %s", b)
	}
	_, _, b = do(t, s, "GET", "/v1/models", bearer, "")
	if r := jsonOf(t, string(b)); r["object"] != "list" || path(r, "data", 0, "object") != "model" {
		t.Fatalf("%s", b)
	}
	status, _, b := do(t, s, "GET", "/v1/models", nil, "")
	if status != 401 || path(jsonOf(t, string(b)), "error", "code") != "invalid_api_key" {
		t.Fatalf("unauthenticated: %d %s", status, b)
	}
}
