package fakeupstream

import (
	"fmt"
	"strings"
)

// ScriptedToolCall is one tool call of a scripted chat answer.
type ScriptedToolCall struct {
	Name string
	// Arguments is the JSON text the model "wrote" (OpenAI sends
	// function.arguments as a string, which need not be valid JSON).
	Arguments string
}

// ScriptChatTools scripts the following OpenAI chat completions, to test
// tool-call loops: the i-th request answers with the tool calls of turns[i]
// (finish_reason "tool_calls", ids "call_<i>_<j>"); once the turns are used
// up, each request answers the text "tool results: " followed by the
// contents of the tool messages after its last assistant message, joined
// with " | ", so a test sees what the model was fed. A nil turn answers
// that text early. Reset clears the script.
func (s *Server) ScriptChatTools(turns ...[]ScriptedToolCall) {
	s.mu.Lock()
	s.script, s.scripted, s.scriptPos = turns, true, 0
	s.mu.Unlock()
}

// nextTurn returns the scripted turn of this request, and whether a script is set.
func (s *Server) nextTurn() (turn []ScriptedToolCall, index int, scripted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.scripted {
		return nil, 0, false
	}
	index = s.scriptPos
	s.scriptPos++
	if index < len(s.script) {
		turn = s.script[index]
	}
	return turn, index, true
}

// trailingToolResults is what the scripted model "read": the contents of the
// tool messages after the last assistant message.
func trailingToolResults(in map[string]any) string {
	msgs, _ := in["messages"].([]any)
	var parts []string
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		switch mm["role"] {
		case "assistant":
			parts = nil
		case "tool":
			parts = append(parts, fmt.Sprint(mm["content"]))
		}
	}
	return "tool results: " + strings.Join(parts, " | ")
}

// openAIScriptedChat answers a chat completion from the script.
func (c *call) openAIScriptedChat(turn []ScriptedToolCall, index int) {
	model := str(c.in["model"])
	id := fmt.Sprintf("chatcmpl-script%04d", index)
	prompt := tokensFor(c.body)
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	finish := "stop"
	var calls []any
	if len(turn) > 0 {
		finish = "tool_calls"
		for j, tc := range turn {
			calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d_%d", index, j), "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}})
		}
		msg["tool_calls"] = calls
	} else {
		msg["content"] = trailingToolResults(c.in)
	}
	usage := map[string]any{"prompt_tokens": prompt, "completion_tokens": 3, "total_tokens": prompt + 3}
	if !truthy(c.in["stream"]) {
		c.writeJSON(200, map[string]any{
			"id": id, "object": "chat.completion", "created": fakeCreated, "model": model, "system_fingerprint": "fp_fake",
			"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
			"usage":   usage,
		})
		return
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": fakeCreated, "model": model,
			"system_fingerprint": "fp_fake", "choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
	}
	st := c.startStream("text/event-stream")
	if !st.sse("", chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	if content, ok := msg["content"].(string); ok {
		if !st.sse("", chunk(map[string]any{"content": content}, nil)) {
			return
		}
	}
	for j, tc := range turn {
		if !st.sse("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": j, "id": fmt.Sprintf("call_%d_%d", index, j),
			"type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}}}}, nil)) {
			return
		}
	}
	if !st.sse("", chunk(map[string]any{}, finish)) {
		return
	}
	st.sse("", "[DONE]")
}
