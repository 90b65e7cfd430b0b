package main

import (
	"bytes"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// stopReason maps a chat finish_reason back to a Messages stop_reason.
func stopReason(finish string) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	default:
		return "end_turn"
	}
}

// readUnifiedUsage is the inverse of usageCounts.write: Messages counts
// input without the cached part, which it reports separately.
func readUnifiedUsage(raw []byte) usageCounts {
	var u usageCounts
	var prompt int64
	eachField(raw, func(k, v []byte) bool {
		switch string(k) {
		case "prompt_tokens":
			prompt, _ = intOf(v)
		case "completion_tokens":
			u.output, _ = intOf(v)
		case "prompt_tokens_details":
			u.cacheRead, _ = intOf(get(v, "cached_tokens"))
			u.cacheWrite, _ = intOf(get(v, "cache_write_tokens"))
		}
		return true
	})
	u.input = max(prompt-u.cacheRead-u.cacheWrite, 0)
	return u
}

func (u usageCounts) writeNative(e *enc) {
	e.obj()
	e.kint("input_tokens", u.input)
	e.kint("cache_creation_input_tokens", u.cacheWrite)
	e.kint("cache_read_input_tokens", u.cacheRead)
	e.kint("output_tokens", u.output)
	e.endObj()
}

// EgressResponse implements egress_response: a unified chat.completion (or
// error envelope) in, a Messages response out.
func (a *Adapter) EgressResponse(unified []byte) (pluginsdk.Output, error) {
	unified = bytes.TrimSpace(unified)
	if !jsonx.Valid(unified) || !isObject(unified) {
		return pluginsdk.Output{}, badUpstream("egress_response: input is not a JSON object")
	}
	if errObj := get(unified, "error"); isObject(errObj) {
		return pluginsdk.Replace(nativeError(errObj)), nil
	}
	var id, model, choices, usage []byte
	eachField(unified, func(k, v []byte) bool {
		switch string(k) {
		case "id":
			id = v
		case "model":
			model = v
		case "choices":
			choices = v
		case "usage":
			usage = v
		}
		return true
	})
	var choice []byte
	eachElem(choices, func(c []byte) {
		if choice == nil {
			choice = c
		}
	})
	msg := get(choice, "message")
	var e enc
	e.b = make([]byte, 0, len(unified)+128)
	e.obj()
	e.kraw("id", orEmpty(id))
	e.kstr("type", "message")
	e.kstr("role", "assistant")
	e.kraw("model", orEmpty(model))
	e.key("content")
	e.arr()
	writeNativeContent(&e, msg)
	e.endArr()
	e.kstr("stop_reason", stopReason(str(get(choice, "finish_reason"))))
	e.key("stop_sequence")
	e.null()
	e.key("usage")
	readUnifiedUsage(usage).writeNative(&e)
	e.endObj()
	return pluginsdk.Replace(e.b), nil
}

// writeNativeContent writes the content blocks of a chat message: thinking
// first, then text, then tool_use, the order Anthropic answers in.
func writeNativeContent(e *enc, msg []byte) {
	if tb := get(msg, "thinking_blocks"); isArray(tb) {
		eachElem(tb, func(b []byte) {
			e.elem()
			e.raw(b)
		})
	} else if r := get(msg, "reasoning_content"); isString(r) && len(r) > 2 {
		// Reasoning from a provider without signatures still shows as
		// thinking; it cannot be sent back to Anthropic, which is fine
		// for a client of another provider.
		e.elem()
		e.obj()
		e.kstr("type", "thinking")
		e.kraw("thinking", r)
		e.kstr("signature", "")
		e.endObj()
	}
	switch c := get(msg, "content"); {
	case isString(c) && len(c) > 2:
		e.elem()
		e.obj()
		e.kstr("type", "text")
		e.kraw("text", c)
		e.endObj()
	case isArray(c):
		eachElem(c, func(p []byte) {
			if t := get(p, "text"); isString(t) && len(t) > 2 {
				e.elem()
				e.obj()
				e.kstr("type", "text")
				e.kraw("text", t)
				e.endObj()
			}
		})
	}
	eachElem(get(msg, "tool_calls"), func(tc []byte) {
		fn := get(tc, "function")
		input, ok := argumentsObject(get(fn, "arguments"))
		if !ok {
			// A model's broken arguments are still shown, not dropped.
			input = append(append([]byte(`{"_raw_arguments":`), orEmpty(get(fn, "arguments"))...), '}')
		}
		e.elem()
		e.obj()
		e.kstr("type", "tool_use")
		e.kraw("id", orEmpty(get(tc, "id")))
		e.kraw("name", orEmpty(get(fn, "name")))
		e.kraw("input", input)
		e.endObj()
	})
}

// nativeError maps a unified error object to a Messages error body.
func nativeError(errObj []byte) []byte {
	typ := "api_error"
	switch t := str(get(errObj, "type")); t {
	case "invalid_request_error", "authentication_error", "permission_error", "not_found_error",
		"request_too_large", "overloaded_error", "rate_limit_error":
		typ = t
	case "rate_limit_exceeded":
		typ = "rate_limit_error"
	}
	var e enc
	e.obj()
	e.kstr("type", "error")
	e.key("error")
	e.obj()
	e.kstr("type", typ)
	e.kraw("message", orEmpty(get(errObj, "message")))
	e.endObj()
	e.endObj()
	return e.b
}

// egressState is egress_stream's per-stream state.
type egressState struct {
	id, model []byte
	started   bool
	// open is the type of the open content block ("" for none), block the
	// index the next block gets, tool the unified index of the open
	// tool_use block.
	open  string
	block int64
	tool  int64
	stop  string
	usage usageCounts
	// gotUsage: a usage chunk arrived, so message_delta can go out.
	gotUsage, done bool
	// estimate is the host's estimate of the input tokens (state "e",
	// seeded before the first batch): message_start carries it when the
	// first chunk has no usage, as upstreams that report usage only at
	// the end (OpenAI's include_usage) do. message_delta then carries the
	// real count, which the Anthropic SDKs read; clients that read input
	// tokens from message_start only (LangChain) see the estimate.
	estimate int64
}

func (s *egressState) decode(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if !jsonx.Valid(b) || !eachField(b, func(k, v []byte) bool {
		switch string(k) {
		case "id":
			s.id = v
		case "model":
			s.model = v
		case "s":
			s.started = true
		case "o":
			s.open = str(v)
		case "b":
			s.block, _ = intOf(v)
		case "t":
			s.tool, _ = intOf(v)
		case "r":
			s.stop = str(v)
		case "u":
			s.usage = readUnifiedUsage(v)
			s.gotUsage = true
		case "d":
			s.done = true
		case "e":
			s.estimate, _ = intOf(v)
		}
		return true
	}) {
		return pluginsdk.Reject(500, "egress_stream: corrupt stream state")
	}
	return nil
}

func (s *egressState) encode() []byte {
	var e enc
	e.obj()
	if s.id != nil {
		e.kraw("id", s.id)
	}
	if s.model != nil {
		e.kraw("model", s.model)
	}
	if s.started {
		e.kint("s", 1)
	}
	if s.open != "" {
		e.kstr("o", s.open)
	}
	e.kint("b", s.block)
	e.kint("t", s.tool)
	if s.stop != "" {
		e.kstr("r", s.stop)
	}
	if s.gotUsage {
		e.key("u")
		s.usage.write(&e)
	}
	if s.done {
		e.kint("d", 1)
	}
	if s.estimate > 0 && !s.started {
		e.kint("e", s.estimate)
	}
	e.endObj()
	return e.b
}

// eventWriter appends native events, {"event": name, "data": {...}}, to a
// JSON array; data always carries "type" = name, as Anthropic sends it.
type eventWriter struct {
	e enc
	n int
}

// begin opens an event and its data object; the caller adds members and
// calls end.
func (w *eventWriter) begin(name string) {
	if w.n == 0 {
		w.e.arr()
	}
	w.n++
	w.e.elem()
	w.e.obj()
	w.e.kstr("event", name)
	w.e.key("data")
	w.e.obj()
	w.e.kstr("type", name)
}

func (w *eventWriter) end() {
	w.e.endObj()
	w.e.endObj()
}

// EgressStream implements egress_stream: unified chunks in, Messages SSE
// events out, tracking the open content block across batches.
func (a *Adapter) EgressStream(in pluginsdk.StreamInput) (pluginsdk.Output, error) {
	var st egressState
	if err := st.decode(in.State); err != nil {
		return pluginsdk.Output{}, err
	}
	if !jsonx.Valid(in.Batch) || !isArray(in.Batch) {
		return pluginsdk.Output{}, badUpstream("egress_stream: batch is not a JSON array")
	}
	var w eventWriter
	var err error
	eachElem(in.Batch, func(ch []byte) {
		if err == nil && isObject(ch) && !st.done {
			err = egressChunk(&w, &st, ch)
		}
	})
	if err != nil {
		return pluginsdk.Output{}, err
	}
	// Without a usage chunk (a provider that sends none) the message is
	// closed when the stream ends.
	if in.End && st.started && !st.done {
		finishMessage(&w, &st)
	}
	out := pluginsdk.Output{Status: pluginsdk.StatusOK, State: st.encode()}
	if w.n > 0 {
		w.e.endArr()
		out.Body = w.e.b
	} else {
		out.Status = pluginsdk.StatusNoOutput
	}
	return out, nil
}

func egressChunk(w *eventWriter, st *egressState, ch []byte) error {
	if errObj := get(ch, "error"); isObject(errObj) {
		w.begin("error")
		w.e.key("error")
		w.e.raw(get(nativeError(errObj), "error"))
		w.end()
		st.done = true
		return nil
	}
	if !st.started {
		st.started = true
		if id := get(ch, "id"); isString(id) {
			st.id = id
		}
		if m := get(ch, "model"); isString(m) {
			st.model = m
		}
		w.begin("message_start")
		w.e.key("message")
		w.e.obj()
		w.e.kraw("id", orEmpty(st.id))
		w.e.kstr("type", "message")
		w.e.kstr("role", "assistant")
		w.e.kraw("model", orEmpty(st.model))
		w.e.key("content")
		w.e.raw([]byte("[]"))
		w.e.key("stop_reason")
		w.e.null()
		w.e.key("stop_sequence")
		w.e.null()
		w.e.key("usage")
		// Usage is mostly known only at the end (message_delta repeats
		// it whole); until then the input count is the host's estimate.
		start := usageCounts{input: st.estimate}
		if u := get(ch, "usage"); isObject(u) {
			start = readUnifiedUsage(u)
			start.output = 0
		}
		start.writeNative(&w.e)
		w.e.endObj()
		w.end()
	}
	if u := get(ch, "usage"); isObject(u) {
		st.usage = readUnifiedUsage(u)
		st.gotUsage = true
	}
	eachElem(get(ch, "choices"), func(c []byte) {
		d := get(c, "delta")
		if r := get(d, "reasoning_content"); isString(r) && len(r) > 2 {
			openBlock(w, st, "thinking", nil)
			delta(w, st, "thinking_delta", "thinking", r)
		}
		eachElem(get(d, "thinking_blocks"), func(tb []byte) {
			if sig := get(tb, "signature"); isString(sig) && len(sig) > 2 {
				openBlock(w, st, "thinking", nil)
				delta(w, st, "signature_delta", "signature", sig)
			}
		})
		if t := get(d, "content"); isString(t) && len(t) > 2 {
			openBlock(w, st, "text", nil)
			delta(w, st, "text_delta", "text", t)
		}
		eachElem(get(d, "tool_calls"), func(tc []byte) {
			idx, _ := intOf(get(tc, "index"))
			fn := get(tc, "function")
			if id := get(tc, "id"); isString(id) || st.open != "tool_use" || st.tool != idx {
				st.tool = idx
				openBlock(w, st, "tool_use", tc)
			}
			if args := get(fn, "arguments"); isString(args) && len(args) > 2 {
				delta(w, st, "input_json_delta", "partial_json", args)
			}
		})
		if fr := get(c, "finish_reason"); isString(fr) {
			closeBlock(w, st)
			st.stop = stopReason(str(fr))
		}
	})
	// OpenAI sends usage in a chunk after the one with finish_reason: the
	// message ends once both are known.
	if st.stop != "" && st.gotUsage {
		finishMessage(w, st)
	}
	return nil
}

// openBlock makes a block of typ the open one, closing another first. A
// new tool call always opens a new block.
func openBlock(w *eventWriter, st *egressState, typ string, toolCall []byte) {
	if st.open == typ && toolCall == nil {
		return
	}
	closeBlock(w, st)
	w.begin("content_block_start")
	w.e.kint("index", st.block)
	w.e.key("content_block")
	w.e.obj()
	w.e.kstr("type", typ)
	switch typ {
	case "text":
		w.e.kstr("text", "")
	case "thinking":
		w.e.kstr("thinking", "")
		w.e.kstr("signature", "")
	case "tool_use":
		w.e.kraw("id", orEmpty(get(toolCall, "id")))
		w.e.kraw("name", orEmpty(get(get(toolCall, "function"), "name")))
		w.e.key("input")
		w.e.raw([]byte("{}"))
	}
	w.e.endObj()
	w.end()
	st.open = typ
}

func closeBlock(w *eventWriter, st *egressState) {
	if st.open == "" {
		return
	}
	w.begin("content_block_stop")
	w.e.kint("index", st.block)
	w.end()
	st.open = ""
	st.block++
}

// delta writes a content_block_delta on the open block; value is a raw
// JSON string.
func delta(w *eventWriter, st *egressState, typ, field string, value []byte) {
	w.begin("content_block_delta")
	w.e.kint("index", st.block)
	w.e.key("delta")
	w.e.obj()
	w.e.kstr("type", typ)
	w.e.kraw(field, value)
	w.e.endObj()
	w.end()
}

func finishMessage(w *eventWriter, st *egressState) {
	closeBlock(w, st)
	stop := st.stop
	if stop == "" {
		stop = "end_turn"
	}
	w.begin("message_delta")
	w.e.key("delta")
	w.e.obj()
	w.e.kstr("stop_reason", stop)
	w.e.key("stop_sequence")
	w.e.null()
	w.e.endObj()
	w.e.key("usage")
	st.usage.writeNative(&w.e)
	w.end()
	w.begin("message_stop")
	w.end()
	st.done = true
}
