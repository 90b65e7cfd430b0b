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

// decode reads the state blob. It is the adapter's own output, but it
// crossed the host, so it is checked like any input (validated unless the
// host is trusted, see Adapter.skipValidation).
func (s *streamState) decode(b []byte, validate bool) error {
	if len(b) == 0 {
		return nil
	}
	r := jsonx.NewReader(b)
	if validate && !jsonx.Valid(b) || !r.Object() {
		return errCorruptState()
	}
	for k, ok := r.Member(); ok; k, ok = r.Member() {
		switch string(k) {
		case "id":
			s.id = r.Value()
		case "model":
			s.model = r.Value()
		case "created":
			s.created, _ = intOf(r.Value())
		case "u":
			var n [4]int64
			if r.Array() {
				for i := 0; r.Element(); i++ {
					if i < len(n) {
						n[i], _ = intOf(r.Value())
					}
				}
			}
			s.usage = usageCounts{input: n[0], output: n[1], cacheRead: n[2], cacheWrite: n[3]}
		case "tb":
			if r.Array() {
				for r.Element() {
					n, _ := intOf(r.Value())
					s.toolBlocks = append(s.toolBlocks, n)
				}
			}
		case "r":
			s.roleSent = true
		case "d":
			s.usageSent = true
		}
	}
	if r.Failed() {
		return errCorruptState()
	}
	return nil
}

func errCorruptState() error { return pluginsdk.Reject(500, "adapt_stream: corrupt stream state") }

// encode appends the state blob to e.
func (s *streamState) encode(e *enc) {
	e.obj()
	if s.id != nil {
		e.kraw("id", s.id)
	}
	if s.model != nil {
		e.kraw("model", s.model)
	}
	e.kint("created", s.created)
	e.lit(`,"u":[`)
	e.int(s.usage.input)
	e.lit(",")
	e.int(s.usage.output)
	e.lit(",")
	e.int(s.usage.cacheRead)
	e.lit(",")
	e.int(s.usage.cacheWrite)
	e.endArr()
	if len(s.toolBlocks) > 0 {
		e.lit(`,"tb":[`)
		for _, n := range s.toolBlocks {
			e.elem()
			e.int(n)
		}
		e.endArr()
	}
	if s.roleSent {
		e.lit(`,"r":1`)
	}
	if s.usageSent {
		e.lit(`,"d":1`)
	}
	e.endObj()
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
		w.e.lit(`"role":"assistant","content":""`)
		w.finish("")
	}
	w.head()
	w.e.lit(`,"choices":[{"index":0,"delta":{`)
}

func (w *chunkWriter) head() {
	e := &w.e
	if w.n == 0 {
		e.arr()
	}
	w.n++
	e.elem()
	e.lit(`{"id":`)
	if w.st.id != nil {
		e.raw(w.st.id)
	} else {
		e.lit(`""`)
	}
	e.lit(`,"object":"chat.completion.chunk","created":`)
	e.int(w.st.created)
	e.lit(`,"model":`)
	if w.st.model != nil {
		e.raw(w.st.model)
	} else {
		e.lit(`""`)
	}
}

// finish closes what begin opened, with finish_reason ("" = null).
func (w *chunkWriter) finish(reason string) {
	if reason == "" {
		w.e.lit(`},"finish_reason":null}]}`)
		return
	}
	w.e.lit(`},"finish_reason":"`)
	w.e.lit(reason)
	w.e.lit(`"}]}`)
}

// usage writes the final usage chunk: no choices, only usage, as OpenAI
// does with stream_options.include_usage. The host decides whether the
// client gets it.
func (w *chunkWriter) usage() {
	w.st.usageSent = true
	w.head()
	w.e.lit(`,"choices":[],"usage":`)
	w.st.usage.write(&w.e)
	w.e.endObj()
}

// AdaptStream implements adapt_stream: a batch of Messages SSE events in,
// chat.completion.chunk objects out. The batch is read once, each event
// where it sits; chunks and the new state are written to one buffer.
func (a *Adapter) AdaptStream(in pluginsdk.StreamInput) (pluginsdk.Output, error) {
	var st streamState
	if err := st.decode(in.State, !a.skipValidation); err != nil {
		return pluginsdk.Output{}, err
	}
	if !isArray(in.Batch) || !a.valid(in.Batch) {
		return pluginsdk.Output{}, badUpstream("adapt_stream: batch is not a JSON array")
	}
	w := chunkWriter{st: &st}
	w.e.b = make([]byte, 0, 2*len(in.Batch)+len(in.State)+256)
	r := jsonx.NewReader(in.Batch)
	var err error
	for r.Array(); r.Element(); {
		if err == nil {
			err = a.streamEvent(&w, &r)
		}
	}
	if err != nil {
		return pluginsdk.Output{}, err
	}
	if r.Failed() {
		// Only reachable with validation off.
		return pluginsdk.Output{}, badUpstream("adapt_stream: batch is not a JSON array")
	}
	// A stream cut before message_stop still reports what was counted,
	// so the tokens already spent are billed.
	if in.End && !st.usageSent && st.id != nil {
		w.usage()
	}
	out := pluginsdk.Output{Status: pluginsdk.StatusOK}
	if w.n > 0 {
		w.e.endArr()
		out.Body = w.e.b[:len(w.e.b):len(w.e.b)]
	} else {
		out.Status = pluginsdk.StatusNoOutput
	}
	n := len(w.e.b)
	st.encode(&w.e)
	out.State = w.e.b[n:]
	return out, nil
}

// streamEvent holds the parts of one framed SSE event the mapping reads,
// as spans; like a lookup, the first of a repeated key counts.
type streamEvent struct {
	name, data []byte
	// Members of data.
	typ, index, usage, errObj []byte
	// data.message.
	msgID, msgModel, msgUsage []byte
	// data.content_block and its members.
	block                                        []byte
	blockType, blockText, blockThinking, blockID []byte
	blockName                                    []byte
	// data.delta.
	deltaType, deltaText, deltaJSON, deltaThinking, deltaSig, stopReason []byte
}

// first reads the value the reader is at into *dst unless a value is
// there already (then it is left to be skipped).
func first(r *jsonx.Reader, dst *[]byte) {
	if *dst == nil {
		*dst = r.Value()
	}
}

// read reads the event object the reader is at (the caller checked it is
// an object).
func (ev *streamEvent) read(r *jsonx.Reader) {
	haveData := false
	r.Object()
	for k, ok := r.Member(); ok; k, ok = r.Member() {
		switch string(k) {
		case "event":
			first(r, &ev.name)
		case "data":
			if haveData {
				break
			}
			haveData = true
			start := r.Pos()
			ev.readData(r)
			ev.data = r.Since(start)
		}
	}
}

// readData reads the event's data: an object is read into ev, anything
// else (an error event's text) is read whole.
func (ev *streamEvent) readData(r *jsonx.Reader) {
	if !r.Object() {
		r.Value()
		return
	}
	haveMsg, haveBlock, haveDelta := false, false, false
	for k, ok := r.Member(); ok; k, ok = r.Member() {
		switch string(k) {
		case "type":
			first(r, &ev.typ)
		case "index":
			first(r, &ev.index)
		case "usage":
			first(r, &ev.usage)
		case "error":
			first(r, &ev.errObj)
		case "message":
			// The first "message" counts, object or not.
			if haveMsg {
				break
			}
			haveMsg = true
			if !r.Object() {
				break
			}
			for k2, ok := r.Member(); ok; k2, ok = r.Member() {
				switch string(k2) {
				case "id":
					first(r, &ev.msgID)
				case "model":
					first(r, &ev.msgModel)
				case "usage":
					first(r, &ev.msgUsage)
				}
			}
		case "content_block":
			if haveBlock {
				break
			}
			haveBlock = true
			start := r.Pos()
			if r.Object() {
				for k2, ok := r.Member(); ok; k2, ok = r.Member() {
					switch string(k2) {
					case "type":
						first(r, &ev.blockType)
					case "text":
						first(r, &ev.blockText)
					case "thinking":
						first(r, &ev.blockThinking)
					case "id":
						first(r, &ev.blockID)
					case "name":
						first(r, &ev.blockName)
					}
				}
			} else {
				r.Value()
			}
			ev.block = r.Since(start)
		case "delta":
			if haveDelta {
				break
			}
			haveDelta = true
			if !r.Object() {
				break
			}
			for k2, ok := r.Member(); ok; k2, ok = r.Member() {
				switch string(k2) {
				case "type":
					first(r, &ev.deltaType)
				case "text":
					first(r, &ev.deltaText)
				case "partial_json":
					first(r, &ev.deltaJSON)
				case "thinking":
					first(r, &ev.deltaThinking)
				case "signature":
					first(r, &ev.deltaSig)
				case "stop_reason":
					first(r, &ev.stopReason)
				}
			}
		}
	}
}

// streamEvent maps the framed SSE event the reader is at.
func (a *Adapter) streamEvent(w *chunkWriter, r *jsonx.Reader) error {
	if r.Kind() != '{' {
		return badUpstream("adapt_stream: event is not an object")
	}
	var ev streamEvent
	ev.read(r)
	name := text(ev.name)
	if len(name) == 0 {
		name = text(ev.typ)
	}
	st := w.st
	switch string(name) {
	case "message_start":
		if isString(ev.msgID) {
			st.id = ev.msgID
		}
		if isString(ev.msgModel) {
			st.model = ev.msgModel
		}
		st.created = a.now().Unix()
		st.usage.read(ev.msgUsage)
	case "content_block_start":
		idx, _ := intOf(ev.index)
		switch string(text(ev.blockType)) {
		case "text":
			if t := ev.blockText; isString(t) && len(t) > 2 {
				w.begin()
				w.e.kraw("content", t)
				w.finish("")
			}
		case "thinking":
			if t := ev.blockThinking; isString(t) && len(t) > 2 {
				w.begin()
				w.e.kraw("reasoning_content", t)
				w.finish("")
			}
		case "redacted_thinking":
			w.begin()
			w.e.lit(`"thinking_blocks":[`)
			w.e.raw(ev.block)
			w.e.endArr()
			w.finish("")
		case "tool_use":
			st.toolBlocks = append(st.toolBlocks, idx)
			w.begin()
			w.e.lit(`"tool_calls":[{"index":`)
			w.e.int(int64(len(st.toolBlocks) - 1))
			w.e.lit(`,"id":`)
			w.e.raw(orEmpty(ev.blockID))
			w.e.lit(`,"type":"function","function":{"name":`)
			w.e.raw(orEmpty(ev.blockName))
			w.e.lit(`,"arguments":""}}]`)
			w.finish("")
		}
	case "content_block_delta":
		switch string(text(ev.deltaType)) {
		case "text_delta":
			if t := ev.deltaText; isString(t) && len(t) > 2 {
				w.begin()
				w.e.kraw("content", t)
				w.finish("")
			}
		case "input_json_delta":
			// The first delta of a tool block is often empty: nothing to say.
			idx, _ := intOf(ev.index)
			p := ev.deltaJSON
			ti := st.toolIndex(idx)
			if !isString(p) || len(p) == 2 || ti < 0 {
				return nil
			}
			w.begin()
			w.e.lit(`"tool_calls":[{"index":`)
			w.e.int(int64(ti))
			w.e.lit(`,"function":{"arguments":`)
			w.e.raw(p)
			w.e.lit(`}}]`)
			w.finish("")
		case "thinking_delta":
			if t := ev.deltaThinking; isString(t) && len(t) > 2 {
				w.begin()
				w.e.kraw("reasoning_content", t)
				w.finish("")
			}
		case "signature_delta":
			// The signature closes a thinking block; clients that send
			// thinking back need it, in the same thinking_blocks shape as
			// non-streamed answers.
			if sig := ev.deltaSig; isString(sig) {
				w.begin()
				w.e.lit(`"thinking_blocks":[{"type":"thinking","thinking":"","signature":`)
				w.e.raw(sig)
				w.e.lit(`}]`)
				w.finish("")
			}
		}
	case "message_delta":
		st.usage.read(ev.usage)
		if isString(ev.stopReason) {
			w.begin()
			w.finish(finishReason(string(text(ev.stopReason))))
		}
	case "message_stop":
		if !st.usageSent {
			w.usage()
		}
	case "error":
		return streamError(ev.data, ev.errObj)
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
// errObj is data's "error" member.
func streamError(data, errObj []byte) error {
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
