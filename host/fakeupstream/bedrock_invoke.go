package fakeupstream

import (
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/wasmgate/gateway/host/eventstream"
)

// InvokeModel and InvokeModelWithResponseStream: the body is the model's
// native request. Anthropic models on Bedrock (a body with
// "anthropic_version") answer in the Messages format; others in Amazon
// Nova's (messages / inferenceConfig, Converse-shaped). Token counts go in
// X-Amzn-Bedrock-Input-Token-Count / -Output-Token-Count on InvokeModel
// and in "amazon-bedrock-invocationMetrics" on the last stream chunk, as
// Bedrock sends them. Stream events are "chunk" events of
// {"bytes": base64(event JSON)}.

func (s *Server) routesBedrockInvoke() {
	s.mux.HandleFunc("POST /model/{modelId}/invoke", s.handle(s.authSigV4, func(c *call) { c.bedrockInvoke(false) }))
	s.mux.HandleFunc("POST /model/{modelId}/invoke-with-response-stream", s.handle(s.authSigV4, func(c *call) { c.bedrockInvoke(true) }))
}

func (c *call) bedrockInvoke(streaming bool) {
	_, claude := c.in["anthropic_version"]
	var toolName string
	if claude {
		toolName = str(path(c.in, "tools", 0, "name"))
	} else {
		toolName = str(path(c.in, "toolConfig", "tools", 0, "toolSpec", "name"))
	}
	if _, ok := c.in["messages"]; !ok {
		c.writeJSON(400, map[string]any{"message": "Malformed input request: required key [messages] not found"})
		return
	}
	p := c.newReply(toolName, false)
	in, out := p.prompt, p.completion()
	if !streaming {
		c.w.Header().Set("X-Amzn-Bedrock-Input-Token-Count", strconv.Itoa(in))
		c.w.Header().Set("X-Amzn-Bedrock-Output-Token-Count", strconv.Itoa(out))
		if claude {
			content := []any{map[string]any{"type": "text", "text": p.fullText()}}
			stop := "end_turn"
			if p.tool != nil {
				content = append(content, map[string]any{"type": "tool_use", "id": "toolu_bdrk_fake0001", "name": p.tool.name, "input": map[string]any{"echo": "hello"}})
				stop = "tool_use"
			}
			c.writeJSON(200, map[string]any{"id": "msg_bdrk_fake0001", "type": "message", "role": "assistant",
				"model": "claude-3-haiku-20240307", "content": content, "stop_reason": stop, "stop_sequence": nil,
				"usage": map[string]any{"input_tokens": in, "output_tokens": out}})
			return
		}
		content := []any{map[string]any{"text": p.fullText()}}
		stop := "end_turn"
		if p.tool != nil {
			content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": "tooluse_fake0001", "name": p.tool.name, "input": map[string]any{"echo": "hello"}}})
			stop = "tool_use"
		}
		c.writeJSON(200, map[string]any{"output": map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
			"stopReason": stop, "usage": map[string]any{"inputTokens": in, "outputTokens": out, "totalTokens": in + out,
				"cacheReadInputTokenCount": 0, "cacheWriteInputTokenCount": 0}})
		return
	}
	st := c.startStream("application/vnd.amazon.eventstream")
	chunk := func(v map[string]any) bool {
		payload, _ := json.Marshal(v)
		body, _ := json.Marshal(map[string]any{"bytes": base64.StdEncoding.EncodeToString(payload), "p": bedrockPad})
		b, err := eventstream.Append(nil, eventstream.Event("chunk", body))
		return err == nil && st.write(b)
	}
	if c.f.streamError == StreamErrorBeforeContent {
		b, _ := eventstream.Append(nil, eventstream.Exception("throttlingException", []byte(`{"message":"Too many requests, please wait before trying again."}`)))
		st.write(b)
		return
	}
	metrics := map[string]any{"inputTokenCount": in, "outputTokenCount": out, "invocationLatency": 42, "firstByteLatency": 10}
	stop := "end_turn"
	if p.tool != nil {
		stop = "tool_use"
	}
	if claude {
		ok := chunk(map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_bdrk_fake0001", "type": "message", "role": "assistant",
			"model": "claude-3-haiku-20240307", "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": 1}}}) &&
			chunk(map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		for i, t := range p.text {
			ok = ok && chunk(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": t}})
			if ok && i == 0 && c.f.streamError == StreamErrorMidStream {
				b, _ := eventstream.Append(nil, eventstream.Exception("throttlingException", []byte(`{"message":"Too many requests, please wait before trying again."}`)))
				st.write(b)
				return
			}
		}
		ok = ok && chunk(map[string]any{"type": "content_block_stop", "index": 0})
		if p.tool != nil {
			ok = ok && chunk(map[string]any{"type": "content_block_start", "index": 1, "content_block": map[string]any{"type": "tool_use", "id": "toolu_bdrk_fake0001", "name": p.tool.name, "input": map[string]any{}}})
			for _, frag := range p.tool.argChunks {
				ok = ok && chunk(map[string]any{"type": "content_block_delta", "index": 1, "delta": map[string]any{"type": "input_json_delta", "partial_json": frag}})
			}
			ok = ok && chunk(map[string]any{"type": "content_block_stop", "index": 1})
		}
		_ = ok && chunk(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": out}}) &&
			chunk(map[string]any{"type": "message_stop", "amazon-bedrock-invocationMetrics": metrics})
		return
	}
	ok := chunk(map[string]any{"messageStart": map[string]any{"role": "assistant"}})
	for _, t := range p.text {
		ok = ok && chunk(map[string]any{"contentBlockDelta": map[string]any{"delta": map[string]any{"text": t}, "contentBlockIndex": 0}})
	}
	ok = ok && chunk(map[string]any{"contentBlockStop": map[string]any{"contentBlockIndex": 0}})
	if p.tool != nil {
		ok = ok && chunk(map[string]any{"contentBlockStart": map[string]any{"start": map[string]any{"toolUse": map[string]any{"toolUseId": "tooluse_fake0001", "name": p.tool.name}}, "contentBlockIndex": 1}})
		for _, frag := range p.tool.argChunks {
			ok = ok && chunk(map[string]any{"contentBlockDelta": map[string]any{"delta": map[string]any{"toolUse": map[string]any{"input": frag}}, "contentBlockIndex": 1}})
		}
		ok = ok && chunk(map[string]any{"contentBlockStop": map[string]any{"contentBlockIndex": 1}})
	}
	_ = ok && chunk(map[string]any{"messageStop": map[string]any{"stopReason": stop}}) &&
		chunk(map[string]any{"metadata": map[string]any{"usage": map[string]any{"inputTokens": in, "outputTokens": out}, "metrics": map[string]any{}, "trace": map[string]any{}},
			"amazon-bedrock-invocationMetrics": metrics})
}
