package fakeupstream

import "sort"

func (s *Server) routesCohere() {
	a := s.authOpenAIStyle
	s.mux.HandleFunc("POST /v2/chat", s.handle(a, (*call).cohereChat))
	s.mux.HandleFunc("POST /v2/embed", s.handle(a, (*call).cohereEmbed))
	s.mux.HandleFunc("POST /v2/rerank", s.handle(a, (*call).cohereRerank))
}

func (c *call) cohereUsage(p reply) map[string]any {
	return map[string]any{
		"billed_units":  map[string]any{"input_tokens": p.prompt, "output_tokens": p.completion()},
		"tokens":        map[string]any{"input_tokens": p.prompt + 7, "output_tokens": p.completion()},
		"cached_tokens": p.cached,
	}
}

func (c *call) cohereChat() {
	p := c.newReply(str(path(c.in, "tools", 0, "function", "name")), false)
	const id = "c0hf4ke0-0000-4000-8000-000000000001"
	finish := "COMPLETE"
	if p.tool != nil {
		finish = "TOOL_CALL"
	}
	if !truthy(c.in["stream"]) {
		msg := map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": p.fullText()}}}
		if p.tool != nil {
			msg["tool_plan"] = "I will call " + p.tool.name + "."
			msg["tool_calls"] = []any{map[string]any{"id": p.tool.id, "type": "function", "function": map[string]any{"name": p.tool.name, "arguments": p.tool.args}}}
		}
		c.writeJSON(200, map[string]any{"id": id, "message": msg, "finish_reason": finish, "usage": c.cohereUsage(p)})
		return
	}
	st := c.startStream("text/event-stream")
	ev := func(typ string, v map[string]any) bool {
		v["type"] = typ
		return st.sse(typ, v)
	}
	// Cohere reports a failed generation in message-end with finish_reason
	// ERROR and the error text, inside a 200 stream.
	fail := func() {
		ev("message-end", map[string]any{"delta": map[string]any{"finish_reason": "ERROR", "error": "internal server error, this has been reported to our developers"}})
	}
	if c.f.streamError == StreamErrorBeforeContent {
		fail()
		return
	}
	if !ev("message-start", map[string]any{"id": id, "delta": map[string]any{"message": map[string]any{"role": "assistant", "content": []any{}, "tool_plan": "", "tool_calls": []any{}, "citations": []any{}}}}) ||
		!ev("content-start", map[string]any{"index": 0, "delta": map[string]any{"message": map[string]any{"content": map[string]any{"type": "text", "text": ""}}}}) {
		return
	}
	for i, t := range p.text {
		if !ev("content-delta", map[string]any{"index": 0, "delta": map[string]any{"message": map[string]any{"content": map[string]any{"text": t}}}}) {
			return
		}
		if i == 0 && c.f.streamError == StreamErrorMidStream {
			fail()
			return
		}
	}
	if !ev("content-end", map[string]any{"index": 0}) {
		return
	}
	if p.tool != nil {
		ok := ev("tool-call-start", map[string]any{"index": 0, "delta": map[string]any{"message": map[string]any{"tool_calls": map[string]any{
			"id": p.tool.id, "type": "function", "function": map[string]any{"name": p.tool.name, "arguments": ""}}}}})
		for _, frag := range p.tool.argChunks {
			ok = ok && ev("tool-call-delta", map[string]any{"index": 0, "delta": map[string]any{"message": map[string]any{"tool_calls": map[string]any{"function": map[string]any{"arguments": frag}}}}})
		}
		if !ok || !ev("tool-call-end", map[string]any{"index": 0}) {
			return
		}
	}
	ev("message-end", map[string]any{"delta": map[string]any{"finish_reason": finish, "usage": c.cohereUsage(p)}})
}

func (c *call) cohereEmbed() {
	texts := inputStrings(c.in["texts"])
	if len(texts) == 0 {
		c.s.writeError(c, 400, "invalid request: texts must be a non-empty list")
		return
	}
	dims := c.s.opts.EmbeddingDims
	if d, ok := c.in["output_dimension"].(float64); ok && d > 0 && d <= 4096 {
		dims = int(d)
	}
	vecs := make([]any, len(texts))
	for i, t := range texts {
		vecs[i] = embedding(t, dims)
	}
	c.writeJSON(200, map[string]any{"id": "emb_fake0001", "response_type": "embeddings_by_type",
		"embeddings": map[string]any{"float": vecs}, "texts": texts,
		"meta": map[string]any{"api_version": map[string]any{"version": "2"}, "billed_units": map[string]any{"input_tokens": tokensFor(c.body)}}})
}

func (c *call) cohereRerank() {
	docs := inputStrings(c.in["documents"])
	query := str(c.in["query"])
	type res struct {
		Index int     `json:"index"`
		Score float64 `json:"relevance_score"`
	}
	out := make([]res, len(docs))
	for i, d := range docs {
		// Deterministic: documents sharing more bytes with the query rank higher.
		out[i] = res{Index: i, Score: overlap(query, d)}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Score > out[b].Score })
	if n, ok := c.in["top_n"].(float64); ok && int(n) >= 0 && int(n) < len(out) {
		out = out[:int(n)]
	}
	c.writeJSON(200, map[string]any{"id": "rr_fake0001", "results": out,
		"meta": map[string]any{"api_version": map[string]any{"version": "2"}, "billed_units": map[string]any{"search_units": 1}}})
}

func overlap(q, d string) float64 {
	if len(q) == 0 || len(d) == 0 {
		return 0
	}
	var seen [256]bool
	for i := 0; i < len(q); i++ {
		seen[q[i]] = true
	}
	n := 0
	for i := 0; i < len(d); i++ {
		if seen[d[i]] {
			n++
		}
	}
	return float64(n) / float64(len(d)+1)
}
