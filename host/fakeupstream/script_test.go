package fakeupstream

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestScriptChatTools(t *testing.T) {
	s := Start(t, OpenAI, Options{})
	s.ScriptChatTools([]ScriptedToolCall{{Name: "calc-add", Arguments: `{"a":2,"b":3}`}, {Name: "calc-neg", Arguments: `{"x":1}`}})
	type answer struct {
		Choices []struct {
			Message struct {
				Content   *string
				ToolCalls []struct {
					ID, Type string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
	}
	status, _, b := do(t, s, "POST", "/v1/chat/completions", bearer, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	var a answer
	if status != 200 || json.Unmarshal(b, &a) != nil || len(a.Choices) != 1 {
		t.Fatalf("%d %s", status, b)
	}
	c := a.Choices[0]
	if c.FinishReason != "tool_calls" || c.Message.Content != nil || len(c.Message.ToolCalls) != 2 ||
		c.Message.ToolCalls[0].ID != "call_0_0" || c.Message.ToolCalls[1].Function.Name != "calc-neg" ||
		c.Message.ToolCalls[0].Function.Arguments != `{"a":2,"b":3}` || c.Message.ToolCalls[0].Type != "function" {
		t.Fatalf("first answer: %s", b)
	}
	// The script is used up: the answer echoes the trailing tool results.
	body := `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"x","content":"old"},` +
		`{"role":"assistant","content":null,"tool_calls":[]},{"role":"tool","tool_call_id":"call_0_0","content":"5"},` +
		`{"role":"tool","tool_call_id":"call_0_1","content":"-1"}]}`
	status, _, b = do(t, s, "POST", "/v1/chat/completions", bearer, body)
	a = answer{}
	if status != 200 || json.Unmarshal(b, &a) != nil || a.Choices[0].FinishReason != "stop" ||
		a.Choices[0].Message.Content == nil || *a.Choices[0].Message.Content != "tool results: 5 | -1" {
		t.Fatalf("second answer: %d %s", status, b)
	}
	// Streamed, a scripted answer carries the tool calls as deltas.
	s.ScriptChatTools([]ScriptedToolCall{{Name: "calc-add", Arguments: `{}`}})
	status, _, b = do(t, s, "POST", "/v1/chat/completions", bearer, `{"model":"m","stream":true,"messages":[]}`)
	if status != 200 || !strings.Contains(string(b), `"name":"calc-add"`) || !strings.Contains(string(b), `"finish_reason":"tool_calls"`) ||
		!strings.HasSuffix(strings.TrimSpace(string(b)), "data: [DONE]") {
		t.Fatalf("stream: %s", b)
	}
	s.Reset()
	status, _, b = do(t, s, "POST", "/v1/chat/completions", bearer, `{"model":"m","messages":[]}`)
	if status != 200 || !strings.Contains(string(b), "hello from openai") {
		t.Fatalf("after reset: %s", b)
	}
}
