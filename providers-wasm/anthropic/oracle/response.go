package oracle

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/wasmgate/gateway/pluginsdk"
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
// list_models answers.
func (a *Adapter) AdaptResponse(input []byte) (pluginsdk.Output, error) {
	if !a.valid(input) {
		return pluginsdk.Output{}, badUpstream("adapt_response: input is not JSON")
	}
	var reqType, model string
	var body []byte
	if !eachField(input, func(k, v []byte) bool {
		switch string(k) {
		case "request_type":
			reqType = str(v)
		case "model":
			model = str(v)
		case "body":
			body = v
		}
		return true
	}) {
		return pluginsdk.Output{}, badUpstream("adapt_response: input is not an object")
	}
	if !isObject(body) {
		return pluginsdk.Output{}, badUpstream("Anthropic answered a body that is not a JSON object")
	}
	switch reqType {
	case pluginsdk.RequestChat, "":
		out, err := messageToChat(body, model, a.now().Unix())
		return pluginsdk.Replace(out), err
	case pluginsdk.RequestCountTokens:
		n, ok := intOf(get(body, "input_tokens"))
		if !ok {
			return pluginsdk.Output{}, badUpstream("count_tokens answer without input_tokens")
		}
		var e enc
		e.obj()
		e.kstr("object", "count_tokens")
		e.kint("input_tokens", n)
		e.endObj()
		return pluginsdk.Replace(e.b), nil
	case pluginsdk.RequestListModels:
		return pluginsdk.Replace(modelList(body)), nil
	}
	return pluginsdk.Output{}, badRequest("adapter-anthropic does not translate %q responses", reqType)
}

// messageToChat maps a Messages response to a chat.completion.
func messageToChat(body []byte, fallbackModel string, created int64) ([]byte, error) {
	var id, model, content, stop []byte
	var usage usageCounts
	eachField(body, func(k, v []byte) bool {
		switch string(k) {
		case "id":
			id = v
		case "model":
			model = v
		case "content":
			content = v
		case "stop_reason":
			stop = v
		case "usage":
			usage.read(v)
		}
		return true
	})
	if !isArray(content) {
		return nil, badUpstream("Anthropic answer without a content array")
	}
	var e enc
	e.b = make([]byte, 0, len(body)+256)
	e.obj()
	e.key("id")
	if isString(id) {
		e.raw(id)
	} else {
		e.str("")
	}
	e.kstr("object", "chat.completion")
	e.kint("created", created)
	e.key("model")
	if isString(model) {
		e.raw(model)
	} else {
		e.str(fallbackModel)
	}
	e.key("choices")
	e.arr()
	e.elem()
	e.obj()
	e.kint("index", 0)
	e.key("message")
	writeAssistantMessage(&e, content)
	e.kstr("finish_reason", finishReason(str(stop)))
	e.endObj()
	e.endArr()
	e.key("usage")
	usage.write(&e)
	e.endObj()
	return e.b, nil
}

// writeAssistantMessage turns content blocks into a chat message.
func writeAssistantMessage(e *enc, content []byte) {
	e.obj()
	e.kstr("role", "assistant")
	writeAssistantMessageBody(e, content)
	e.endObj()
}

// writeAssistantMessageBody writes the members of a chat assistant message
// other than role: text blocks joined into content, tool_use blocks into
// tool_calls, thinking into reasoning_content plus thinking_blocks, which
// keep the signatures (and redacted blocks) a client must send back on the
// next turn of a tool-using conversation with thinking on.
func writeAssistantMessageBody(e *enc, content []byte) {
	var text, reasoning []byte
	var haveText, haveReasoning bool
	var toolCalls, thinking [][]byte
	eachElem(content, func(b []byte) {
		switch str(get(b, "type")) {
		case "text":
			if t := get(b, "text"); isString(t) {
				text = append(text, t[1:len(t)-1]...)
				haveText = true
			}
		case "thinking":
			if t := get(b, "thinking"); isString(t) {
				reasoning = append(reasoning, t[1:len(t)-1]...)
				haveReasoning = true
			}
			thinking = append(thinking, b)
		case "redacted_thinking":
			thinking = append(thinking, b)
		case "tool_use":
			toolCalls = append(toolCalls, b)
		}
	})
	e.key("content")
	if haveText || len(toolCalls) == 0 {
		// Joining the escaped bodies is joining the texts.
		e.b = append(append(append(e.b, '"'), text...), '"')
	} else {
		e.null()
	}
	if haveReasoning {
		e.key("reasoning_content")
		e.b = append(append(append(e.b, '"'), reasoning...), '"')
	}
	if len(thinking) > 0 {
		e.key("thinking_blocks")
		e.arr()
		for _, b := range thinking {
			e.elem()
			e.raw(b)
		}
		e.endArr()
	}
	if len(toolCalls) == 0 {
		return
	}
	e.key("tool_calls")
	e.arr()
	for _, b := range toolCalls {
		e.elem()
		e.obj()
		e.kraw("id", orEmpty(get(b, "id")))
		e.kstr("type", "function")
		e.key("function")
		e.obj()
		e.kraw("name", orEmpty(get(b, "name")))
		input := get(b, "input")
		if !present(input) {
			input = []byte("{}")
		}
		// arguments is the input object as a JSON string, compacted
		// because clients concatenate and compare it.
		e.kstr("arguments", string(compact(input)))
		e.endObj()
		e.endObj()
	}
	e.endArr()
}

func compact(raw []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
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
