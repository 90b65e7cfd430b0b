package main

import (
	"time"
	"unicode/utf8"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// finishReason maps a Messages stop_reason to a chat finish_reason.
func finishReason(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	default: // end_turn, stop_sequence, pause_turn
		return "stop"
	}
}

// usageCounts are the Messages usage fields the unified usage is built from.
type usageCounts struct {
	input, output, cacheRead, cacheWrite int64
}

// read takes the counts present in a usage object; absent or null fields
// keep their value, which is how message_delta updates message_start's.
func (u *usageCounts) read(raw []byte) {
	eachField(raw, func(k, v []byte) bool {
		n, ok := intOf(v)
		if !ok {
			return true
		}
		switch string(k) {
		case "input_tokens":
			u.input = n
		case "output_tokens":
			u.output = n
		case "cache_read_input_tokens":
			u.cacheRead = n
		case "cache_creation_input_tokens":
			u.cacheWrite = n
		}
		return true
	})
}

// write emits the unified usage. Anthropic's input_tokens excludes cached
// input, while prompt_tokens includes it (OpenAI's convention), so cache
// reads and writes are added back and reported again in the details for
// exact cost.
func (u *usageCounts) write(e *enc) {
	prompt := u.input + u.cacheRead + u.cacheWrite
	e.obj()
	e.kint("prompt_tokens", prompt)
	e.kint("completion_tokens", u.output)
	e.kint("total_tokens", prompt+u.output)
	e.key("prompt_tokens_details")
	e.obj()
	e.kint("cached_tokens", u.cacheRead)
	e.kint("cache_write_tokens", u.cacheWrite)
	e.endObj()
	e.endObj()
}

// AdaptResponse implements adapt_response for chat, count_tokens and
// list_models answers. Like adapt_request it reads its input once: the
// upstream body is read where it sits in the input.
func (a *Adapter) AdaptResponse(input []byte) (pluginsdk.Output, error) {
	if !a.valid(input) {
		return pluginsdk.Output{}, badUpstream("adapt_response: input is not JSON")
	}
	var reqType, model, body []byte
	var msg message
	r := jsonx.NewReader(input)
	if !r.Object() {
		return pluginsdk.Output{}, badUpstream("adapt_response: input is not an object")
	}
	for k, ok := r.Member(); ok; k, ok = r.Member() {
		switch string(k) {
		case "request_type":
			reqType = r.Value()
		case "model":
			model = r.Value()
		case "body":
			// Read as a Messages answer whatever the request type (the
			// type may come later); count_tokens and list_models answers
			// use the raw body.
			start := r.Pos()
			msg.read(&r)
			body = r.Since(start)
		}
	}
	if r.Failed() {
		return pluginsdk.Output{}, badUpstream("adapt_response: input is not JSON")
	}
	if !isObject(body) {
		return pluginsdk.Output{}, badUpstream("Anthropic answered a body that is not a JSON object")
	}
	switch string(text(reqType)) {
	case pluginsdk.RequestChat, "":
		out, err := msg.toChat(len(input), model, a.now().Unix())
		return pluginsdk.Replace(out), err
	case pluginsdk.RequestCountTokens:
		n, ok := intOf(msg.inputTokens)
		if !ok {
			return pluginsdk.Output{}, badUpstream("count_tokens answer without input_tokens")
		}
		var e enc
		e.lit(`{"object":"count_tokens","input_tokens":`)
		e.int(n)
		e.endObj()
		return pluginsdk.Replace(e.b), nil
	case pluginsdk.RequestListModels:
		return pluginsdk.Replace(modelList(body)), nil
	default:
		return pluginsdk.Output{}, badRequest("adapter-anthropic does not translate %q responses", text(reqType))
	}
}

// message is what the mapping takes from a Messages answer.
type message struct {
	id, model, stop []byte
	// content: "content" was an array, read into parts.
	content bool
	parts   assistantParts
	usage   usageCounts
	// inputTokens is count_tokens' answer.
	inputTokens []byte
}

// read reads the body the reader is at (anything but an object is left to
// be skipped). A repeated member counts as encoding/json would count it:
// the last one wins, and usage objects update one another.
func (m *message) read(r *jsonx.Reader) {
	*m = message{parts: m.parts.reset()}
	if !r.Object() {
		return
	}
	for k, ok := r.Member(); ok; k, ok = r.Member() {
		switch string(k) {
		case "id":
			m.id = r.Value()
		case "model":
			m.model = r.Value()
		case "content":
			m.content = r.Kind() == '['
			m.parts = m.parts.reset()
			if m.content {
				m.parts.read(r)
			}
		case "stop_reason":
			m.stop = r.Value()
		case "usage":
			m.usage.read(r.Value())
		case "input_tokens":
			// count_tokens answers {"input_tokens": n}; the first one,
			// as a lookup finds it.
			if m.inputTokens == nil {
				m.inputTokens = r.Value()
			}
		}
	}
}

// toChat maps the answer to a chat.completion; n sizes the output.
func (m *message) toChat(n int, fallbackModel []byte, created int64) ([]byte, error) {
	if !m.content {
		return nil, badUpstream("Anthropic answer without a content array")
	}
	var e enc
	e.b = make([]byte, 0, n+256)
	e.lit(`{"id":`)
	if isString(m.id) {
		e.raw(m.id)
	} else {
		e.lit(`""`)
	}
	e.lit(`,"object":"chat.completion","created":`)
	e.int(created)
	e.lit(`,"model":`)
	if isString(m.model) {
		e.raw(m.model)
	} else if isString(fallbackModel) {
		e.strOf(fallbackModel)
	} else {
		e.lit(`""`)
	}
	e.lit(`,"choices":[{"index":0,"message":{"role":"assistant"`)
	m.parts.write(&e)
	e.lit(`},"finish_reason":"`)
	e.lit(finishReason(string(text(m.stop))))
	e.lit(`"}],"usage":`)
	m.usage.write(&e)
	e.endObj()
	return e.b, nil
}

// writeAssistantMessageBody writes the members of a chat assistant message
// that follow its role, for the Messages content blocks in the array
// content.
func writeAssistantMessageBody(e *enc, content []byte) {
	var p assistantParts
	r := jsonx.NewReader(content)
	if r.Kind() == '[' {
		p.read(&r)
	}
	p.write(e)
}

// assistantParts are the content blocks of an answer as spans: text blocks
// are joined into content, tool_use blocks become tool_calls, thinking
// becomes reasoning_content plus thinking_blocks, which keep the
// signatures (and redacted blocks) a client must send back on the next
// turn of a tool-using conversation with thinking on.
type assistantParts struct {
	// text and reasoning join the text and thinking strings.
	text, reasoning joined
	// thinking holds thinking and redacted_thinking blocks as they are.
	thinking [][]byte
	tools    []toolCall
}

// toolCall is a tool_use block's id, name and input.
type toolCall struct{ id, name, input []byte }

// joined collects the escaped bodies of JSON strings to be written as one
// string: joining the escaped bodies is joining the texts. The first is
// held inline, as most answers have one text block: no allocation then.
type joined struct {
	first []byte
	more  [][]byte
	n     int
}

func (j *joined) add(body []byte) {
	if j.n == 0 {
		j.first = body
	} else {
		j.more = append(j.more, body)
	}
	j.n++
}

// write writes the joined string.
func (j *joined) write(e *enc) {
	e.b = append(e.b, '"')
	e.b = append(e.b, j.first...)
	for _, t := range j.more {
		e.b = append(e.b, t...)
	}
	e.b = append(e.b, '"')
}

func (p assistantParts) reset() assistantParts {
	return assistantParts{text: joined{more: p.text.more[:0]}, reasoning: joined{more: p.reasoning.more[:0]},
		thinking: p.thinking[:0], tools: p.tools[:0]}
}

// read reads the content array the reader is at.
func (p *assistantParts) read(r *jsonx.Reader) {
	for r.Array(); r.Element(); {
		if r.Kind() != '{' {
			continue
		}
		start := r.Pos()
		// The first of a repeated key, as a lookup would find it.
		var typ, txt, thinking, id, name, input []byte
		r.Object()
		for k, ok := r.Member(); ok; k, ok = r.Member() {
			var dst *[]byte
			switch string(k) {
			case "type":
				dst = &typ
			case "text":
				dst = &txt
			case "thinking":
				dst = &thinking
			case "id":
				dst = &id
			case "name":
				dst = &name
			case "input":
				dst = &input
			}
			if dst != nil && *dst == nil {
				*dst = r.Value()
			}
		}
		switch string(text(typ)) {
		case "text":
			if isString(txt) {
				p.text.add(txt[1 : len(txt)-1])
			}
		case "thinking":
			if isString(thinking) {
				p.reasoning.add(thinking[1 : len(thinking)-1])
			}
			p.thinking = append(p.thinking, r.Since(start))
		case "redacted_thinking":
			p.thinking = append(p.thinking, r.Since(start))
		case "tool_use":
			p.tools = append(p.tools, toolCall{id: id, name: name, input: input})
		}
	}
}

// write writes the members after "role" (each with its leading comma).
func (p *assistantParts) write(e *enc) {
	e.lit(`,"content":`)
	if p.text.n > 0 || len(p.tools) == 0 {
		p.text.write(e)
	} else {
		e.null()
	}
	if p.reasoning.n > 0 {
		e.lit(`,"reasoning_content":`)
		p.reasoning.write(e)
	}
	if len(p.thinking) > 0 {
		e.lit(`,"thinking_blocks":[`)
		for _, b := range p.thinking {
			e.elem()
			e.raw(b)
		}
		e.endArr()
	}
	if len(p.tools) == 0 {
		return
	}
	e.lit(`,"tool_calls":[`)
	for _, t := range p.tools {
		e.elem()
		e.lit(`{"id":`)
		e.raw(orEmpty(t.id))
		e.lit(`,"type":"function","function":{"name":`)
		e.raw(orEmpty(t.name))
		input := t.input
		if !present(input) {
			input = []byte("{}")
		}
		// arguments is the input object as a JSON string, compacted
		// because clients concatenate and compare it.
		e.lit(`,"arguments":`)
		e.b = appendCompactString(e.b, input)
		e.lit(`}}`)
	}
	e.endArr()
}

// appendCompactString appends raw, a JSON value with its insignificant
// whitespace removed, as a JSON string: jsonx.AppendString(compact(raw))
// in one pass and without the intermediate copies. raw comes from a
// document that was validated (or that the host produced).
func appendCompactString(dst, raw []byte) []byte {
	dst = append(dst, '"')
	inString := false
	start := 0 // raw[start:i] is pending, to be copied as it is
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '"':
			dst = append(dst, raw[start:i]...)
			dst = append(dst, '\\', '"')
			start = i + 1
			inString = !inString
		case c == '\\':
			dst = append(dst, raw[start:i]...)
			dst = append(dst, '\\', '\\')
			start = i + 1
			if inString && i+1 < len(raw) {
				// The escaped byte is copied as it is, except the two that
				// need escaping again; an escaped quote ends no string.
				i++
				if n := raw[i]; n == '"' || n == '\\' {
					dst = append(dst, '\\', n)
					start = i + 1
				}
			}
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			dst = append(dst, raw[start:i]...)
			start = i + 1
		case c >= utf8.RuneSelf:
			// Invalid UTF-8 becomes U+FFFD, as AppendString writes it.
			if r, n := utf8.DecodeRune(raw[i:]); r == utf8.RuneError && n == 1 {
				dst = append(dst, raw[start:i]...)
				dst = append(dst, `\ufffd`...)
				start = i + 1
			} else {
				i += n - 1
			}
		case c < 0x20:
			// Only in malformed input: escaped as AppendString would.
			dst = append(dst, raw[start:i]...)
			q := jsonx.AppendString(nil, string(c))
			dst = append(dst, q[1:len(q)-1]...)
			start = i + 1
		}
	}
	dst = append(dst, raw[start:]...)
	return append(dst, '"')
}

// modelList maps GET /v1/models to an OpenAI model list.
func modelList(body []byte) []byte {
	var e enc
	e.obj()
	e.kstr("object", "list")
	e.key("data")
	e.arr()
	eachElem(get(body, "data"), func(m []byte) {
		id := get(m, "id")
		if !isString(id) {
			return
		}
		e.elem()
		e.obj()
		e.kraw("id", id)
		e.kstr("object", "model")
		if t, err := time.Parse(time.RFC3339, str(get(m, "created_at"))); err == nil {
			e.kint("created", t.Unix())
		}
		e.kstr("owned_by", "anthropic")
		if d := get(m, "display_name"); isString(d) {
			e.kraw("display_name", d)
		}
		e.endObj()
	})
	e.endArr()
	e.endObj()
	return e.b
}
