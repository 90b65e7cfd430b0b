package main

import (
	"bytes"
	"strconv"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// defaultMaxTokens fills max_tokens when the client sent none: the Messages
// API requires it, the unified (OpenAI) wire does not.
const defaultMaxTokens = 4096

// effortBudget maps OpenAI's reasoning_effort to an extended-thinking
// budget (0: none). 1024 is the smallest budget Anthropic accepts.
func effortBudget(effort []byte) int64 {
	switch string(effort) {
	case "minimal", "low":
		return 1024
	case "medium":
		return 4096
	case "high":
		return 16384
	}
	return 0
}

// dropped reports the unified (OpenAI) request fields with no Messages
// equivalent. The Messages API rejects unknown fields, so these must not
// pass through, while any other unknown field (top_k, thinking, container,
// mcp_servers...) is Anthropic-specific and does.
func dropped(key []byte) bool {
	switch string(key) {
	case "n", "presence_penalty", "frequency_penalty", "logit_bias",
		"logprobs", "top_logprobs", "seed", "response_format",
		"store", "service_tier", "modalities", "audio",
		"prediction", "stream_options", "web_search_options",
		"functions", "function_call", "verbosity",
		"prompt_cache_key", "safety_identifier", "metadata",
		// Fields this adapter writes itself.
		"system", "stop_sequences":
		return true
	}
	return false
}

// The request is translated in two phases. Reading walks the input once,
// front to back, with a jsonx.Reader: the unified body is read where it
// sits in the adapt_request input, messages and tools where they sit in
// the body, and what the translation needs is kept as spans of the input
// (blocks, tools). Writing then lays the Messages request out in its own
// order from those spans. Under wasm, scanning the input is a large part of
// the adapter's time, and this reads each byte of a message about once
// where finding fields one by one read it four to eight times.

// AdaptRequest implements adapt_request: a pluginsdk.AdaptRequestInput in,
// a pluginsdk.UpstreamRequest spec out.
func (a *Adapter) AdaptRequest(input []byte) (pluginsdk.Output, error) {
	if !a.valid(input) {
		return pluginsdk.Output{}, badRequest("adapt_request: input is not JSON")
	}
	var reqType, model []byte
	var stream bool
	var f chatFields
	r := jsonx.NewReader(input)
	if r.Object() {
		for k, ok := r.Member(); ok; k, ok = r.Member() {
			switch string(k) {
			case "request_type":
				reqType = r.Value()
			case "model":
				model = r.Value()
			case "stream":
				stream = string(r.Value()) == "true"
			case "body":
				f.read(&r)
			}
		}
	}
	if r.Failed() {
		// Only reachable with validation off: say so rather than translate
		// half a document.
		return pluginsdk.Output{}, badRequest("adapt_request: input is not JSON")
	}
	var e enc
	e.b = make([]byte, 0, len(input)+len(input)/8+512)
	switch string(text(reqType)) {
	case pluginsdk.RequestChat, "":
		e.lit(`{"method":"POST","path":"/messages","headers":{"anthropic-version":"` + anthropicVersion + `"},"body":`)
		if err := writeMessagesBody(&e, &f, model, stream, false); err != nil {
			return pluginsdk.Output{}, err
		}
		if stream {
			e.lit(`,"stream":true`)
		}
	case pluginsdk.RequestCountTokens:
		e.lit(`{"method":"POST","path":"/messages/count_tokens","headers":{"anthropic-version":"` + anthropicVersion + `"},"body":`)
		if err := writeMessagesBody(&e, &f, model, false, true); err != nil {
			return pluginsdk.Output{}, err
		}
	case pluginsdk.RequestListModels:
		// The API pages by 20 by default; 1000 is its maximum page, enough
		// for the whole catalogue in one call.
		e.lit(`{"method":"GET","path":"/models?limit=1000","headers":{"anthropic-version":"` + anthropicVersion + `"}`)
	default:
		return pluginsdk.Output{}, badRequest("adapter-anthropic does not translate %q requests", text(reqType))
	}
	e.endObj()
	return pluginsdk.Replace(e.b), nil
}

// chatFields is what the mapping takes from a unified chat body.
type chatFields struct {
	// object: the body was a JSON object (it was read).
	object bool
	// Raw values of the scalar fields (nil when absent).
	model, maxTokens, maxCompletion, temperature, topP, stop []byte
	toolChoice, parallel, user, effort, thinking             []byte
	// messages: "messages" was an array, read into conv.
	messages bool
	conv     conversation
	// tools: "tools" was an array, read into toolList.
	tools    bool
	toolList []tool
	toolErr  error
	// extra are unknown fields, passed through in order.
	extra [][2][]byte
}

// read reads the body object the reader is at; a body that is not an
// object is left for the reader to skip, and f.object stays false. A later
// "body" member replaces an earlier one, as it does for encoding/json.
func (f *chatFields) read(r *jsonx.Reader) {
	if r.Kind() != '{' {
		*f = chatFields{}
		return
	}
	*f = chatFields{object: true, conv: f.conv.reset(), toolList: f.toolList[:0], extra: f.extra[:0]}
	r.Object()
	for k, ok := r.Member(); ok; k, ok = r.Member() {
		switch string(k) {
		case "model":
			f.model = r.Value()
		case "messages":
			f.messages = r.Kind() == '['
			f.conv = f.conv.reset()
			if f.messages {
				f.conv.read(r)
			}
		case "max_tokens":
			f.maxTokens = r.Value()
		case "max_completion_tokens":
			f.maxCompletion = r.Value()
		case "temperature":
			f.temperature = r.Value()
		case "top_p":
			f.topP = r.Value()
		case "stop":
			f.stop = r.Value()
		case "tools":
			f.tools = r.Kind() == '['
			f.toolList, f.toolErr = f.toolList[:0], nil
			if f.tools {
				f.toolList, f.toolErr = readTools(r, f.toolList)
			}
		case "tool_choice":
			f.toolChoice = r.Value()
		case "parallel_tool_calls":
			f.parallel = r.Value()
		case "user":
			f.user = r.Value()
		case "reasoning_effort":
			f.effort = r.Value()
		case "thinking":
			f.thinking = r.Value()
		case "stream":
			// The host's Stream flag decides; the body's copy is ignored.
		default:
			if !dropped(k) {
				f.extra = append(f.extra, [2][]byte{k, r.Value()})
			}
		}
	}
}

// writeMessagesBody writes the Messages request for a unified chat body.
// count leaves out what count_tokens rejects: max_tokens, stream and the
// sampling parameters.
func writeMessagesBody(e *enc, f *chatFields, model []byte, stream, count bool) error {
	if !f.object {
		return badRequest("request body is not a JSON object")
	}
	e.obj()
	e.key("model")
	if isString(model) && len(model) > 2 {
		e.strOf(model)
	} else if isString(f.model) {
		e.raw(f.model)
	} else {
		return badRequest("model is required")
	}

	// Extended thinking: an explicit Anthropic "thinking" object wins over
	// reasoning_effort, which only picks a budget.
	var budget int64
	if !present(f.thinking) && isString(f.effort) {
		budget = effortBudget(text(f.effort))
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

	if !f.messages {
		return badRequest("messages must be an array")
	}
	if f.conv.err != nil {
		return f.conv.err
	}
	f.conv.write(e)

	if f.tools {
		if f.toolErr != nil {
			return f.toolErr
		}
		e.key("tools")
		writeTools(e, f.toolList)
	}
	writeToolChoice(e, f.toolChoice, f.parallel, f.tools)

	if present(f.thinking) {
		e.kraw("thinking", f.thinking)
	} else if budget > 0 {
		e.lit(`,"thinking":{"type":"enabled","budget_tokens":`)
		e.int(budget)
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
		e.raw(f.stop)
		e.endArr()
	case isArray(f.stop):
		e.kraw("stop_sequences", f.stop)
	}
	if isString(f.user) && len(f.user) > 2 {
		e.lit(`,"metadata":{"user_id":`)
		e.raw(f.user)
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
		e.lit(`,"stream":true`)
	}
	e.endObj()
	return nil
}

// blockKind says how a block is written and what its spans hold.
type blockKind uint8

const (
	// kText: a text (raw JSON string), c its cache_control (nil: none).
	kText blockKind = iota
	// kSourceURL: an image (or document) block with a url source; a the
	// URL (raw string).
	kSourceURL
	// kSourceB64: an image (or document) block with a base64 source; a the
	// media type and b the data, both as they sit inside a data: URL.
	kSourceB64
	// kFileID: a document with a file source; a the file id.
	kFileID
	// kThinking: a the thinking (raw string), b the signature.
	kThinking
	// kRedacted: a the redacted_thinking data.
	kRedacted
	// kToolUse: a the id, b the name, c the input object.
	kToolUse
	// kToolResult: a the tool_use_id, b string content (nil: none),
	// nested[n0:n1] array content; isError for is_error true.
	kToolResult
	// kRaw: a an Anthropic-native block a client sent as it is.
	kRaw
)

// block is one Messages content block, held as spans of the input and
// written by writeBlock. c is cache_control where the kind carries one.
type block struct {
	kind blockKind
	// role is 's' (system), 'u' (user) or 'a' (assistant); turns are runs
	// of blocks of one role.
	role byte
	// toolResult blocks must lead their user message.
	toolResult bool
	isError    bool
	// document: a source block is a document, not an image.
	document bool
	a, b, c  []byte
	n0, n1   int32
}

// plainText reports a block that is nothing but text, so a lone text block
// can be sent as string content and system texts can be joined.
func (b *block) plainText() bool { return b.kind == kText && b.c == nil }

// conversation holds the blocks of the unified messages, in order, system
// parts included (role 's').
type conversation struct {
	blocks []block
	// nested holds the blocks of tool results' array content.
	nested []block
	// err is the first message that cannot be translated.
	err error
}

func (c conversation) reset() conversation {
	return conversation{blocks: c.blocks[:0], nested: c.nested[:0]}
}

// read reads the messages array the reader is at.
func (c *conversation) read(r *jsonx.Reader) {
	if c.blocks == nil {
		c.blocks = make([]block, 0, 8)
	}
	for r.Array(); r.Element(); {
		if c.err != nil {
			continue // the rest is skipped
		}
		if r.Kind() != '{' {
			c.err = badRequest("each message must be an object")
			continue
		}
		c.err = c.message(r)
	}
}

// message reads one message object. Its members are taken as spans in one
// pass (the first of a repeated key, as a lookup would find it); blocks are
// then built in Messages order whatever the order of the members.
func (c *conversation) message(r *jsonx.Reader) error {
	var role, content, toolCalls, thinking, toolCallID, isError []byte
	r.Object()
	for k, ok := r.Member(); ok; k, ok = r.Member() {
		var dst *[]byte
		switch string(k) {
		case "role":
			dst = &role
		case "content":
			dst = &content
		case "tool_calls":
			dst = &toolCalls
		case "thinking_blocks":
			dst = &thinking
		case "tool_call_id":
			dst = &toolCallID
		case "is_error":
			dst = &isError
		}
		if dst != nil && *dst == nil {
			*dst = r.Value()
		}
	}
	switch rs := text(role); string(rs) {
	case "system", "developer":
		return c.content(content, 's')
	case "user":
		return c.content(content, 'u')
	case "assistant":
		return c.assistant(thinking, content, toolCalls)
	case "tool":
		return c.toolResult(toolCallID, content, isError)
	default:
		return badRequest("message role %q is not supported by the Anthropic wire", string(rs))
	}
}

func (c *conversation) add(b block) { c.blocks = append(c.blocks, b) }

// content maps unified content (a string or an array of parts) to blocks.
// Empty texts are dropped: the API rejects them.
func (c *conversation) content(content []byte, role byte) error {
	switch {
	case isString(content):
		if len(content) > 2 {
			c.add(block{kind: kText, role: role, a: content})
		}
		return nil
	case !present(content):
		return nil
	case !isArray(content):
		return badRequest("message content must be a string or an array of parts")
	}
	var err error
	c.blocks, err = appendParts(c.blocks, content, role)
	return err
}

// appendParts appends the blocks of the content parts in the array raw.
func appendParts(dst []block, raw []byte, role byte) ([]block, error) {
	r := jsonx.NewReader(raw)
	for r.Array(); r.Element(); {
		b, ok, err := readPart(&r)
		if err != nil {
			return dst, err
		}
		if ok {
			b.role = role
			dst = append(dst, b)
		}
	}
	return dst, nil
}

// readPart maps the content part the reader is at; ok is false for a part
// to drop.
func readPart(r *jsonx.Reader) (b block, ok bool, err error) {
	if r.Kind() != '{' {
		return block{}, false, badRequest("content parts must be objects")
	}
	start := r.Pos()
	var typ, cc, txt, refusal, url, fileData, fileID []byte
	var haveImage, haveFile bool
	r.Object()
	for k, ok := r.Member(); ok; k, ok = r.Member() {
		switch string(k) {
		case "type":
			if typ == nil {
				typ = r.Value()
			}
		case "cache_control":
			if cc == nil {
				cc = r.Value()
			}
		case "text":
			if txt == nil {
				txt = r.Value()
			}
		case "refusal":
			if refusal == nil {
				refusal = r.Value()
			}
		case "image_url":
			// {"url": ...} or, from some clients, the URL string itself.
			// A base64 image is most of a request: it is read in place.
			if haveImage {
				break
			}
			haveImage = true
			if !r.Object() {
				url = r.Value()
				break
			}
			for k2, ok := r.Member(); ok; k2, ok = r.Member() {
				if string(k2) == "url" && url == nil {
					url = r.Value()
				}
			}
		case "file":
			if haveFile {
				break
			}
			haveFile = true
			if !r.Object() {
				break
			}
			for k2, ok := r.Member(); ok; k2, ok = r.Member() {
				switch string(k2) {
				case "file_data":
					if fileData == nil {
						fileData = r.Value()
					}
				case "file_id":
					if fileID == nil {
						fileID = r.Value()
					}
				}
			}
		}
	}
	if !present(cc) {
		cc = nil
	}
	switch t := string(text(typ)); t {
	case "text", "refusal":
		v := txt
		if t == "refusal" {
			v = refusal
		}
		if !isString(v) {
			return block{}, false, badRequest("%s part without %s", t, t)
		}
		if len(v) == 2 {
			return block{}, false, nil
		}
		return block{kind: kText, a: v, c: cc}, true, nil
	case "image_url":
		if !isString(url) {
			return block{}, false, badRequest("image_url part without url")
		}
		b, err := sourceBlock("image", url, cc)
		return b, err == nil, err
	case "file":
		if isString(fileData) {
			b, err := sourceBlock("document", fileData, cc)
			return b, err == nil, err
		}
		if isString(fileID) {
			return block{kind: kFileID, a: fileID, c: cc}, true, nil
		}
		return block{}, false, badRequest("file part without file_data or file_id")
	case "input_audio":
		return block{}, false, badRequest("audio input is not supported by the Anthropic wire")
	default:
		// Anything else is taken to be an Anthropic-native block (document,
		// search_result...) a client sent on purpose.
		return block{kind: kRaw, a: r.Since(start), toolResult: t == "tool_result"}, true, nil
	}
}

// sourceBlock builds an image or document block from a URL string: data:
// URLs become base64 sources, anything else a url source.
func sourceBlock(typ string, url, cacheControl []byte) (block, error) {
	body := url[1 : len(url)-1]
	if rest, ok := bytes.CutPrefix(body, []byte("data:")); ok {
		meta, data, ok := bytes.Cut(rest, []byte(","))
		mt, isB64 := bytes.CutSuffix(meta, []byte(";base64"))
		if !ok || !isB64 {
			return block{}, badRequest("%s data URL must be base64 encoded", typ)
		}
		return block{kind: kSourceB64, document: typ == "document", a: mt, b: data, c: cacheControl}, nil
	}
	return block{kind: kSourceURL, document: typ == "document", a: url, c: cacheControl}, nil
}

// assistant maps an assistant message: thinking blocks first (the API
// wants them before text and tool use when thinking is on), then content,
// then tool calls as tool_use blocks.
func (c *conversation) assistant(thinking, content, toolCalls []byte) error {
	if isArray(thinking) {
		r := jsonx.NewReader(thinking)
		for r.Array(); r.Element(); {
			var typ, th, sig, data []byte
			if r.Object() {
				for k, ok := r.Member(); ok; k, ok = r.Member() {
					var dst *[]byte
					switch string(k) {
					case "type":
						dst = &typ
					case "thinking":
						dst = &th
					case "signature":
						dst = &sig
					case "data":
						dst = &data
					}
					if dst != nil && *dst == nil {
						*dst = r.Value()
					}
				}
			}
			switch string(text(typ)) {
			case "thinking":
				// A thinking block without its signature is refused
				// upstream, so it is not sent back.
				if isString(sig) && len(sig) > 2 {
					if !isString(th) {
						th = []byte(`""`)
					}
					c.add(block{kind: kThinking, role: 'a', a: th, b: sig})
				}
			case "redacted_thinking":
				if isString(data) {
					c.add(block{kind: kRedacted, role: 'a', a: data})
				}
			}
		}
	}
	if err := c.content(content, 'a'); err != nil {
		return err
	}
	if !isArray(toolCalls) {
		return nil
	}
	r := jsonx.NewReader(toolCalls)
	for r.Array(); r.Element(); {
		var id, name, args []byte
		if r.Object() {
			haveFn := false
			for k, ok := r.Member(); ok; k, ok = r.Member() {
				switch string(k) {
				case "id":
					if id == nil {
						id = r.Value()
					}
				case "function":
					if haveFn {
						break
					}
					haveFn = true
					if !r.Object() {
						break
					}
					for k2, ok := r.Member(); ok; k2, ok = r.Member() {
						switch string(k2) {
						case "name":
							if name == nil {
								name = r.Value()
							}
						case "arguments":
							if args == nil {
								args = r.Value()
							}
						}
					}
				}
			}
		}
		if !isString(id) || !isString(name) {
			return badRequest("tool call without id or function name")
		}
		input, ok := argumentsObject(args)
		if !ok {
			return badRequest("tool call %s: arguments are not a JSON object", str(id))
		}
		c.add(block{kind: kToolUse, role: 'a', a: id, b: name, c: input})
	}
	return nil
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
	var s []byte
	if isString(args) {
		// Arguments are a JSON document inside a JSON string, so they
		// nearly always hold escaped quotes and need decoding.
		s = bytes.TrimSpace(unescapeBytes(args[1 : len(args)-1]))
	}
	if len(s) == 0 {
		return []byte("{}"), true
	}
	if s[0] != '{' || !jsonx.Valid(s) {
		return nil, false
	}
	return s, true
}

// toolResult maps a role "tool" message to a tool_result block.
func (c *conversation) toolResult(id, content, isError []byte) error {
	if !isString(id) {
		return badRequest("tool message without tool_call_id")
	}
	b := block{kind: kToolResult, role: 'u', toolResult: true, a: id,
		// is_error is not in the OpenAI shape, but a client that knows the
		// Anthropic wire (or our ingress hook) may set it.
		isError: string(isError) == "true"}
	switch {
	case isString(content):
		if len(content) > 2 {
			b.b = content
		}
	case isArray(content):
		b.n0 = int32(len(c.nested))
		var err error
		if c.nested, err = appendParts(c.nested, content, 'u'); err != nil {
			return err
		}
		b.n1 = int32(len(c.nested))
	}
	c.add(b)
	return nil
}

// write writes "system" and "messages". Consecutive blocks of one role
// make one message: Messages wants strict user/assistant alternation, so
// consecutive same-role messages (a tool result followed by user text,
// several tool results) become one, and system messages anywhere in the
// conversation neither start nor end a turn.
func (c *conversation) write(e *enc) {
	nsys, plain := 0, true
	for i := range c.blocks {
		if b := &c.blocks[i]; b.role == 's' {
			nsys++
			plain = plain && b.plainText()
		}
	}
	if nsys > 0 {
		e.key("system")
		c.writeSystem(e, plain)
	}
	e.key("messages")
	e.arr()
	bs := c.blocks
	for i := 0; i < len(bs); {
		if bs[i].role == 's' {
			i++
			continue
		}
		// The turn is bs[i:j] without its system blocks.
		role, j, n, last := bs[i].role, i, 0, i
		for ; j < len(bs) && (bs[j].role == role || bs[j].role == 's'); j++ {
			if bs[j].role == role {
				n++
				last = j
			}
		}
		j = last + 1
		e.elem()
		if role == 'u' {
			e.lit(`{"role":"user","content":`)
		} else {
			e.lit(`{"role":"assistant","content":`)
		}
		if n == 1 && bs[i].plainText() {
			e.raw(bs[i].a)
		} else {
			e.arr()
			// Tool results first, in their order, then everything else:
			// the API rejects a user message where text precedes them.
			for pass := 0; pass < 2; pass++ {
				for k := i; k < j; k++ {
					if b := &bs[k]; b.role == role && b.toolResult == (pass == 0) {
						e.elem()
						c.writeBlock(e, b)
					}
				}
			}
			e.endArr()
		}
		e.endObj()
		i = j
	}
	e.endArr()
}

// writeSystem joins plain system texts into one string; as soon as a part
// carries more than text (cache_control), the blocks are kept as blocks so
// prompt caching still works.
func (c *conversation) writeSystem(e *enc, plain bool) {
	if !plain {
		e.arr()
		for i := range c.blocks {
			if b := &c.blocks[i]; b.role == 's' {
				e.elem()
				c.writeBlock(e, b)
			}
		}
		e.endArr()
		return
	}
	e.b = append(e.b, '"')
	first := true
	for i := range c.blocks {
		if b := &c.blocks[i]; b.role == 's' {
			if !first {
				e.b = append(e.b, `\n\n`...)
			}
			first = false
			e.b = append(e.b, b.a[1:len(b.a)-1]...)
		}
	}
	e.b = append(e.b, '"')
}

// writeBlock writes one block as a Messages content block.
func (c *conversation) writeBlock(e *enc, b *block) {
	switch b.kind {
	case kText:
		e.lit(`{"type":"text","text":`)
		e.raw(b.a)
	case kSourceURL, kSourceB64:
		if b.document {
			e.lit(`{"type":"document"`)
		} else {
			e.lit(`{"type":"image"`)
		}
		if b.kind == kSourceB64 {
			e.lit(`,"source":{"type":"base64","media_type":"`)
			e.raw(b.a)
			e.lit(`","data":"`)
			e.raw(b.b)
			e.lit(`"}`)
		} else {
			e.lit(`,"source":{"type":"url","url":`)
			e.raw(b.a)
			e.endObj()
		}
	case kFileID:
		e.lit(`{"type":"document","source":{"type":"file","file_id":`)
		e.raw(b.a)
		e.endObj()
	case kThinking:
		e.lit(`{"type":"thinking","thinking":`)
		e.raw(b.a)
		e.lit(`,"signature":`)
		e.raw(b.b)
	case kRedacted:
		e.lit(`{"type":"redacted_thinking","data":`)
		e.raw(b.a)
	case kToolUse:
		e.lit(`{"type":"tool_use","id":`)
		e.raw(b.a)
		e.lit(`,"name":`)
		e.raw(b.b)
		e.lit(`,"input":`)
		e.raw(b.c)
		e.endObj()
		return
	case kToolResult:
		e.lit(`{"type":"tool_result","tool_use_id":`)
		e.raw(b.a)
		if b.b != nil {
			e.lit(`,"content":`)
			e.raw(b.b)
		} else if b.n1 > b.n0 {
			e.lit(`,"content":[`)
			for k := b.n0; k < b.n1; k++ {
				e.elem()
				c.writeBlock(e, &c.nested[k])
			}
			e.endArr()
		}
		if b.isError {
			e.lit(`,"is_error":true`)
		}
		e.endObj()
		return
	case kRaw:
		e.raw(b.a)
		return
	}
	if b.c != nil {
		e.lit(`,"cache_control":`)
		e.raw(b.c)
	}
	e.endObj()
}

// tool is one entry of "tools": a function tool's parts, or raw for any
// other tool type (Anthropic server tools such as web_search_20250305),
// which passes through as given.
type tool struct {
	raw                           []byte
	name, description, params, cc []byte
}

// readTools reads the tools array the reader is at into dst. err is the
// first function tool without a name.
func readTools(r *jsonx.Reader, dst []tool) ([]tool, error) {
	var err error
	for r.Array(); r.Element(); {
		if err != nil {
			continue
		}
		if r.Kind() != '{' {
			dst = append(dst, tool{raw: r.Value()})
			continue
		}
		start := r.Pos()
		var typ, cc, fnCC []byte
		var t tool
		haveFn := false
		r.Object()
		for k, ok := r.Member(); ok; k, ok = r.Member() {
			switch string(k) {
			case "type":
				if typ == nil {
					typ = r.Value()
				}
			case "cache_control":
				if cc == nil {
					cc = r.Value()
				}
			case "function":
				if haveFn {
					break
				}
				haveFn = true
				if !r.Object() {
					break
				}
				for k2, ok := r.Member(); ok; k2, ok = r.Member() {
					var dst *[]byte
					switch string(k2) {
					case "name":
						dst = &t.name
					case "description":
						dst = &t.description
					case "parameters":
						dst = &t.params
					case "cache_control":
						dst = &fnCC
					}
					if dst != nil && *dst == nil {
						*dst = r.Value()
					}
				}
			}
		}
		if string(text(typ)) != "function" {
			dst = append(dst, tool{raw: r.Since(start)})
			continue
		}
		if !isString(t.name) {
			err = badRequest("function tool without a name")
			continue
		}
		t.cc = cc
		if !present(t.cc) {
			t.cc = fnCC
		}
		dst = append(dst, t)
	}
	return dst, err
}

// writeTools maps function tools to {name, description, input_schema}.
func writeTools(e *enc, tools []tool) {
	e.arr()
	for i := range tools {
		t := &tools[i]
		e.elem()
		if t.raw != nil {
			e.raw(t.raw)
			continue
		}
		e.lit(`{"name":`)
		e.raw(t.name)
		if isString(t.description) {
			e.lit(`,"description":`)
			e.raw(t.description)
		}
		e.lit(`,"input_schema":`)
		if isObject(t.params) {
			e.raw(t.params)
		} else {
			e.lit(`{"type":"object","properties":{}}`)
		}
		if present(t.cc) {
			e.lit(`,"cache_control":`)
			e.raw(t.cc)
		}
		e.endObj()
	}
	e.endArr()
}

// writeToolChoice maps tool_choice and parallel_tool_calls=false (which is
// disable_parallel_tool_use inside Anthropic's tool_choice).
func writeToolChoice(e *enc, choice, parallel []byte, haveTools bool) {
	noParallel := string(parallel) == "false"
	var tc []byte
	switch {
	case isString(choice):
		switch string(text(choice)) {
		case "auto":
			tc = []byte(`{"type":"auto"}`)
		case "none":
			tc = []byte(`{"type":"none"}`)
		case "required", "any":
			tc = []byte(`{"type":"any"}`)
		}
	case isObject(choice):
		switch string(text(get(choice, "type"))) {
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
		if string(text(get(tc, "type"))) != "none" {
			tc, _ = jsonx.SetField(tc, "disable_parallel_tool_use", []byte("true"))
		}
	}
	if tc != nil {
		e.kraw("tool_choice", tc)
	}
}
