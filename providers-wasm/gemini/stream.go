package main

import (
	"strconv"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// streamState is what adapt_stream keeps between batches. It is encoded as
// a small JSON object (the host stores it opaquely), with candidate sets
// as bit masks: candidate indexes are below 8 in practice (candidateCount
// is capped by Google), 64 is ample.
type streamState struct {
	id      string
	created int64
	model   string
	role    uint64 // candidates whose role chunk was sent
	calls   uint64 // candidates that called a function
	tools   int    // next tool call index
	usage   []byte // latest unified usage, sent once at the end
}

func decodeStreamState(b []byte) (streamState, error) {
	var st streamState
	if len(b) == 0 {
		return st, nil
	}
	// The state is small; validating it keeps a corrupt blob from being
	// copied (usage) into the output.
	if !validJSON(b) {
		return st, pluginsdk.Reject(500, "adapter-gemini: corrupt stream state")
	}
	ok := forEachMember(b, func(k, v []byte) bool {
		n, _ := strconv.ParseUint(string(v), 10, 64)
		switch string(k) {
		case "id":
			st.id = unquote(v)
		case "created":
			st.created = int64(n)
		case "model":
			st.model = unquote(v)
		case "role":
			st.role = n
		case "calls":
			st.calls = n
		case "tools":
			st.tools = int(n)
		case "usage":
			if isObject(v) {
				st.usage = append([]byte(nil), v...) // input is only valid during the call
			}
		}
		return true
	})
	if !ok {
		return st, pluginsdk.Reject(500, "adapter-gemini: corrupt stream state")
	}
	return st, nil
}

func (st *streamState) encode(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonx.AppendString(dst, st.id)
	dst = append(dst, `,"created":`...)
	dst = strconv.AppendInt(dst, st.created, 10)
	dst = append(dst, `,"model":`...)
	dst = jsonx.AppendString(dst, st.model)
	dst = append(dst, `,"role":`...)
	dst = strconv.AppendUint(dst, st.role, 10)
	dst = append(dst, `,"calls":`...)
	dst = strconv.AppendUint(dst, st.calls, 10)
	dst = append(dst, `,"tools":`...)
	dst = strconv.AppendInt(dst, int64(st.tools), 10)
	if st.usage != nil {
		dst = append(dst, `,"usage":`...)
		dst = append(dst, st.usage...)
	}
	return append(dst, '}')
}

// adaptStream maps a batch of SSE events, each a GenerateContentResponse,
// to a JSON array of chat.completion.chunk objects. Usage is cumulative in
// every Gemini event, so only the latest is kept and sent in one final
// chunk (choices []) when the stream ends, as OpenAI's include_usage does.
func adaptStream(dst []byte, st *streamState, batch []byte, end bool) ([]byte, error) {
	if !isArray(batch) {
		return nil, badUpstream("stream batch is not an array of events")
	}
	dst = append(dst, '[')
	var err error
	forEachElem(batch, func(_ int, ev []byte) {
		if err != nil {
			return
		}
		data := get(ev, "data")
		if !isObject(data) {
			return // "[DONE]" or an empty keep-alive: nothing to map
		}
		if e := get(data, "error"); e != nil {
			err = streamError(e)
			return
		}
		dst = appendStreamEvent(dst, st, data)
	})
	if err != nil {
		return nil, err
	}
	if end && st.usage != nil {
		dst = appendComma(dst)
		dst = appendChunkHead(dst, st)
		dst = append(dst, `"choices":[],"usage":`...)
		dst = append(dst, st.usage...)
		dst = append(dst, '}')
		st.usage = nil
	}
	return append(dst, ']'), nil
}

func appendChunkHead(dst []byte, st *streamState) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonx.AppendString(dst, st.id)
	dst = append(dst, `,"object":"chat.completion.chunk","created":`...)
	dst = strconv.AppendInt(dst, st.created, 10)
	dst = append(dst, `,"model":`...)
	dst = jsonx.AppendString(dst, st.model)
	return append(dst, ',')
}

// appendDelta writes one chunk for candidate idx whose delta members are
// written by body; the role goes into the candidate's first delta.
func appendDelta(dst []byte, st *streamState, idx int, finish string, body func([]byte) []byte) []byte {
	dst = appendComma(dst)
	dst = appendChunkHead(dst, st)
	dst = append(dst, `"choices":[{"index":`...)
	dst = strconv.AppendInt(dst, int64(idx), 10)
	dst = append(dst, `,"delta":{`...)
	if bit := candBit(idx); st.role&bit == 0 {
		st.role |= bit
		dst = append(dst, `"role":"assistant"`...)
	}
	if body != nil {
		dst = body(dst)
	}
	dst = append(dst, `},"finish_reason":`...)
	if finish == "" {
		dst = append(dst, "null"...)
	} else {
		dst = jsonx.AppendString(dst, finish)
	}
	return append(dst, "}]}"...)
}

func candBit(idx int) uint64 {
	if idx < 0 || idx > 63 {
		return 1 << 63
	}
	return 1 << uint(idx)
}

// appendStreamEvent maps one GenerateContentResponse to chunks: one per
// text, thought or function call part, then a finish chunk when the
// candidate carries a finishReason. Gemini sends a function call whole,
// so each becomes a complete tool_call delta.
func appendStreamEvent(dst []byte, st *streamState, data []byte) []byte {
	var cands, feedback []byte
	forEachMember(data, func(k, v []byte) bool {
		switch string(k) {
		case "candidates":
			cands = v
		case "usageMetadata":
			if isObject(v) {
				st.usage = appendUsage(st.usage[:0], v)
			}
		case "promptFeedback":
			feedback = v
		case "modelVersion":
			if st.model == "" {
				st.model = unquote(v)
			}
		case "responseId":
			if st.id == "" {
				st.id = completionID(unquote(v))
			}
		}
		return true
	})
	if st.id == "" {
		st.id = completionID("")
	}
	if st.created == 0 {
		st.created = now()
	}
	if st.model == "" {
		st.model = "gemini"
	}
	if cands == nil {
		if get(feedback, "blockReason") != nil {
			dst = appendDelta(dst, st, 0, "", func(d []byte) []byte { return d })
			dst = appendDelta(dst, st, 0, "content_filter", nil)
		}
		return dst
	}
	var buf [8]part
	parts := buf[:0]
	forEachElem(cands, func(_ int, c []byte) {
		idx := int(getInt(c, "index"))
		bit := candBit(idx)
		emitted := false
		parts = readParts(parts[:0], c)
		for _, p := range parts {
			if p.call != nil {
				k := st.tools
				st.tools++
				st.calls |= bit
				dst = appendDelta(dst, st, idx, "", func(d []byte) []byte {
					d = appendComma(d)
					d = append(d, `"tool_calls":[`...)
					d = appendToolCall(d, p.call, p.sig, k, true)
					return append(d, ']')
				})
				emitted = true
				continue
			}
			if len(p.text) <= 2 {
				continue
			}
			key := `"content":`
			if p.thought {
				key = `"reasoning_content":`
			}
			dst = appendDelta(dst, st, idx, "", func(d []byte) []byte {
				d = appendComma(d)
				d = append(d, key...)
				return append(d, p.text...)
			})
			emitted = true
		}
		if !emitted && st.role&bit == 0 {
			// The role chunk first, even when the first event is empty.
			dst = appendDelta(dst, st, idx, "", func(d []byte) []byte { return append(d, `,"content":""`...) })
		}
		if fr := get(c, "finishReason"); isString(fr) {
			dst = appendDelta(dst, st, idx, finishReason(unquote(fr), st.calls&bit != 0), nil)
		}
	})
	return dst
}
