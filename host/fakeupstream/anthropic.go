package fakeupstream

import (
	"net/http"
	"strings"
)

func (s *Server) routesAnthropic() {
	a := s.authAnthropic
	s.mux.HandleFunc("POST /v1/messages", s.handle(a, (*call).anthropicMessages))
	s.mux.HandleFunc("POST /v1/messages/count_tokens", s.handle(a, func(c *call) {
		c.writeJSON(200, map[string]any{"input_tokens": tokensFor(c.body)})
	}))
	s.mux.HandleFunc("GET /v1/models", s.handle(a, func(c *call) {
		c.writeJSON(200, map[string]any{"data": []any{
			map[string]any{"type": "model", "id": "claude-3-5-haiku-20241022", "display_name": "Claude Haiku 3.5", "created_at": "2024-10-22T00:00:00Z"},
			map[string]any{"type": "model", "id": "claude-sonnet-4-20250514", "display_name": "Claude Sonnet 4", "created_at": "2025-05-14T00:00:00Z"},
		}, "has_more": false, "first_id": "claude-3-5-haiku-20241022", "last_id": "claude-sonnet-4-20250514"})
	}))
}

// authAnthropic accepts x-api-key (Go SDK, older JS SDK) or Bearer (JS SDK
// 1.x) and requires anthropic-version, as the real API does.
func (s *Server) authAnthropic(c *call) (int, string) {
	key := c.r.Header.Get("x-api-key")
	if key == "" {
		key, _ = strings.CutPrefix(c.r.Header.Get("Authorization"), "Bearer ")
	}
	if key == "" || (s.opts.APIKey != "" && key != s.opts.APIKey) {
		return http.StatusUnauthorized, "invalid x-api-key"
	}
	if c.r.Header.Get("anthropic-version") == "" {
		return http.StatusBadRequest, "anthropic-version: header is required"
	}
	return 0, ""
}

func (c *call) anthropicUsage(p reply, output int) map[string]any {
	return map[string]any{"input_tokens": p.prompt, "output_tokens": output,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": p.cached, "service_tier": "standard"}
}

const fakeThinkingSignature = "ErUBCkYIBxgCIkBmYWtlLXNpZ25hdHVyZQ=="

func (c *call) anthropicMessages() {
	think := str(path(c.in, "thinking", "type")) == "enabled"
	p := c.newReply(str(path(c.in, "tools", 0, "name")), think)
	model := str(c.in["model"])
	const id = "msg_fake0001"
	stop := "end_turn"
	if p.tool != nil {
		stop = "tool_use"
	}
	if !truthy(c.in["stream"]) {
		var content []any
		if think {
			content = append(content, map[string]any{"type": "thinking", "thinking": p.fullThinking(), "signature": fakeThinkingSignature})
		}
		content = append(content, map[string]any{"type": "text", "text": p.fullText()})
		if p.tool != nil {
			content = append(content, map[string]any{"type": "tool_use", "id": "toolu_fake0001", "name": p.tool.name, "input": map[string]any{"echo": "hello"}})
		}
		c.writeJSON(200, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": c.anthropicUsage(p, p.completion())})
		return
	}
	st := c.startStream("text/event-stream")
	ev := func(name string, v map[string]any) bool {
		v["type"] = name
		return st.sse(name, v)
	}
	overloaded := func() { st.sse("error", anthropicError(529, "Overloaded")) }
	if c.f.streamError == StreamErrorBeforeContent {
		overloaded()
		return
	}
	start := map[string]any{"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": c.anthropicUsage(p, 1)}
	if !ev("message_start", map[string]any{"message": start}) || !ev("ping", map[string]any{}) {
		return
	}
	if c.f.streamError == StreamErrorAfterStart {
		overloaded()
		return
	}
	idx := 0
	if think {
		ok := ev("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		for _, t := range p.thinking {
			ok = ok && ev("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "thinking_delta", "thinking": t}})
		}
		ok = ok && ev("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "signature_delta", "signature": fakeThinkingSignature}}) &&
			ev("content_block_stop", map[string]any{"index": idx})
		if !ok {
			return
		}
		idx++
	}
	if !ev("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "text", "text": ""}}) {
		return
	}
	for i, t := range p.text {
		if !ev("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "text_delta", "text": t}}) {
			return
		}
		if i == 0 && c.f.streamError == StreamErrorMidStream {
			overloaded()
			return
		}
	}
	if !ev("content_block_stop", map[string]any{"index": idx}) {
		return
	}
	if p.tool != nil {
		idx++
		ok := ev("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "tool_use", "id": "toolu_fake0001", "name": p.tool.name, "input": map[string]any{}}})
		for _, frag := range p.tool.argChunks {
			ok = ok && ev("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": frag}})
		}
		if !ok || !ev("content_block_stop", map[string]any{"index": idx}) {
			return
		}
	}
	_ = ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": p.completion()}}) &&
		ev("message_stop", map[string]any{})
}
