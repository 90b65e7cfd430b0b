package oracle

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// defaultMaxTokens fills max_tokens when the client sent none: the Messages
// API requires it, the unified (OpenAI) wire does not.
const defaultMaxTokens = 4096

// effortBudgets maps OpenAI's reasoning_effort to an extended-thinking
// budget. 1024 is the smallest budget Anthropic accepts.
var effortBudgets = map[string]int64{"minimal": 1024, "low": 1024, "medium": 4096, "high": 16384}

// droppedFields are unified (OpenAI) request fields with no Messages
// equivalent. The Messages API rejects unknown fields, so these must not
// pass through, while any other unknown field (top_k, thinking, container,
// mcp_servers...) is Anthropic-specific and does.
var droppedFields = map[string]bool{
	"n": true, "presence_penalty": true, "frequency_penalty": true, "logit_bias": true,
	"logprobs": true, "top_logprobs": true, "seed": true, "response_format": true,
	"store": true, "service_tier": true, "modalities": true, "audio": true,
	"prediction": true, "stream_options": true, "web_search_options": true,
	"functions": true, "function_call": true, "verbosity": true,
	"prompt_cache_key": true, "safety_identifier": true, "metadata": true,
	// Fields this adapter writes itself.
	"system": true, "stop_sequences": true,
}

// AdaptRequest implements adapt_request: a pluginsdk.AdaptRequestInput in,
// a pluginsdk.UpstreamRequest spec out.
func (a *Adapter) AdaptRequest(input []byte) (pluginsdk.Output, error) {
	if !a.valid(input) {
		return pluginsdk.Output{}, badRequest("adapt_request: input is not JSON")
	}
	var reqType, model string
	var stream bool
	var body []byte
	eachField(input, func(k, v []byte) bool {
		switch string(k) {
		case "request_type":
			reqType = str(v)
		case "model":
			model = str(v)
		case "stream":
			stream = string(v) == "true"
		case "body":
			body = v
		}
		return true
	})
	var e enc
	e.b = make([]byte, 0, len(body)+256)
	e.obj()
	switch reqType {
	case pluginsdk.RequestChat, "":
		e.kstr("method", "POST")
		e.kstr("path", "/messages")
		writeVersionHeader(&e)
		e.key("body")
		if err := writeMessagesBody(&e, body, model, stream, false); err != nil {
			return pluginsdk.Output{}, err
		}
		if stream {
			e.key("stream")
			e.bool(true)
		}
	case pluginsdk.RequestCountTokens:
		e.kstr("method", "POST")
		e.kstr("path", "/messages/count_tokens")
		writeVersionHeader(&e)
		e.key("body")
		if err := writeMessagesBody(&e, body, model, false, true); err != nil {
			return pluginsdk.Output{}, err
		}
	case pluginsdk.RequestListModels:
		// The API pages by 20 by default; 1000 is its maximum page, enough
		// for the whole catalogue in one call.
		e.kstr("method", "GET")
		e.kstr("path", "/models?limit=1000")
		writeVersionHeader(&e)
	default:
		return pluginsdk.Output{}, badRequest("adapter-anthropic does not translate %q requests", reqType)
	}
	e.endObj()
	return pluginsdk.Replace(e.b), nil
}

func writeVersionHeader(e *enc) {
	e.key("headers")
	e.obj()
	e.kstr("anthropic-version", anthropicVersion)
	e.endObj()
}

// chatFields are the parts of a unified chat request the mapping reads.
type chatFields struct {
	model, messages, maxTokens, maxCompletion, temperature, topP, stop []byte
	tools, toolChoice, parallel, user, effort, thinking                []byte
	// extra are unknown fields, passed through in order.
	extra [][2][]byte
}

func readChatFields(body []byte) (chatFields, bool) {
	var f chatFields
	ok := eachField(body, func(k, v []byte) bool {
		switch string(k) {
		case "model":
			f.model = v
		case "messages":
			f.messages = v
		case "max_tokens":
			f.maxTokens = v
		case "max_completion_tokens":
			f.maxCompletion = v
		case "temperature":
			f.temperature = v
		case "top_p":
			f.topP = v
		case "stop":
			f.stop = v
		case "tools":
			f.tools = v
		case "tool_choice":
			f.toolChoice = v
		case "parallel_tool_calls":
			f.parallel = v
		case "user":
			f.user = v
		case "reasoning_effort":
			f.effort = v
		case "thinking":
			f.thinking = v
		case "stream":
			// The host's Stream flag decides; the body's copy is ignored.
		default:
			if !droppedFields[string(k)] {
				f.extra = append(f.extra, [2][]byte{k, v})
			}
		}
		return true
	})
	return f, ok
}

// writeMessagesBody writes the Messages request for a unified chat body.
// count leaves out what count_tokens rejects: max_tokens, stream and the
// sampling parameters.
func writeMessagesBody(e *enc, body []byte, model string, stream, count bool) error {
	f, ok := readChatFields(body)
	if !ok {
		return badRequest("request body is not a JSON object")
	}
	e.obj()
	e.key("model")
	if model != "" {
		e.str(model)
	} else if isString(f.model) {
		e.raw(f.model)
	} else {
		return badRequest("model is required")
	}

	// Extended thinking: an explicit Anthropic "thinking" object wins over
	// reasoning_effort, which only picks a budget.
	var budget int64
	if !present(f.thinking) && isString(f.effort) {
		budget = effortBudgets[str(f.effort)]
	}
	if !count {
		maxTokens, explicit := int64(defaultMaxTokens), false
		if n, ok := intOf(f.maxCompletion); ok {
			maxTokens, explicit = n, true
		} else if n, ok := intOf(f.maxTokens); ok {
			maxTokens, explicit = n, true
		}
		// Anthropic requires max_tokens > budget_tokens: grow a defaulted
		// max_tokens, shrink the budget under an explicit one, and give up
		// thinking when not even the minimum budget fits.
		if budget > 0 {
			switch {
			case !explicit && maxTokens <= budget:
				maxTokens = budget + defaultMaxTokens
			case explicit && maxTokens <= budget:
				budget = maxTokens - 1
				if budget < 1024 {
					budget = 0
				}
			}
		}
		e.kint("max_tokens", maxTokens)
	}

	if err := writeConversation(e, f.messages); err != nil {
		return err
	}

	if isArray(f.tools) {
		e.key("tools")
		if err := writeTools(e, f.tools); err != nil {
			return err
		}
	}
	writeToolChoice(e, f.toolChoice, f.parallel, isArray(f.tools))

	if present(f.thinking) {
		e.kraw("thinking", f.thinking)
	} else if budget > 0 {
		e.key("thinking")
		e.obj()
		e.kstr("type", "enabled")
		e.kint("budget_tokens", budget)
		e.endObj()
	}
	if count {
		e.endObj()
		return nil
	}
	// Thinking refuses changed sampling (temperature other than 1, top_k,
	// top_p under 0.95). A client that asked OpenAI-style, with
	// reasoning_effort, expects reasoning models to ignore them, so they
	// are dropped; an explicit thinking object is the client's own call.
	effortThinking := budget > 0
	if present(f.temperature) && (!effortThinking || string(f.temperature) == "1") {
		e.kraw("temperature", f.temperature)
	}
	if present(f.topP) {
		if p, err := strconv.ParseFloat(string(f.topP), 64); !effortThinking || (err == nil && p >= 0.95) {
			e.kraw("top_p", f.topP)
		}
	}
	switch {
	case isString(f.stop):
		e.key("stop_sequences")
		e.arr()
		e.elem()
		e.raw(f.stop)
		e.endArr()
	case isArray(f.stop):
		e.kraw("stop_sequences", f.stop)
	}
	if isString(f.user) && len(f.user) > 2 {
		e.key("metadata")
		e.obj()
		e.kraw("user_id", f.user)
		e.endObj()
	}
	for _, x := range f.extra {
		if effortThinking && string(x[0]) == "top_k" {
			continue
		}
		e.rawKey(x[0])
		e.raw(x[1])
	}
	if stream {
		e.key("stream")
		e.bool(true)
	}
	e.endObj()
	return nil
}

// block is one encoded Messages content block.
type block struct {
	raw []byte
	// text is the raw JSON string of a block that is nothing but text, so
	// a lone text block can be sent as string content and system texts
	// can be joined.
	text []byte
	// toolResult blocks must lead their user message.
	toolResult bool
}

type turn struct {
	role   string
	blocks []block
}

// writeConversation writes "system" and "messages" for unified messages.
func writeConversation(e *enc, messages []byte) error {
	if !isArray(messages) {
		return badRequest("messages must be an array")
	}
	var system []block
	var turns []turn
	var err error
	add := func(role string, bs []block) {
		if len(bs) == 0 {
			return
		}
		// Messages wants strict user/assistant alternation; consecutive
		// same-role messages (a tool result followed by user text, several
		// tool results) become one message.
		if n := len(turns); n > 0 && turns[n-1].role == role {
			turns[n-1].blocks = append(turns[n-1].blocks, bs...)
			return
		}
		turns = append(turns, turn{role: role, blocks: bs})
	}
	eachElem(messages, func(m []byte) {
		if err != nil {
			return
		}
		if !isObject(m) {
			err = badRequest("each message must be an object")
			return
		}
		role := str(get(m, "role"))
		var bs []block
		switch role {
		case "system", "developer":
			bs, err = contentBlocks(get(m, "content"))
			system = append(system, bs...)
		case "user":
			bs, err = contentBlocks(get(m, "content"))
			add("user", bs)
		case "assistant":
			bs, err = assistantBlocks(m)
			add("assistant", bs)
		case "tool":
			var b block
			b, err = toolResultBlock(m)
			add("user", []block{b})
		default:
			err = badRequest("message role %q is not supported by the Anthropic wire", role)
		}
	})
	if err != nil {
		return err
	}
	if len(system) > 0 {
		e.key("system")
		writeSystem(e, system)
	}
	e.key("messages")
	e.arr()
	for _, t := range turns {
		e.elem()
		e.obj()
		e.kstr("role", t.role)
		e.key("content")
		if len(t.blocks) == 1 && t.blocks[0].text != nil {
			e.raw(t.blocks[0].text)
		} else {
			e.arr()
			// Tool results first, in their order, then everything else:
			// the API rejects a user message where text precedes them.
			for pass := 0; pass < 2; pass++ {
				for _, b := range t.blocks {
					if b.toolResult == (pass == 0) {
						e.elem()
						e.raw(b.raw)
					}
				}
			}
			e.endArr()
		}
		e.endObj()
	}
	e.endArr()
	return nil
}

// writeSystem joins plain system texts into one string; as soon as a part
// carries more than text (cache_control), the blocks are kept as blocks so
// prompt caching still works.
func writeSystem(e *enc, system []block) {
	plain := true
	for _, b := range system {
		if b.text == nil {
			plain = false
		}
	}
	if !plain {
		e.arr()
		for _, b := range system {
			e.elem()
			e.raw(b.raw)
		}
		e.endArr()
		return
	}
	e.b = append(e.b, '"')
	for i, b := range system {
		if i > 0 {
			e.b = append(e.b, `\n\n`...)
		}
		e.b = append(e.b, b.text[1:len(b.text)-1]...)
	}
	e.b = append(e.b, '"')
}

func textBlock(text, cacheControl []byte) block {
	var e enc
	e.obj()
	e.kstr("type", "text")
	e.kraw("text", text)
	if present(cacheControl) {
		e.kraw("cache_control", cacheControl)
		e.endObj()
		return block{raw: e.b}
	}
	e.endObj()
	return block{raw: e.b, text: text}
}

// contentBlocks maps unified content (a string or an array of parts) to
// Messages blocks. Empty texts are dropped: the API rejects them.
func contentBlocks(content []byte) ([]block, error) {
	switch {
	case isString(content):
		if len(content) == 2 {
			return nil, nil
		}
		return []block{textBlock(content, nil)}, nil
	case !present(content):
		return nil, nil
	case !isArray(content):
		return nil, badRequest("message content must be a string or an array of parts")
	}
	var out []block
	var err error
	eachElem(content, func(p []byte) {
		if err != nil {
			return
		}
		var b block
		var ok bool
		b, ok, err = partBlock(p)
		if ok {
			out = append(out, b)
		}
	})
	return out, err
}

// partBlock maps one content part; ok is false for a part to drop.
func partBlock(p []byte) (block, bool, error) {
	if !isObject(p) {
		return block{}, false, badRequest("content parts must be objects")
	}
	cc := get(p, "cache_control")
	switch typ := str(get(p, "type")); typ {
	case "text", "refusal":
		t := get(p, typ)
		if !isString(t) {
			return block{}, false, badRequest("%s part without %s", typ, typ)
		}
		if len(t) == 2 {
			return block{}, false, nil
		}
		return textBlock(t, cc), true, nil
	case "image_url":
		iu := get(p, "image_url")
		url := iu
		if isObject(iu) {
			url = get(iu, "url")
		}
		if !isString(url) {
			return block{}, false, badRequest("image_url part without url")
		}
		b, err := sourceBlock("image", url, cc)
		return b, err == nil, err
	case "file":
		f := get(p, "file")
		if data := get(f, "file_data"); isString(data) {
			b, err := sourceBlock("document", data, cc)
			return b, err == nil, err
		}
		if id := get(f, "file_id"); isString(id) {
			var e enc
			e.obj()
			e.kstr("type", "document")
			e.key("source")
			e.obj()
			e.kstr("type", "file")
			e.kraw("file_id", id)
			e.endObj()
			if present(cc) {
				e.kraw("cache_control", cc)
			}
			e.endObj()
			return block{raw: e.b}, true, nil
		}
		return block{}, false, badRequest("file part without file_data or file_id")
	case "input_audio":
		return block{}, false, badRequest("audio input is not supported by the Anthropic wire")
	default:
		// Anything else is taken to be an Anthropic-native block (document,
		// search_result...) a client sent on purpose.
		return block{raw: p, toolResult: typ == "tool_result"}, true, nil
	}
}

// sourceBlock builds an image or document block from a URL string: data:
// URLs become base64 sources, anything else a url source.
func sourceBlock(typ string, url, cacheControl []byte) (block, error) {
	var e enc
	e.obj()
	e.kstr("type", typ)
	e.key("source")
	e.obj()
	body := url[1 : len(url)-1]
	if rest, ok := bytes.CutPrefix(body, []byte("data:")); ok {
		meta, data, ok := bytes.Cut(rest, []byte(","))
		mt, isB64 := bytes.CutSuffix(meta, []byte(";base64"))
		if !ok || !isB64 {
			return block{}, badRequest("%s data URL must be base64 encoded", typ)
		}
		e.kstr("type", "base64")
		e.key("media_type")
		e.b = append(append(append(e.b, '"'), mt...), '"')
		e.key("data")
		e.b = append(append(append(e.b, '"'), data...), '"')
	} else {
		e.kstr("type", "url")
		e.kraw("url", url)
	}
	e.endObj()
	if present(cacheControl) {
		e.kraw("cache_control", cacheControl)
	}
	e.endObj()
	return block{raw: e.b}, nil
}

// assistantBlocks maps an assistant message: thinking blocks first (the API
// wants them before text and tool use when thinking is on), then content,
// then tool calls as tool_use blocks.
func assistantBlocks(m []byte) ([]block, error) {
	var out []block
	if tb := get(m, "thinking_blocks"); isArray(tb) {
		eachElem(tb, func(t []byte) {
			switch str(get(t, "type")) {
			case "thinking":
				// A thinking block without its signature is refused
				// upstream, so it is not sent back.
				if sig := get(t, "signature"); isString(sig) && len(sig) > 2 {
					var e enc
					e.obj()
					e.kstr("type", "thinking")
					th := get(t, "thinking")
					if !isString(th) {
						th = []byte(`""`)
					}
					e.kraw("thinking", th)
					e.kraw("signature", sig)
					e.endObj()
					out = append(out, block{raw: e.b})
				}
			case "redacted_thinking":
				if d := get(t, "data"); isString(d) {
					var e enc
					e.obj()
					e.kstr("type", "redacted_thinking")
					e.kraw("data", d)
					e.endObj()
					out = append(out, block{raw: e.b})
				}
			}
		})
	}
	bs, err := contentBlocks(get(m, "content"))
	if err != nil {
		return nil, err
	}
	out = append(out, bs...)
	if tc := get(m, "tool_calls"); isArray(tc) {
		eachElem(tc, func(c []byte) {
			if err != nil {
				return
			}
			fn := get(c, "function")
			id, name := get(c, "id"), get(fn, "name")
			if !isString(id) || !isString(name) {
				err = badRequest("tool call without id or function name")
				return
			}
			input, ok := argumentsObject(get(fn, "arguments"))
			if !ok {
				err = badRequest("tool call %s: arguments are not a JSON object", str(id))
				return
			}
			var e enc
			e.obj()
			e.kstr("type", "tool_use")
			e.kraw("id", id)
			e.kraw("name", name)
			e.kraw("input", input)
			e.endObj()
			out = append(out, block{raw: e.b})
		})
	}
	return out, err
}

// argumentsObject turns OpenAI's arguments string into the JSON object
// tool_use.input wants. Empty arguments mean no arguments.
func argumentsObject(args []byte) ([]byte, bool) {
	if !present(args) {
		return []byte("{}"), true
	}
	if isObject(args) { // some clients send the object itself
		return args, true
	}
	s := bytes.TrimSpace([]byte(str(args)))
	if len(s) == 0 {
		return []byte("{}"), true
	}
	if s[0] != '{' || !json.Valid(s) {
		return nil, false
	}
	return s, true
}

// toolResultBlock maps a role "tool" message to a tool_result block.
func toolResultBlock(m []byte) (block, error) {
	id := get(m, "tool_call_id")
	if !isString(id) {
		return block{}, badRequest("tool message without tool_call_id")
	}
	var e enc
	e.obj()
	e.kstr("type", "tool_result")
	e.kraw("tool_use_id", id)
	c := get(m, "content")
	switch {
	case isString(c):
		if len(c) > 2 {
			e.kraw("content", c)
		}
	case isArray(c):
		bs, err := contentBlocks(c)
		if err != nil {
			return block{}, err
		}
		if len(bs) > 0 {
			e.key("content")
			e.arr()
			for _, b := range bs {
				e.elem()
				e.raw(b.raw)
			}
			e.endArr()
		}
	}
	// is_error is not in the OpenAI shape, but a client that knows the
	// Anthropic wire (or our ingress hook) may set it.
	if v := get(m, "is_error"); string(v) == "true" {
		e.key("is_error")
		e.bool(true)
	}
	e.endObj()
	return block{raw: e.b, toolResult: true}, nil
}

// writeTools maps function tools to {name, description, input_schema};
// other tool types (Anthropic server tools such as web_search_20250305)
// pass through as given.
func writeTools(e *enc, tools []byte) error {
	var err error
	e.arr()
	eachElem(tools, func(t []byte) {
		if err != nil {
			return
		}
		e.elem()
		if str(get(t, "type")) != "function" {
			e.raw(t)
			return
		}
		fn := get(t, "function")
		name := get(fn, "name")
		if !isString(name) {
			err = badRequest("function tool without a name")
			return
		}
		e.obj()
		e.kraw("name", name)
		if d := get(fn, "description"); isString(d) {
			e.kraw("description", d)
		}
		e.key("input_schema")
		if p := get(fn, "parameters"); isObject(p) {
			e.raw(p)
		} else {
			e.raw([]byte(`{"type":"object","properties":{}}`))
		}
		cc := get(t, "cache_control")
		if !present(cc) {
			cc = get(fn, "cache_control")
		}
		if present(cc) {
			e.kraw("cache_control", cc)
		}
		e.endObj()
	})
	e.endArr()
	return err
}

// writeToolChoice maps tool_choice and parallel_tool_calls=false (which is
// disable_parallel_tool_use inside Anthropic's tool_choice).
func writeToolChoice(e *enc, choice, parallel []byte, haveTools bool) {
	noParallel := string(parallel) == "false"
	var tc []byte
	switch {
	case isString(choice):
		switch str(choice) {
		case "auto":
			tc = []byte(`{"type":"auto"}`)
		case "none":
			tc = []byte(`{"type":"none"}`)
		case "required", "any":
			tc = []byte(`{"type":"any"}`)
		}
	case isObject(choice):
		switch str(get(choice, "type")) {
		case "function":
			if name := get(get(choice, "function"), "name"); isString(name) {
				tc = append(append([]byte(`{"type":"tool","name":`), name...), '}')
			}
		case "auto", "any", "tool", "none":
			tc = choice // already Anthropic-shaped
		}
	}
	if noParallel && haveTools {
		if tc == nil {
			tc = []byte(`{"type":"auto"}`)
		}
		if str(get(tc, "type")) != "none" {
			tc, _ = jsonx.SetField(tc, "disable_parallel_tool_use", []byte("true"))
		}
	}
	if tc != nil {
		e.kraw("tool_choice", tc)
	}
}
