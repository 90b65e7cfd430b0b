package fakeupstream

import (
	"net/http"
	"strings"
)

const fakeCreated = 1700000000

func (s *Server) routesOpenAI() {
	a := s.authOpenAIStyle
	s.mux.HandleFunc("POST /v1/chat/completions", s.handle(a, (*call).openAIChat))
	s.mux.HandleFunc("POST /v1/completions", s.handle(a, (*call).openAICompletions))
	s.mux.HandleFunc("POST /v1/embeddings", s.handle(a, (*call).openAIEmbeddings))
	s.mux.HandleFunc("POST /v1/responses", s.handle(a, (*call).openAIResponses))
	s.mux.HandleFunc("GET /v1/models", s.handle(a, func(c *call) {
		c.writeJSON(200, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": "gpt-4o-mini", "object": "model", "created": fakeCreated, "owned_by": "system"},
			map[string]any{"id": "text-embedding-3-small", "object": "model", "created": fakeCreated, "owned_by": "system"},
		}})
	}))
}

// authOpenAIStyle wants "Authorization: Bearer <key>" (OpenAI, Cohere).
func (s *Server) authOpenAIStyle(c *call) (int, string) {
	key, ok := strings.CutPrefix(c.r.Header.Get("Authorization"), "Bearer ")
	if !ok || key == "" || (s.opts.APIKey != "" && key != s.opts.APIKey) {
		return http.StatusUnauthorized, "Incorrect API key provided."
	}
	return 0, ""
}

func (c *call) openAIUsage(p reply) map[string]any {
	return map[string]any{
		"prompt_tokens": p.prompt, "completion_tokens": p.completion(), "total_tokens": p.prompt + p.completion(),
		"prompt_tokens_details":     map[string]any{"cached_tokens": p.cached, "audio_tokens": 0},
		"completion_tokens_details": map[string]any{"reasoning_tokens": p.reasoning, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
	}
}

func (c *call) openAIChat() {
	if turn, index, scripted := c.s.nextTurn(); scripted {
		c.openAIScriptedChat(turn, index)
		return
	}
	p := c.newReply(str(path(c.in, "tools", 0, "function", "name")), truthy(c.in["reasoning_effort"]))
	model := str(c.in["model"])
	const id = "chatcmpl-fake0001"
	finish := "stop"
	if p.tool != nil {
		finish = "tool_calls"
	}
	if !truthy(c.in["stream"]) {
		msg := map[string]any{"role": "assistant", "content": p.fullText(), "refusal": nil}
		if p.tool != nil {
			msg["tool_calls"] = []any{map[string]any{"id": p.tool.id, "type": "function",
				"function": map[string]any{"name": p.tool.name, "arguments": p.tool.args}}}
		}
		c.writeJSON(200, map[string]any{
			"id": id, "object": "chat.completion", "created": fakeCreated, "model": model,
			"system_fingerprint": "fp_fake",
			"choices":            []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
			"usage":              c.openAIUsage(p),
		})
		return
	}
	includeUsage := truthy(path(c.in, "stream_options", "include_usage"))
	chunk := func(delta map[string]any, finish any) map[string]any {
		ch := map[string]any{"id": id, "object": "chat.completion.chunk", "created": fakeCreated, "model": model,
			"system_fingerprint": "fp_fake",
			"choices":            []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
		if includeUsage {
			ch["usage"] = nil
		}
		return ch
	}
	st := c.startStream("text/event-stream")
	streamErr := map[string]any{"error": map[string]any{"message": "The server had an error while processing your request.", "type": "server_error", "param": nil, "code": nil}}
	if c.f.streamError == StreamErrorBeforeContent {
		st.sse("", streamErr)
		return
	}
	if !st.sse("", chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)) {
		return
	}
	if c.f.streamError == StreamErrorAfterStart {
		st.sse("", streamErr)
		return
	}
	for i, t := range p.text {
		if !st.sse("", chunk(map[string]any{"content": t}, nil)) {
			return
		}
		if i == 0 && c.f.streamError == StreamErrorMidStream {
			st.sse("", streamErr)
			return
		}
	}
	if p.tool != nil {
		if !st.sse("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": p.tool.id, "type": "function",
			"function": map[string]any{"name": p.tool.name, "arguments": ""}}}}, nil)) {
			return
		}
		for _, frag := range p.tool.argChunks {
			if !st.sse("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": frag}}}}, nil)) {
				return
			}
		}
	}
	if !st.sse("", chunk(map[string]any{}, finish)) {
		return
	}
	if includeUsage {
		st.sse("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": fakeCreated, "model": model,
			"system_fingerprint": "fp_fake", "choices": []any{}, "usage": c.openAIUsage(p)})
	}
	st.sse("", "[DONE]")
}

func (c *call) openAICompletions() {
	p := c.newReply("", false)
	model := str(c.in["model"])
	const id = "cmpl-fake0001"
	usage := map[string]any{"prompt_tokens": p.prompt, "completion_tokens": p.completion(), "total_tokens": p.prompt + p.completion()}
	if !truthy(c.in["stream"]) {
		c.writeJSON(200, map[string]any{"id": id, "object": "text_completion", "created": fakeCreated, "model": model,
			"choices": []any{map[string]any{"text": p.fullText(), "index": 0, "logprobs": nil, "finish_reason": "stop"}},
			"usage":   usage})
		return
	}
	st := c.startStream("text/event-stream")
	for i, t := range p.text {
		var finish any
		if i == len(p.text)-1 {
			finish = "stop"
		}
		if !st.sse("", map[string]any{"id": id, "object": "text_completion", "created": fakeCreated, "model": model,
			"choices": []any{map[string]any{"text": t, "index": 0, "logprobs": nil, "finish_reason": finish}}}) {
			return
		}
	}
	if truthy(path(c.in, "stream_options", "include_usage")) {
		st.sse("", map[string]any{"id": id, "object": "text_completion", "created": fakeCreated, "model": model, "choices": []any{}, "usage": usage})
	}
	st.sse("", "[DONE]")
}

func (c *call) openAIEmbeddings() {
	inputs := inputStrings(c.in["input"])
	if len(inputs) == 0 {
		c.s.writeError(c, 400, "'input' is required")
		return
	}
	dims := c.s.opts.EmbeddingDims
	if d, ok := c.in["dimensions"].(float64); ok && d > 0 && d <= 4096 {
		dims = int(d)
	}
	b64 := str(c.in["encoding_format"]) == "base64"
	data := make([]any, len(inputs))
	for i, in := range inputs {
		v := embedding(in, dims)
		var emb any = v
		if b64 {
			emb = base64Floats(v)
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": emb}
	}
	n := tokensFor(c.body)
	c.writeJSON(200, map[string]any{"object": "list", "data": data, "model": str(c.in["model"]),
		"usage": map[string]any{"prompt_tokens": n, "total_tokens": n}})
}

func (c *call) openAIResponses() {
	// Responses tools are flat: {"type":"function","name":...}.
	p := c.newReply(str(path(c.in, "tools", 0, "name")), truthy(path(c.in, "reasoning", "effort")))
	model := str(c.in["model"])
	const id, itemID, fcID = "resp_fake0001", "msg_fake0001", "fc_fake0001"
	usage := map[string]any{
		"input_tokens": p.prompt, "input_tokens_details": map[string]any{"cached_tokens": p.cached},
		"output_tokens": p.completion(), "output_tokens_details": map[string]any{"reasoning_tokens": p.reasoning},
		"total_tokens": p.prompt + p.completion(),
	}
	text := p.fullText()
	part := func(t string) map[string]any {
		return map[string]any{"type": "output_text", "text": t, "annotations": []any{}}
	}
	item := func(status string, content []any) map[string]any {
		return map[string]any{"id": itemID, "type": "message", "status": status, "role": "assistant", "content": content}
	}
	resp := func(status string, output []any, usage any) map[string]any {
		return map[string]any{"id": id, "object": "response", "created_at": fakeCreated, "status": status, "model": model,
			"output": output, "usage": usage, "error": nil, "incomplete_details": nil, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}}
	}
	fcItem := func(status, args string) map[string]any {
		return map[string]any{"id": fcID, "type": "function_call", "status": status, "call_id": p.tool.id, "name": p.tool.name, "arguments": args}
	}
	output := []any{item("completed", []any{part(text)})}
	if p.tool != nil {
		output = append(output, fcItem("completed", p.tool.args))
	}
	if !truthy(c.in["stream"]) {
		r := resp("completed", output, usage)
		r["output_text"] = text
		c.writeJSON(200, r)
		return
	}
	st := c.startStream("text/event-stream")
	seq := 0
	ev := func(typ string, fields map[string]any) bool {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		return st.sse(typ, fields)
	}
	if c.f.streamError == StreamErrorBeforeContent {
		ev("error", map[string]any{"code": "server_error", "message": "The server had an error while processing your request.", "param": nil})
		return
	}
	ok := ev("response.created", map[string]any{"response": resp("in_progress", []any{}, nil)}) &&
		ev("response.in_progress", map[string]any{"response": resp("in_progress", []any{}, nil)}) &&
		ev("response.output_item.added", map[string]any{"output_index": 0, "item": item("in_progress", []any{})}) &&
		ev("response.content_part.added", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "part": part("")})
	if !ok {
		return
	}
	for i, t := range p.text {
		if !ev("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "delta": t}) {
			return
		}
		if i == 0 && c.f.streamError == StreamErrorMidStream {
			ev("response.failed", map[string]any{"response": resp("failed", []any{}, nil)})
			return
		}
	}
	ok = ev("response.output_text.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "text": text}) &&
		ev("response.content_part.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "part": part(text)}) &&
		ev("response.output_item.done", map[string]any{"output_index": 0, "item": item("completed", []any{part(text)})})
	if ok && p.tool != nil {
		ok = ev("response.output_item.added", map[string]any{"output_index": 1, "item": fcItem("in_progress", "")})
		for _, frag := range p.tool.argChunks {
			ok = ok && ev("response.function_call_arguments.delta", map[string]any{"item_id": fcID, "output_index": 1, "delta": frag})
		}
		ok = ok && ev("response.function_call_arguments.done", map[string]any{"item_id": fcID, "output_index": 1, "arguments": p.tool.args}) &&
			ev("response.output_item.done", map[string]any{"output_index": 1, "item": fcItem("completed", p.tool.args)})
	}
	_ = ok && ev("response.completed", map[string]any{"response": resp("completed", output, usage)})
}
