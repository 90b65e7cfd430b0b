package main

import (
	"bytes"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// IngressRequest implements ingress_request: a native Messages request from
// the /anthropic drop-in route in, a unified chat request out. It is the
// inverse of adapt_request, so a Messages request that goes through both
// reaches Anthropic as sent.
func (a *Adapter) IngressRequest(native []byte) (pluginsdk.Output, error) {
	if !jsonx.Valid(native) || !isObject(bytes.TrimSpace(native)) {
		return pluginsdk.Output{}, badRequest("request body is not a JSON object")
	}
	native = bytes.TrimSpace(native)
	var e enc
	e.b = make([]byte, 0, len(native)+256)
	e.obj()
	var system, messages, tools, toolChoice []byte
	var stream bool
	var err error
	eachField(native, func(k, v []byte) bool {
		switch string(k) {
		case "system":
			system = v
		case "messages":
			messages = v
		case "tools":
			tools = v
		case "tool_choice":
			toolChoice = v
		case "stop_sequences":
			if present(v) {
				e.kraw("stop", v)
			}
		case "metadata":
			if u := get(v, "user_id"); isString(u) {
				e.kraw("user", u)
			}
		case "stream":
			stream = string(v) == "true"
		case "service_tier":
			// Anthropic's tiers ("standard_only") mean nothing elsewhere.
		default:
			// model, max_tokens, temperature, top_p have the same name
			// and meaning; top_k, thinking and the rest pass through for
			// adapt_request to hand back to Anthropic.
			e.rawKey(k)
			e.raw(v)
		}
		return true
	})
	if stream {
		e.key("stream")
		e.bool(true)
		// Messages streams always end with usage; ask for the same.
		e.key("stream_options")
		e.raw([]byte(`{"include_usage":true}`))
	}
	e.key("messages")
	e.arr()
	if present(system) {
		e.elem()
		e.obj()
		e.kstr("role", "system")
		e.key("content")
		if err = writeParts(&e, system); err != nil {
			return pluginsdk.Output{}, err
		}
		e.endObj()
	}
	if !isArray(messages) {
		return pluginsdk.Output{}, badRequest("messages must be an array")
	}
	eachElem(messages, func(m []byte) {
		if err == nil {
			err = ingressMessage(&e, m)
		}
	})
	if err != nil {
		return pluginsdk.Output{}, err
	}
	e.endArr()
	if isArray(tools) {
		e.key("tools")
		e.arr()
		eachElem(tools, func(t []byte) {
			e.elem()
			if typ := str(get(t, "type")); typ != "" && typ != "custom" {
				e.raw(t) // server tool: only Anthropic understands it
				return
			}
			e.obj()
			e.kstr("type", "function")
			e.key("function")
			e.obj()
			e.kraw("name", orEmpty(get(t, "name")))
			if d := get(t, "description"); isString(d) {
				e.kraw("description", d)
			}
			if s := get(t, "input_schema"); present(s) {
				e.kraw("parameters", s)
			}
			e.endObj()
			if cc := get(t, "cache_control"); present(cc) {
				e.kraw("cache_control", cc)
			}
			e.endObj()
		})
		e.endArr()
	}
	if isObject(toolChoice) {
		switch str(get(toolChoice, "type")) {
		case "auto":
			e.kstr("tool_choice", "auto")
		case "any":
			e.kstr("tool_choice", "required")
		case "none":
			e.kstr("tool_choice", "none")
		case "tool":
			e.key("tool_choice")
			e.obj()
			e.kstr("type", "function")
			e.key("function")
			e.obj()
			e.kraw("name", orEmpty(get(toolChoice, "name")))
			e.endObj()
			e.endObj()
		}
		if string(get(toolChoice, "disable_parallel_tool_use")) == "true" {
			e.key("parallel_tool_calls")
			e.bool(false)
		}
	}
	e.endObj()
	return pluginsdk.Replace(e.b), nil
}

// writeParts writes Messages content (a string or blocks) as unified
// content: a string stays a string, blocks become parts.
func writeParts(e *enc, content []byte) error {
	if isString(content) {
		e.raw(content)
		return nil
	}
	if !isArray(content) {
		return badRequest("content must be a string or an array of blocks")
	}
	var err error
	e.arr()
	eachElem(content, func(b []byte) {
		if err == nil {
			e.elem()
			err = writePart(e, b)
		}
	})
	e.endArr()
	return err
}

// writePart maps one user-side block to a unified content part.
func writePart(e *enc, b []byte) error {
	if !isObject(b) {
		return badRequest("content blocks must be objects")
	}
	cc := get(b, "cache_control")
	typ := str(get(b, "type"))
	src := get(b, "source")
	switch {
	case typ == "text":
		e.obj()
		e.kstr("type", "text")
		e.kraw("text", orEmpty(get(b, "text")))
	case typ == "image" && str(get(src, "type")) == "base64":
		e.obj()
		e.kstr("type", "image_url")
		e.key("image_url")
		e.obj()
		e.kstr("url", "data:"+str(get(src, "media_type"))+";base64,"+str(get(src, "data")))
		e.endObj()
	case typ == "image" && str(get(src, "type")) == "url":
		e.obj()
		e.kstr("type", "image_url")
		e.key("image_url")
		e.obj()
		e.kraw("url", orEmpty(get(src, "url")))
		e.endObj()
	case typ == "document" && str(get(src, "type")) == "base64":
		e.obj()
		e.kstr("type", "file")
		e.key("file")
		e.obj()
		e.kstr("file_data", "data:"+str(get(src, "media_type"))+";base64,"+str(get(src, "data")))
		e.endObj()
	case typ == "document" && str(get(src, "type")) == "file":
		e.obj()
		e.kstr("type", "file")
		e.key("file")
		e.obj()
		e.kraw("file_id", orEmpty(get(src, "file_id")))
		e.endObj()
	default:
		// Other blocks (text documents, search results...) have no unified
		// form: carried as is, adapt_request hands them back unchanged.
		e.raw(b)
		return nil
	}
	if present(cc) {
		e.kraw("cache_control", cc)
	}
	e.endObj()
	return nil
}

// ingressMessage writes one Messages message as one or more unified ones:
// a user message's tool_result blocks become role "tool" messages, written
// first because OpenAI wants them right after the assistant's tool calls.
func ingressMessage(e *enc, m []byte) error {
	if !isObject(m) {
		return badRequest("each message must be an object")
	}
	role := str(get(m, "role"))
	content := get(m, "content")
	switch role {
	case "user":
		if !isArray(content) {
			e.elem()
			e.obj()
			e.kstr("role", "user")
			e.key("content")
			err := writeParts(e, content)
			e.endObj()
			return err
		}
		var rest [][]byte
		var err error
		eachElem(content, func(b []byte) {
			if err != nil {
				return
			}
			if str(get(b, "type")) != "tool_result" {
				rest = append(rest, b)
				return
			}
			e.elem()
			e.obj()
			e.kstr("role", "tool")
			e.kraw("tool_call_id", orEmpty(get(b, "tool_use_id")))
			e.key("content")
			if c := get(b, "content"); present(c) {
				err = writeParts(e, c)
			} else {
				e.str("")
			}
			if string(get(b, "is_error")) == "true" {
				e.key("is_error")
				e.bool(true)
			}
			e.endObj()
		})
		if err != nil || len(rest) == 0 {
			return err
		}
		e.elem()
		e.obj()
		e.kstr("role", "user")
		e.key("content")
		e.arr()
		for _, b := range rest {
			e.elem()
			if err := writePart(e, b); err != nil {
				return err
			}
		}
		e.endArr()
		e.endObj()
		return nil
	case "assistant":
		e.elem()
		e.obj()
		e.kstr("role", "assistant")
		if !isArray(content) {
			e.key("content")
			e.raw(orEmpty(content))
			e.endObj()
			return nil
		}
		// The same shape adapt_response produces, so both directions agree.
		writeAssistantMessageBody(e, content)
		e.endObj()
		return nil
	}
	return badRequest("message role %q is not valid on the Messages wire", role)
}
