package main

import (
	"strconv"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// AdaptStream maps a batch of Cohere v2 chat stream events to
// chat.completion.chunk objects:
//
//	message-start      remember the id (no chunk: see below)
//	content-delta      {"content": text}
//	tool-call-start    {"tool_calls":[{index, id, type, function{name, arguments}}]}
//	tool-call-delta    {"tool_calls":[{index, function{arguments}}]}
//	message-end        finish chunk, then a usage chunk (choices [])
//	                   finish_reason ERROR/TIMEOUT, or an error event: *Error
//
// content-start/-end, tool-plan-delta, tool-call-end and citations carry
// nothing for the unified wire. The role chunk is held back until the
// first content, tool call or finish: the host looks for an error until
// the first chunk, so a failure right after message-start still gets a
// retry or fallback instead of a broken stream at the client.
func (a *Adapter) AdaptStream(in pluginsdk.StreamInput) (pluginsdk.Output, error) {
	var st state
	if len(in.State) > 0 && !st.parse(in.State) {
		return pluginsdk.Output{}, reject(500, "adapt_stream: unreadable stream state")
	}
	if !jsonx.Valid(in.Batch) {
		return pluginsdk.Output{}, errMalformed
	}
	w := chunkWriter{b: a.out[:0], st: &st}
	var err error
	ok := jsonx.ForEachElement(in.Batch, 0, func(s, e int) {
		if err == nil {
			err = w.event(in.Batch[s:e])
		}
	})
	a.out = w.b
	if err != nil {
		return pluginsdk.Output{}, err
	}
	if !ok {
		return pluginsdk.Output{}, errMalformed
	}
	a.tmp = st.append(a.tmp[:0])
	out := pluginsdk.Output{Status: pluginsdk.StatusOK, State: a.tmp}
	if w.n == 0 {
		// Keep the state, emit nothing.
		out.Status = pluginsdk.StatusNoOutput
		return out, nil
	}
	w.b = append(w.b, ']')
	a.out = w.b
	out.Body = w.b
	return out, nil
}

// chunkWriter appends chunks to a JSON array as events arrive.
type chunkWriter struct {
	b  []byte
	n  int
	st *state
}

func (w *chunkWriter) event(ev []byte) error {
	var name, data []byte
	jsonx.ForEachMember(ev, 0, func(k []byte, s, e int) {
		switch string(k) {
		case "event":
			name = str(ev, s, e)
		case "data":
			data = ev[s:e]
		}
	})
	if len(data) == 0 || data[0] != '{' {
		if string(name) == "error" {
			return upstreamError("stream error", str(data, 0, len(data)))
		}
		return nil // "[DONE]"-style or keep-alive text: nothing to map
	}
	typ := name
	var delta, id, message []byte
	jsonx.ForEachMember(data, 0, func(k []byte, s, e int) {
		switch string(k) {
		case "type":
			typ = str(data, s, e)
		case "delta":
			delta = data[s:e]
		case "id":
			id = str(data, s, e)
		case "message":
			message = str(data, s, e)
		}
	})
	st := w.st
	switch string(typ) {
	case "message-start":
		if validID(id) {
			st.id = id
		}
	case "content-start", "content-delta":
		if s, e, ok := path(delta, 0, "message", "content", "text"); ok && e-s > 2 && delta[s] == '"' {
			w.role()
			w.begin()
			w.b = append(w.b, `{"content":`...)
			w.b = append(w.b, delta[s:e]...)
			w.end("}", "")
		}
	case "tool-call-start":
		tcs, tce, ok := path(delta, 0, "message", "tool_calls")
		if !ok {
			return nil
		}
		tc := delta[tcs:tce]
		w.role()
		w.begin()
		w.b = append(w.b, `{"tool_calls":[{"index":`...)
		w.b = strconv.AppendInt(w.b, int64(st.tools), 10)
		st.tools++
		w.b = append(w.b, `,"id":`...)
		is, ie, _ := field(tc, 0, "id")
		w.b = appendQuoted(w.b, str(tc, is, ie))
		w.b = append(w.b, `,"type":"function","function":{"name":`...)
		ns, ne, _ := path(tc, 0, "function", "name")
		w.b = appendQuoted(w.b, str(tc, ns, ne))
		w.b = append(w.b, `,"arguments":`...)
		as, ae, _ := path(tc, 0, "function", "arguments")
		w.b = appendQuoted(w.b, str(tc, as, ae))
		w.end("}}]}", "")
	case "tool-call-delta":
		s, e, ok := path(delta, 0, "message", "tool_calls", "function", "arguments")
		if !ok || delta[s] != '"' || st.tools == 0 {
			return nil
		}
		w.role()
		w.begin()
		w.b = append(w.b, `{"tool_calls":[{"index":`...)
		w.b = strconv.AppendInt(w.b, int64(st.tools-1), 10)
		w.b = append(w.b, `,"function":{"arguments":`...)
		w.b = append(w.b, delta[s:e]...)
		w.end("}}]}", "")
	case "message-end":
		fs, fe, _ := field(delta, 0, "finish_reason")
		fr := str(delta, fs, fe)
		if failed(fr) {
			es, ee, _ := field(delta, 0, "error")
			return upstreamError("generation failed ("+string(fr)+")", str(delta, es, ee))
		}
		if st.flags&flagFinished != 0 {
			return nil
		}
		st.flags |= flagFinished
		w.role()
		w.begin()
		w.b = append(w.b, "{}"...)
		w.end("", finishReason(fr))
		if us, ue, ok := field(delta, 0, "usage"); ok && delta[us] == '{' {
			w.sep()
			w.head()
			w.b = append(w.b, `"choices":[],"usage":`...)
			w.b = appendUsage(w.b, delta[us:ue])
			w.b = append(w.b, '}')
		}
	case "error":
		return upstreamError("stream error", message)
	}
	return nil
}

// validID keeps an id only when it can live in the state unchanged.
func validID(id []byte) bool {
	for _, c := range id {
		if c == '|' || c == '\\' || c == '"' || c < 0x20 {
			return false
		}
	}
	return len(id) > 0 && len(id) < 256
}

// role emits the assistant role chunk once, before the first real chunk.
func (w *chunkWriter) role() {
	if w.st.flags&flagRoleSent != 0 {
		return
	}
	w.st.flags |= flagRoleSent
	w.begin()
	w.b = append(w.b, `{"role":"assistant","content":""}`...)
	w.end("", "")
}

func (w *chunkWriter) sep() {
	if w.n == 0 {
		w.b = append(w.b, '[')
	} else {
		w.b = append(w.b, ',')
	}
	w.n++
}

// head writes the members every chunk starts with, up to the choices.
func (w *chunkWriter) head() {
	st := w.st
	if st.created == 0 {
		st.created = now()
	}
	w.b = append(w.b, `{"id":`...)
	w.b = appendQuoted(w.b, st.id)
	w.b = append(w.b, `,"object":"chat.completion.chunk","created":`...)
	w.b = strconv.AppendInt(w.b, st.created, 10)
	w.b = append(w.b, `,"model":`...)
	w.b = appendQuoted(w.b, st.model)
	w.b = append(w.b, ',')
}

// begin opens a chunk up to its delta; the caller writes the delta object
// (possibly leaving closers to end).
func (w *chunkWriter) begin() {
	w.sep()
	w.head()
	w.b = append(w.b, `"choices":[{"index":0,"delta":`...)
}

// end closes the delta with closers and the chunk with finish_reason.
func (w *chunkWriter) end(closers, finish string) {
	w.b = append(w.b, closers...)
	w.b = append(w.b, `,"finish_reason":`...)
	if finish == "" {
		w.b = append(w.b, "null"...)
	} else {
		w.b = append(w.b, '"')
		w.b = append(w.b, finish...)
		w.b = append(w.b, '"')
	}
	w.b = append(w.b, "}]}"...)
}
