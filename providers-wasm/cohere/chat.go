package main

import (
	"strconv"

	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// appendChatRequest appends the Cohere v2 /chat body for a unified chat
// request. Parameters without a Cohere counterpart (n, logprobs, user,
// metadata, stream_options, parallel_tool_calls) are dropped rather than
// sent, because Cohere rejects unknown fields.
func appendChatRequest(b []byte, r requestInput) ([]byte, error) {
	body := r.body
	var messages, tools, temperature, topP, maxTokens, maxCompletion, stop, respFormat, toolChoice, seed, freqPen, presPen []byte
	jsonx.ForEachMember(body, 0, func(k []byte, s, e int) {
		v := body[s:e]
		if string(v) == "null" {
			return
		}
		switch string(k) {
		case "messages":
			messages = v
		case "tools":
			tools = v
		case "temperature":
			temperature = v
		case "top_p":
			topP = v
		case "max_tokens":
			maxTokens = v
		case "max_completion_tokens":
			maxCompletion = v
		case "stop":
			stop = v
		case "response_format":
			respFormat = v
		case "tool_choice":
			toolChoice = v
		case "seed":
			seed = v
		case "frequency_penalty":
			freqPen = v
		case "presence_penalty":
			presPen = v
		}
	})
	if len(messages) == 0 || messages[0] != '[' {
		return b, reject(400, "chat request needs a messages array")
	}
	b = append(b, `{"model":`...)
	b = appendQuoted(b, r.model)
	b = append(b, `,"messages":[`...)
	n := 0
	var err error
	jsonx.ForEachElement(messages, 0, func(s, e int) {
		if err != nil {
			return
		}
		if n > 0 {
			b = append(b, ',')
		}
		b, err = appendMessage(b, messages[s:e])
		n++
	})
	if err != nil {
		return b, err
	}
	b = append(b, ']')
	if len(tools) > 0 && tools[0] == '[' {
		b = append(b, `,"tools":[`...)
		n := 0
		jsonx.ForEachElement(tools, 0, func(s, e int) {
			if err != nil {
				return
			}
			fs, fe, ok := field(tools, s, "function")
			if !ok || tools[fs] != '{' {
				err = reject(400, "cohere supports function tools only")
				return
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			// Only the members Cohere knows: it rejects "strict" and others.
			fn := tools[fs:fe]
			b = append(b, `{"type":"function","function":{`...)
			m := 0
			jsonx.ForEachMember(fn, 0, func(k []byte, s, e int) {
				switch string(k) {
				case "name", "description", "parameters":
					if m > 0 {
						b = append(b, ',')
					}
					m++
					b = appendQuoted(b, k)
					b = append(b, ':')
					b = append(b, fn[s:e]...)
				}
			})
			b = append(b, "}}"...)
		})
		if err != nil {
			return b, err
		}
		b = append(b, ']')
	}
	if len(toolChoice) > 0 {
		// Cohere knows REQUIRED and NONE; "auto" is its default. A named
		// function (an object) has no Cohere form: REQUIRED is the closest.
		switch string(toolChoice) {
		case `"required"`:
			b = append(b, `,"tool_choice":"REQUIRED"`...)
		case `"none"`:
			b = append(b, `,"tool_choice":"NONE"`...)
		case `"auto"`:
		default:
			if toolChoice[0] == '{' {
				b = append(b, `,"tool_choice":"REQUIRED"`...)
			}
		}
	}
	b = appendMember(b, "temperature", temperature)
	b = appendMember(b, "p", topP)
	if len(maxCompletion) > 0 {
		maxTokens = maxCompletion
	}
	b = appendMember(b, "max_tokens", maxTokens)
	if len(stop) > 0 {
		switch stop[0] {
		case '"':
			b = append(b, `,"stop_sequences":[`...)
			b = append(b, stop...)
			b = append(b, ']')
		case '[':
			b = appendMember(b, "stop_sequences", stop)
		}
	}
	b = appendMember(b, "seed", seed)
	b = appendMember(b, "frequency_penalty", freqPen)
	b = appendMember(b, "presence_penalty", presPen)
	if len(respFormat) > 0 && respFormat[0] == '{' {
		ts, te, _ := field(respFormat, 0, "type")
		switch string(str(respFormat, ts, te)) {
		case "json_object":
			b = append(b, `,"response_format":{"type":"json_object"}`...)
		case "json_schema":
			// OpenAI nests the schema in json_schema.schema; Cohere takes
			// it directly as response_format.json_schema.
			b = append(b, `,"response_format":{"type":"json_object"`...)
			if ss, se, ok := path(respFormat, 0, "json_schema", "schema"); ok {
				b = append(b, `,"json_schema":`...)
				b = append(b, respFormat[ss:se]...)
			}
			b = append(b, '}')
		}
	}
	if r.stream {
		b = append(b, `,"stream":true`...)
	}
	return append(b, '}'), nil
}

func appendMember(b []byte, key string, raw []byte) []byte {
	if len(raw) == 0 {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return append(b, raw...)
}

// appendMessage translates one chat message.
func appendMessage(b, m []byte) ([]byte, error) {
	if len(m) == 0 || m[0] != '{' {
		return b, reject(400, "a message is not an object")
	}
	var role, content, toolCalls, toolCallID []byte
	jsonx.ForEachMember(m, 0, func(k []byte, s, e int) {
		switch string(k) {
		case "role":
			role = str(m, s, e)
		case "content":
			content = m[s:e]
		case "tool_calls":
			toolCalls = m[s:e]
		case "tool_call_id":
			toolCallID = str(m, s, e)
		}
	})
	switch string(role) {
	case "system", "user", "assistant", "tool":
	case "developer":
		role = []byte("system") // OpenAI's newer name for system
	default:
		return b, reject(400, "message role %q is not supported by cohere", role)
	}
	b = append(b, `{"role":`...)
	b = appendQuoted(b, role)
	switch {
	case len(content) == 0 || string(content) == "null":
		if string(role) == "tool" {
			b = append(b, `,"content":""`...)
		}
	case content[0] == '"':
		b = append(b, `,"content":`...)
		b = append(b, content...)
	case content[0] == '[':
		b = append(b, `,"content":[`...)
		n := 0
		var err error
		jsonx.ForEachElement(content, 0, func(s, e int) {
			if err != nil {
				return
			}
			ts, te, _ := field(content, s, "type")
			typ := string(str(content, ts, te))
			switch typ {
			case "text":
				xs, xe, ok := field(content, s, "text")
				if !ok || content[xs] != '"' {
					err = reject(400, "a text content part has no text")
					return
				}
				if n > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"type":"text","text":`...)
				b = append(b, content[xs:xe]...)
				b = append(b, '}')
			case "image_url":
				// Cohere's vision models take OpenAI's image_url part as is.
				is, ie, ok := field(content, s, "image_url")
				if !ok {
					err = reject(400, "an image_url content part has no image_url")
					return
				}
				if n > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"type":"image_url","image_url":`...)
				b = append(b, content[is:ie]...)
				b = append(b, '}')
			default:
				err = reject(400, "content part type %q is not supported by cohere", typ)
				return
			}
			n++
		})
		if err != nil {
			return b, err
		}
		b = append(b, ']')
	default:
		return b, reject(400, "message content must be a string or an array of parts")
	}
	if len(toolCalls) > 0 && toolCalls[0] == '[' {
		b = append(b, `,"tool_calls":[`...)
		n := 0
		jsonx.ForEachElement(toolCalls, 0, func(s, e int) {
			is, ie, _ := field(toolCalls, s, "id")
			fs, fe, ok := field(toolCalls, s, "function")
			if !ok || toolCalls[fs] != '{' {
				return
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(b, `{"id":`...)
			if ie > is {
				b = append(b, toolCalls[is:ie]...)
			} else {
				b = append(b, `""`...)
			}
			b = append(b, `,"type":"function","function":{`...)
			fn := toolCalls[fs:fe]
			m := 0
			jsonx.ForEachMember(fn, 0, func(k []byte, s, e int) {
				if string(k) == "name" || string(k) == "arguments" {
					if m > 0 {
						b = append(b, ',')
					}
					m++
					b = appendQuoted(b, k)
					b = append(b, ':')
					b = append(b, fn[s:e]...)
				}
			})
			b = append(b, "}}"...)
		})
		b = append(b, ']')
	}
	if len(toolCallID) > 0 {
		b = append(b, `,"tool_call_id":`...)
		b = appendQuoted(b, toolCallID)
	}
	return append(b, '}'), nil
}

// finishReason maps Cohere's finish reasons; ERROR and TIMEOUT are not
// reasons but failures, reported as errors by the callers.
func finishReason(fr []byte) string {
	switch string(fr) {
	case "MAX_TOKENS":
		return "length"
	case "TOOL_CALL":
		return "tool_calls"
	}
	// COMPLETE, STOP_SEQUENCE, and anything newer.
	return "stop"
}

func failed(fr []byte) bool { return string(fr) == "ERROR" || string(fr) == "TIMEOUT" }

// appendChatResponse translates a non-streamed /chat answer.
func appendChatResponse(b, body []byte, st *state) ([]byte, error) {
	var id, msg, fr, usage, errMsg []byte
	jsonx.ForEachMember(body, 0, func(k []byte, s, e int) {
		switch string(k) {
		case "id":
			id = str(body, s, e)
		case "message":
			msg = body[s:e]
		case "finish_reason":
			fr = str(body, s, e)
		case "usage":
			usage = body[s:e]
		case "error":
			errMsg = str(body, s, e)
		}
	})
	if failed(fr) {
		return b, upstreamError("generation failed ("+string(fr)+")", errMsg)
	}
	if len(msg) == 0 || msg[0] != '{' {
		return b, reject(502, "cohere answer has no message")
	}
	b = append(b, `{"id":`...)
	b = appendQuoted(b, id)
	b = append(b, `,"object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, now(), 10)
	b = append(b, `,"model":`...)
	b = appendQuoted(b, st.model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	// Text parts are concatenated still escaped: joining escaped contents
	// is a valid escaped content, so nothing is decoded.
	text := false
	if cs, _, ok := field(msg, 0, "content"); ok && msg[cs] == '[' {
		jsonx.ForEachElement(msg, cs, func(s, e int) {
			ts, te, _ := field(msg, s, "type")
			if t := str(msg, ts, te); t != nil && string(t) != "text" {
				return
			}
			xs, xe, ok := field(msg, s, "text")
			if !ok || msg[xs] != '"' {
				return
			}
			if !text {
				b = append(b, '"')
				text = true
			}
			b = append(b, msg[xs+1:xe-1]...)
		})
	}
	if text {
		b = append(b, '"')
	} else {
		b = append(b, "null"...)
	}
	if ts, te, ok := field(msg, 0, "tool_calls"); ok && msg[ts] == '[' && te-ts > 2 {
		// Cohere v2 tool calls are OpenAI's shape already.
		b = append(b, `,"tool_calls":`...)
		b = append(b, msg[ts:te]...)
	}
	b = append(b, `},"finish_reason":"`...)
	b = append(b, finishReason(fr)...)
	b = append(b, `"}]`...)
	if len(usage) > 0 && usage[0] == '{' {
		b = append(b, `,"usage":`...)
		b = appendUsage(b, usage)
	}
	return append(b, '}'), nil
}

// appendUsage maps Cohere usage: billed units are what the account pays
// (the gateway's cost basis), tokens the raw counts including the prompt
// template, used only when billed units are absent.
func appendUsage(b, u []byte) []byte {
	var in, out, cached int64
	inOK, outOK := false, false
	if s, e, ok := path(u, 0, "billed_units", "input_tokens"); ok {
		in, inOK = number(u, s, e), true
	}
	if s, e, ok := path(u, 0, "billed_units", "output_tokens"); ok {
		out, outOK = number(u, s, e), true
	}
	if s, e, ok := path(u, 0, "tokens", "input_tokens"); ok && !inOK {
		in = number(u, s, e)
	}
	if s, e, ok := path(u, 0, "tokens", "output_tokens"); ok && !outOK {
		out = number(u, s, e)
	}
	if s, e, ok := field(u, 0, "cached_tokens"); ok {
		cached = number(u, s, e)
	}
	return appendUsageCounts(b, in, out, cached)
}

func appendUsageCounts(b []byte, in, out, cached int64) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, in, 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, out, 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, in+out, 10)
	if cached > 0 {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, cached, 10)
		b = append(b, '}')
	}
	return append(b, '}')
}
