package main

import (
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// streamState is what adapt_stream keeps between batches, in the opaque
// state blob the host stores per stream (any instance may serve the next
// batch, so nothing lives in the adapter).
type streamState struct {
	id, model []byte // raw JSON strings from message_start
	created   int64
	usage     usageCounts
	// toolBlocks lists the content-block indexes of tool_use blocks in
	// order; a block's position is its tool_calls index.
	toolBlocks []int64
	// roleSent: the role chunk has gone out. It is held back until the
	// first output so that an error event right after message_start still
	// comes before any chunk, and the host can retry or fall back.
	roleSent  bool
	usageSent bool
}

func (s *streamState) decode(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if !jsonx.Valid(b) || !eachField(b, func(k, v []byte) bool {
		switch string(k) {
		case "id":
			s.id = v
		case "model":
			s.model = v
		case "created":
			s.created, _ = intOf(v)
		case "u":
			var n [4]int64
			i := 0
			eachElem(v, func(x []byte) {
				if i < len(n) {
					n[i], _ = intOf(x)
				}
				i++
			})
			s.usage = usageCounts{input: n[0], output: n[1], cacheRead: n[2], cacheWrite: n[3]}
		case "tb":
			eachElem(v, func(x []byte) {
				n, _ := intOf(x)
				s.toolBlocks = append(s.toolBlocks, n)
			})
		case "r":
			s.roleSent = true
		case "d":
			s.usageSent = true
		}
		return true
	}) {
		return pluginsdk.Reject(500, "adapt_stream: corrupt stream state")
	}
	return nil
}

func (s *streamState) encode() []byte {
	var e enc
	e.obj()
	if s.id != nil {
		e.kraw("id", s.id)
	}
	if s.model != nil {
		e.kraw("model", s.model)
	}
	e.kint("created", s.created)
	e.key("u")
	e.arr()
	for _, n := range []int64{s.usage.input, s.usage.output, s.usage.cacheRead, s.usage.cacheWrite} {
		e.elem()
		e.int(n)
	}
	e.endArr()
	if len(s.toolBlocks) > 0 {
		e.key("tb")
		e.arr()
		for _, n := range s.toolBlocks {
			e.elem()
			e.int(n)
		}
		e.endArr()
	}
	if s.roleSent {
		e.kint("r", 1)
	}
	if s.usageSent {
		e.kint("d", 1)
	}
	e.endObj()
	return e.b
}

func (s *streamState) toolIndex(block int64) int {
	for i, b := range s.toolBlocks {
		if b == block {
			return i
		}
	}
	return -1
}

// chunkWriter appends unified chunks to one JSON array.
type chunkWriter struct {
	e  enc
	st *streamState
	n  int
}

// begin opens a chunk and its choices[0].delta, sending the held-back
// role chunk first when this is the first output of the stream.
func (w *chunkWriter) begin() {
	if !w.st.roleSent {
		w.st.roleSent = true
		w.begin()
		w.e.kstr("role", "assistant")
		w.e.kstr("content", "")
		w.finish(nil)
	}
	w.head()
	w.e.key("choices")
	w.e.arr()
	w.e.elem()
	w.e.obj()
	w.e.kint("index", 0)
	w.e.key("delta")
	w.e.obj()
}

func (w *chunkWriter) head() {
	e := &w.e
	if w.n == 0 {
		e.arr()
	}
	w.n++
	e.elem()
	e.obj()
	e.key("id")
	if w.st.id != nil {
		e.raw(w.st.id)
	} else {
		e.str("")
	}
	e.kstr("object", "chat.completion.chunk")
	e.kint("created", w.st.created)
	e.key("model")
	if w.st.model != nil {
		e.raw(w.st.model)
	} else {
		e.str("")
	}
}

// finish closes what begin opened, with finish_reason (nil = null).
func (w *chunkWriter) finish(reason *string) {
	e := &w.e
	e.endObj() // delta
	e.key("finish_reason")
	if reason != nil {
		e.str(*reason)
	} else {
		e.null()
	}
	e.endObj() // choice
	e.endArr() // choices
	e.endObj() // chunk
}

// usage writes the final usage chunk: no choices, only usage, as OpenAI
// does with stream_options.include_usage. The host decides whether the
// client gets it.
func (w *chunkWriter) usage() {
	w.st.usageSent = true
	w.head()
	w.e.key("choices")
	w.e.arr()
	w.e.endArr()
	w.e.key("usage")
	w.st.usage.write(&w.e)
	w.e.endObj()
}

func (w *chunkWriter) result() []byte {
	if w.n == 0 {
		return nil
	}
	w.e.endArr()
	return w.e.b
}

// AdaptStream implements adapt_stream: a batch of Messages SSE events in,
// chat.completion.chunk objects out.
func (a *Adapter) AdaptStream(in pluginsdk.StreamInput) (pluginsdk.Output, error) {
	var st streamState
	if err := st.decode(in.State); err != nil {
		return pluginsdk.Output{}, err
	}
	if !a.valid(in.Batch) || !isArray(in.Batch) {
		return pluginsdk.Output{}, badUpstream("adapt_stream: batch is not a JSON array")
	}
	w := chunkWriter{st: &st}
	var err error
	eachElem(in.Batch, func(ev []byte) {
		if err == nil {
			err = a.streamEvent(&w, ev)
		}
	})
	if err != nil {
		return pluginsdk.Output{}, err
	}
	// A stream cut before message_stop still reports what was counted,
	// so the tokens already spent are billed.
	if in.End && !st.usageSent && st.id != nil {
		w.usage()
	}
	out := pluginsdk.Output{Status: pluginsdk.StatusOK, Body: w.result(), State: st.encode()}
	if out.Body == nil {
		out.Status = pluginsdk.StatusNoOutput
	}
	return out, nil
}

// streamEvent maps one framed SSE event.
func (a *Adapter) streamEvent(w *chunkWriter, ev []byte) error {
	if !isObject(ev) {
		return badUpstream("adapt_stream: event is not an object")
	}
	data := get(ev, "data")
	name := str(get(ev, "event"))
	if name == "" {
		name = str(get(data, "type"))
	}
	st := w.st
	switch name {
	case "message_start":
		msg := get(data, "message")
		if id := get(msg, "id"); isString(id) {
			st.id = id
		}
		if m := get(msg, "model"); isString(m) {
			st.model = m
		}
		st.created = a.now().Unix()
		st.usage.read(get(msg, "usage"))
	case "content_block_start":
		idx, _ := intOf(get(data, "index"))
		cb := get(data, "content_block")
		switch str(get(cb, "type")) {
		case "text":
			if t := get(cb, "text"); isString(t) && len(t) > 2 {
				w.begin()
				w.e.kraw("content", t)
				w.finish(nil)
			}
		case "thinking":
			if t := get(cb, "thinking"); isString(t) && len(t) > 2 {
				w.begin()
				w.e.kraw("reasoning_content", t)
				w.finish(nil)
			}
		case "redacted_thinking":
			w.begin()
			w.e.key("thinking_blocks")
			w.e.arr()
			w.e.elem()
			w.e.raw(cb)
			w.e.endArr()
			w.finish(nil)
		case "tool_use":
			st.toolBlocks = append(st.toolBlocks, idx)
			w.begin()
			w.e.key("tool_calls")
			w.e.arr()
			w.e.elem()
			w.e.obj()
			w.e.kint("index", int64(len(st.toolBlocks)-1))
			w.e.key("id")
			w.e.raw(orEmpty(get(cb, "id")))
			w.e.kstr("type", "function")
			w.e.key("function")
			w.e.obj()
			w.e.key("name")
			w.e.raw(orEmpty(get(cb, "name")))
			w.e.kstr("arguments", "")
			w.e.endObj()
			w.e.endObj()
			w.e.endArr()
			w.finish(nil)
		}
	case "content_block_delta":
		idx, _ := intOf(get(data, "index"))
		d := get(data, "delta")
		switch str(get(d, "type")) {
		case "text_delta":
			if t := get(d, "text"); isString(t) && len(t) > 2 {
				w.begin()
				w.e.kraw("content", t)
				w.finish(nil)
			}
		case "input_json_delta":
			// The first delta of a tool block is often empty: nothing to say.
			p := get(d, "partial_json")
			ti := st.toolIndex(idx)
			if !isString(p) || len(p) == 2 || ti < 0 {
				return nil
			}
			w.begin()
			w.e.key("tool_calls")
			w.e.arr()
			w.e.elem()
			w.e.obj()
			w.e.kint("index", int64(ti))
			w.e.key("function")
			w.e.obj()
			w.e.kraw("arguments", p)
			w.e.endObj()
			w.e.endObj()
			w.e.endArr()
			w.finish(nil)
		case "thinking_delta":
			if t := get(d, "thinking"); isString(t) && len(t) > 2 {
				w.begin()
				w.e.kraw("reasoning_content", t)
				w.finish(nil)
			}
		case "signature_delta":
			// The signature closes a thinking block; clients that send
			// thinking back need it, in the same thinking_blocks shape as
			// non-streamed answers.
			if sig := get(d, "signature"); isString(sig) {
				w.begin()
				w.e.key("thinking_blocks")
				w.e.arr()
				w.e.elem()
				w.e.obj()
				w.e.kstr("type", "thinking")
				w.e.kstr("thinking", "")
				w.e.kraw("signature", sig)
				w.e.endObj()
				w.e.endArr()
				w.finish(nil)
			}
		}
	case "message_delta":
		st.usage.read(get(data, "usage"))
		if stop := get(get(data, "delta"), "stop_reason"); isString(stop) {
			r := finishReason(str(stop))
			w.begin()
			w.finish(&r)
		}
	case "message_stop":
		if !st.usageSent {
			w.usage()
		}
	case "error":
		return streamError(data)
	}
	// ping, content_block_stop and event types added to the API later carry
	// nothing a chat client needs.
	return nil
}

func orEmpty(raw []byte) []byte {
	if isString(raw) {
		return raw
	}
	return []byte(`""`)
}

// streamError maps an in-stream error event to the HTTP status it stands
// for, so the host can retry or fall back when no content was sent yet.
func streamError(data []byte) error {
	errObj := get(data, "error")
	typ, msg := str(get(errObj, "type")), str(get(errObj, "message"))
	if typ == "" && isString(data) {
		msg = str(data)
	}
	code := 500
	switch typ {
	case "overloaded_error":
		code = 529
	case "rate_limit_error":
		code = 429
	case "timeout_error":
		code = 504
	}
	if msg == "" {
		msg = "stream error"
	}
	if typ == "" {
		typ = "error"
	}
	return &pluginsdk.Error{Code: code, Message: "Anthropic " + typ + ": " + msg}
}
