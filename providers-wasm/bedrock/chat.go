package main

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// droppedFields are OpenAI request fields Converse has no counterpart for.
// They are dropped rather than forwarded in additionalModelRequestFields,
// where the model would reject them as unknown.
var droppedFields = map[string]bool{
	"model": true, "messages": true, "stream": true, "stream_options": true, "n": true, "seed": true,
	"user": true, "metadata": true, "logprobs": true, "top_logprobs": true, "presence_penalty": true,
	"frequency_penalty": true, "logit_bias": true, "parallel_tool_calls": true,
	"service_tier": true, "store": true, "modalities": true, "audio": true, "prediction": true,
	"web_search_options": true, "prompt_cache_key": true, "safety_identifier": true, "verbosity": true,
	"fallbacks": true,
}

// nativeFields are Converse request members a client may send as they are
// (top-level in the unified body); they are copied to the Converse body.
var nativeFields = map[string]bool{
	"guardrailConfig": true, "performanceConfig": true, "promptVariables": true,
	"additionalModelResponseFieldPaths": true, "requestMetadata": true,
}

// chatFields are the spans of the unified request chatRequest reads.
type chatFields struct {
	messages, maxTokens, maxCompletionTokens, temperature, topP, stop []byte
	tools, toolChoice, reasoningEffort, reasoning, additional         []byte
	responseFormat                                                    []byte
	native                                                            []byte // `"k":v` members, comma-joined
	extra                                                             []member
}

// member is one object member: escaped key and raw value.
type member struct{ key, v []byte }

// chatRequest translates a unified chat request into a Converse request.
func chatRequest(r reqInput) ([]byte, error) {
	op := "converse"
	if r.stream {
		op = "converse-stream"
	}
	url, err := modelURL(r, op)
	if err != nil {
		return nil, err
	}
	body, err := converseBody(r.body, r.model)
	if err != nil {
		return nil, err
	}
	return appendSpec(make([]byte, 0, len(body)+256), "POST", url, body, r.stream), nil
}

// converseBody builds the Converse JSON body from the unified body b.
func converseBody(b []byte, model string) ([]byte, error) {
	var f chatFields
	ok := forEachField(b, 0, func(key []byte, vs, ve int) bool {
		v := b[vs:ve]
		switch k := string(key); k {
		case "messages":
			f.messages = v
		case "max_tokens":
			f.maxTokens = v
		case "max_completion_tokens":
			f.maxCompletionTokens = v
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
		case "response_format":
			f.responseFormat = v
		case "reasoning_effort":
			f.reasoningEffort = v
		case "reasoning":
			f.reasoning = v
		case "additionalModelRequestFields":
			f.additional = v
		default:
			switch {
			case droppedFields[k] || isNull(v):
			case nativeFields[k]:
				f.native = appendMember(f.native, key, v)
			default:
				// Model-specific parameters (top_k, ...) go where Converse
				// takes what it does not model itself.
				f.extra = append(f.extra, member{key, v})
			}
		}
		return true
	})
	if !ok {
		return nil, badRequest("request body is not a JSON object")
	}
	out := make([]byte, 0, len(b)+256)
	out = append(out, '{')
	var err error
	if out, err = appendMessages(out, f.messages); err != nil {
		return nil, err
	}
	maxTokens := f.maxCompletionTokens
	if isNull(maxTokens) {
		maxTokens = f.maxTokens
	}
	thinking, maxTokens, err := thinkingConfig(model, f.reasoningEffort, f.reasoning, maxTokens)
	if err != nil {
		return nil, err
	}
	if out, err = appendInferenceConfig(out, maxTokens, f.temperature, f.topP, f.stop); err != nil {
		return nil, err
	}
	schema, err := jsonSchema(f.responseFormat)
	if err != nil {
		return nil, err
	}
	if out, err = appendToolConfig(out, f.tools, f.toolChoice, schema); err != nil {
		return nil, err
	}
	if len(f.extra) > 0 || len(thinking) > 0 || !isNull(f.additional) {
		explicit := []byte("{}")
		if !isNull(f.additional) {
			if f.additional[0] != '{' {
				return nil, badRequest("additionalModelRequestFields must be an object")
			}
			explicit = f.additional
		}
		out = appendKey(out, "additionalModelRequestFields")
		out = append(out, '{')
		// What the client put in additionalModelRequestFields itself wins
		// over what the adapter derives, without sending a key twice.
		for _, m := range f.extra {
			if _, _, dup := jsonx.ObjectField(explicit, 0, unescape(m.key)); !dup {
				out = appendRawString(appendComma(out), m.key)
				out = append(append(out, ':'), m.v...)
			}
		}
		if _, _, dup := jsonx.ObjectField(explicit, 0, "thinking"); len(thinking) > 0 && !dup {
			out = appendComma(out)
			out = append(out, thinking...)
		}
		if inner := bytes.TrimSpace(explicit[1 : len(explicit)-1]); len(inner) > 0 {
			out = appendComma(out)
			out = append(out, inner...)
		}
		out = append(out, '}')
	}
	if len(f.native) > 0 {
		out = appendComma(out)
		out = append(out, f.native...)
	}
	return append(out, '}'), nil
}

// appendMember appends `"key":v` to a comma-joined member list.
func appendMember(dst, key, v []byte) []byte {
	if len(dst) > 0 {
		dst = append(dst, ',')
	}
	dst = appendRawString(dst, key)
	dst = append(dst, ':')
	return append(dst, v...)
}

// appendMessages writes "messages" and "system". Converse wants user and
// assistant turns to alternate, so consecutive same-role messages (a run of
// tool results, a tool result followed by a user question) are merged into
// one turn. Each message's blocks are built in one reused scratch buffer
// and copied into the open turn, which keeps the hot path free of
// per-message allocations.
func appendMessages(out, msgs []byte) ([]byte, error) {
	if isNull(msgs) || msgs[0] != '[' {
		return nil, badRequest("messages must be an array")
	}
	out = appendKey(out, "messages")
	out = append(out, '[')
	var system, scratch []byte
	var err error
	open := "" // role of the turn being written, "" before the first
	add := func(role string, blocks []byte) {
		if len(blocks) == 0 {
			return // Converse rejects messages without content
		}
		if role == open {
			out = append(out, ',')
			out = append(out, blocks...)
			return
		}
		if open != "" {
			out = append(out, "]},"...)
		}
		open = role
		out = append(out, `{"role":"`...)
		out = append(out, role...)
		out = append(out, `","content":[`...)
		out = append(out, blocks...)
	}
	i := 0
	eachElement(msgs, func(m []byte) {
		if err != nil {
			return
		}
		i++
		at := func() string { return "messages[" + strconv.Itoa(i-1) + "]" }
		if m[0] != '{' {
			err = badRequest(at() + " is not an object")
			return
		}
		role := strValue(m, "role")
		content, _ := field(m, "content")
		switch role {
		case "system", "developer":
			// Converse has one system prompt, outside the messages.
			system, err = appendContent(system, content, at, false)
		case "user":
			scratch, err = appendContent(scratch[:0], content, at, true)
			add("user", scratch)
		case "assistant":
			if scratch, err = appendContent(scratch[:0], content, at, false); err == nil {
				scratch, err = appendToolUses(scratch, m, at)
			}
			add("assistant", scratch)
		case "tool":
			scratch, err = toolResult(scratch[:0], m, content, at)
			add("user", scratch)
		default:
			err = badRequest(at() + ": role " + strconv.Quote(role) + " is not supported (use system, user, assistant or tool)")
		}
	})
	if err != nil {
		return nil, err
	}
	if open == "" {
		return nil, badRequest("messages must contain at least one user or assistant message with content")
	}
	out = append(out, "]}]"...)
	if len(system) > 0 {
		out = appendKey(out, "system")
		out = append(out, '[')
		out = append(out, system...)
		out = append(out, ']')
	}
	return out, nil
}

// appendContent appends the content blocks of a message content (a string
// or an array of parts) to the comma-joined list dst.
func appendContent(dst, content []byte, at func() string, images bool) ([]byte, error) {
	if isNull(content) {
		return dst, nil
	}
	switch content[0] {
	case '"':
		return appendText(dst, content[1:len(content)-1]), nil
	case '[':
	default:
		return nil, badRequest(at() + ".content must be a string or an array of parts")
	}
	var err error
	j := 0
	eachElement(content, func(p []byte) {
		if err != nil {
			return
		}
		j++
		pat := func() string { return at() + ".content[" + strconv.Itoa(j-1) + "]" }
		if p[0] != '{' {
			err = badRequest(pat() + " is not an object")
			return
		}
		switch typ := strValue(p, "type"); typ {
		case "text":
			if t, ok := strField(p, "text"); ok {
				dst = appendText(dst, t)
			}
			// Anthropic-style cache_control marks the end of a cacheable
			// prefix; Converse expresses that as a cachePoint block.
			if cc, ok := field(p, "cache_control"); ok && !isNull(cc) && len(dst) > 0 {
				dst = append(appendComma(dst), `{"cachePoint":{"type":"default"}}`...)
			}
		case "file":
			if !images {
				err = badRequest(pat() + ": files are only supported in user messages")
				return
			}
			dst, err = appendDocument(dst, p, j, pat)
		case "image_url":
			if !images {
				err = badRequest(pat() + ": images are only supported in user messages")
				return
			}
			dst, err = appendImage(dst, p, pat)
		default:
			err = badRequest(pat() + ": content part type " + strconv.Quote(typ) + " is not supported by the Bedrock adapter (text, image_url)")
		}
	})
	return dst, err
}

// appendText appends a {"text"} block for escaped text, skipping empty or
// blank text, which Converse rejects.
func appendText(dst, raw []byte) []byte {
	if len(raw) == 0 || len(raw) < 64 && strings.TrimSpace(unescape(raw)) == "" {
		return dst
	}
	dst = appendComma(dst)
	dst = append(dst, `{"text":"`...)
	dst = append(dst, raw...)
	return append(dst, `"}`...)
}

// appendImage appends an {"image"} block for a data: URL image part.
// Converse only takes image bytes inline; fetching remote URLs would make
// the adapter do network I/O, which plugins never do.
func appendImage(dst, part []byte, at func() string) ([]byte, error) {
	iu, _ := field(part, "image_url")
	var raw []byte
	if len(iu) > 0 && iu[0] == '{' {
		raw, _ = strField(iu, "url")
	} else {
		raw, _ = rawString(iu)
	}
	comma := bytes.IndexByte(raw, ',')
	if comma < 0 || !bytes.HasPrefix(raw, []byte("data:")) {
		return nil, badRequest(at() + ": Bedrock needs inline images: send image_url.url as a data URL " +
			"(data:image/png;base64,...); remote image URLs are not fetched")
	}
	// The prefix may hold JSON escapes ("image\/png"); the base64 payload
	// is copied still escaped.
	prefix := unescape(raw[:comma])
	mime, ok := strings.CutSuffix(strings.TrimPrefix(prefix, "data:"), ";base64")
	if !ok {
		return nil, badRequest(at() + ": image data URL must be base64 encoded (data:image/png;base64,...)")
	}
	var format string
	switch strings.ToLower(mime) {
	case "image/png":
		format = "png"
	case "image/jpeg", "image/jpg":
		format = "jpeg"
	case "image/gif":
		format = "gif"
	case "image/webp":
		format = "webp"
	default:
		return nil, badRequest(at() + ": image type " + strconv.Quote(mime) + " is not supported by Bedrock (png, jpeg, gif, webp)")
	}
	dst = appendComma(dst)
	dst = append(dst, `{"image":{"format":"`...)
	dst = append(dst, format...)
	dst = append(dst, `","source":{"bytes":"`...)
	dst = append(dst, raw[comma+1:]...)
	return append(dst, `"}}}`...), nil
}

// documentFormats maps data URL media types to Converse document formats.
var documentFormats = map[string]string{
	"application/pdf": "pdf", "text/csv": "csv", "text/html": "html", "text/plain": "txt", "text/markdown": "md",
	"application/msword": "doc", "application/vnd.ms-excel": "xls",
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet":       "xlsx",
}

// appendDocument appends a {"document"} block for a "file" part carrying
// file_data as a data URL (uploaded file ids cannot be resolved here).
func appendDocument(dst, part []byte, n int, at func() string) ([]byte, error) {
	f, _ := field(part, "file")
	raw, _ := strField(f, "file_data")
	comma := bytes.IndexByte(raw, ',')
	if comma < 0 || !bytes.HasPrefix(raw, []byte("data:")) {
		return nil, badRequest(at() + ": Bedrock needs inline files: send file.file_data as a base64 data URL; file ids are not supported")
	}
	mime, ok := strings.CutSuffix(strings.TrimPrefix(unescape(raw[:comma]), "data:"), ";base64")
	format := documentFormats[strings.ToLower(mime)]
	if !ok || format == "" {
		return nil, badRequest(at() + ": file type " + strconv.Quote(mime) + " is not supported by Bedrock (pdf, csv, doc, docx, xls, xlsx, html, txt, md as base64 data URLs)")
	}
	dst = appendComma(dst)
	dst = append(dst, `{"document":{"format":"`...)
	dst = append(dst, format...)
	dst = append(dst, `","name":`...)
	dst = appendString(dst, documentName(strValue(f, "filename"), n))
	dst = append(dst, `,"source":{"bytes":"`...)
	dst = append(dst, raw[comma+1:]...)
	return append(dst, `"}}}`...), nil
}

// documentName derives the name Converse requires from a file name: only
// letters, digits, single spaces, hyphens, parentheses and square brackets
// are allowed, and names must differ within a request (n is the part's
// position, a fallback that keeps them apart).
func documentName(filename string, n int) string {
	if i := strings.LastIndexByte(filename, '.'); i > 0 {
		filename = filename[:i]
	}
	var b strings.Builder
	space := false
	for _, r := range filename {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-()[]", r):
			b.WriteRune(r)
			space = false
		case !space && b.Len() > 0:
			b.WriteByte(' ')
			space = true
		}
	}
	if name := strings.TrimSpace(b.String()); name != "" {
		return name
	}
	return "document-" + strconv.Itoa(n)
}

// appendToolUses appends a {"toolUse"} block per tool call of an
// assistant message.
func appendToolUses(dst, m []byte, at func() string) ([]byte, error) {
	calls, ok := field(m, "tool_calls")
	if !ok || isNull(calls) {
		return dst, nil
	}
	if calls[0] != '[' {
		return nil, badRequest(at() + ".tool_calls must be an array")
	}
	var err error
	j := 0
	eachElement(calls, func(tc []byte) {
		if err != nil {
			return
		}
		j++
		cat := func() string { return at() + ".tool_calls[" + strconv.Itoa(j-1) + "]" }
		fn, _ := field(tc, "function")
		id, _ := strField(tc, "id")
		name, _ := strField(fn, "name")
		if len(id) == 0 || len(name) == 0 {
			err = badRequest(cat() + " needs an id and a function name")
			return
		}
		// arguments is a JSON document inside a JSON string; Converse
		// wants the document itself.
		args := "{}"
		if raw, ok := strField(fn, "arguments"); ok {
			if s := strings.TrimSpace(unescape(raw)); s != "" {
				args = s
			}
		}
		if !jsonx.Valid([]byte(args)) || args[0] != '{' {
			err = badRequest(cat() + ".function.arguments is not a JSON object")
			return
		}
		dst = appendComma(dst)
		dst = append(dst, `{"toolUse":{"toolUseId":"`...)
		dst = append(dst, id...)
		dst = append(dst, `","name":"`...)
		dst = append(dst, name...)
		dst = append(dst, `","input":`...)
		dst = append(dst, args...)
		dst = append(dst, "}}"...)
	})
	return dst, err
}

// toolResult builds the {"toolResult"} block of a tool message. Results
// stay text: json result blocks are not accepted by every model family on
// Bedrock, and text is what the OpenAI wire carries. No status is sent:
// OpenAI has no error flag and only Claude models take the field.
func toolResult(dst, m, content []byte, at func() string) ([]byte, error) {
	id, _ := strField(m, "tool_call_id")
	if len(id) == 0 {
		return nil, badRequest(at() + ": a tool message needs tool_call_id")
	}
	dst = append(dst, `{"toolResult":{"toolUseId":"`...)
	dst = append(dst, id...)
	dst = append(dst, `","content":[`...)
	n := len(dst)
	dst, err := appendContent(dst, content, at, false)
	if err != nil {
		return nil, err
	}
	if len(dst) == n {
		dst = append(dst, `{"text":"(empty)"}`...) // Converse rejects empty results
	}
	return append(dst, "]}}"...), nil
}

// appendInferenceConfig appends inferenceConfig when any of its fields is
// set; numbers are copied as sent.
func appendInferenceConfig(out, maxTokens, temperature, topP, stop []byte) ([]byte, error) {
	var ic []byte
	for _, p := range [...]struct {
		name string
		v    []byte
	}{{"maxTokens", maxTokens}, {"temperature", temperature}, {"topP", topP}} {
		if isNull(p.v) {
			continue
		}
		if !isNumber(p.v) {
			return nil, badRequest(p.name + " must be a number")
		}
		ic = appendKey(ic, p.name)
		ic = append(ic, p.v...)
	}
	if !isNull(stop) {
		switch stop[0] {
		case '"':
			ic = appendKey(ic, "stopSequences")
			ic = append(ic, '[')
			ic = append(ic, stop...)
			ic = append(ic, ']')
		case '[':
			ok := true
			eachElement(stop, func(s []byte) { ok = ok && s[0] == '"' })
			if !ok {
				return nil, badRequest("stop must be a string or an array of strings")
			}
			ic = appendKey(ic, "stopSequences")
			ic = append(ic, stop...)
		default:
			return nil, badRequest("stop must be a string or an array of strings")
		}
	}
	if len(ic) == 0 {
		return out, nil
	}
	out = appendKey(out, "inferenceConfig")
	out = append(out, '{')
	out = append(out, ic...)
	return append(out, '}'), nil
}

// jsonToolName is the tool that carries structured output. Converse has no
// response_format; a tool whose input schema is the requested JSON schema,
// which the model is made to call, gives the same guarantee. The response
// and stream mapping turn that call back into message content.
const jsonToolName = "json_tool_call"

// jsonSchema returns the schema of a json_schema response_format, nil for
// none. json_object has no schema to enforce and is left to the prompt.
func jsonSchema(rf []byte) ([]byte, error) {
	if isNull(rf) || rf[0] != '{' || strValue(rf, "type") != "json_schema" {
		return nil, nil
	}
	js, _ := field(rf, "json_schema")
	if schema, ok := field(js, "schema"); ok && len(schema) > 0 && schema[0] == '{' {
		return schema, nil
	}
	return []byte(`{"type":"object"}`), nil
}

// appendToolConfig translates tools and tool_choice, adding the structured
// output tool when schema is set.
func appendToolConfig(out, tools, choice, schema []byte) ([]byte, error) {
	if isNull(tools) {
		tools = []byte("[]")
	}
	if tools[0] != '[' {
		return nil, badRequest("tools must be an array")
	}
	var err error
	var specs []byte
	if schema != nil {
		specs = append(specs, `{"toolSpec":{"name":"`+jsonToolName+`","description":"Answer with a JSON object that matches this schema.","inputSchema":{"json":`...)
		specs = append(specs, schema...)
		specs = append(specs, "}}}"...)
		if string(tools) == "[]" {
			// Without tools of the client's, force the JSON answer. With
			// them, the client's tool_choice stands and the model picks
			// between calling a tool and answering.
			choice = []byte(`{"type":"function","function":{"name":"` + jsonToolName + `"}}`)
		}
	}
	j := 0
	eachElement(tools, func(t []byte) {
		if err != nil {
			return
		}
		at := "tools[" + strconv.Itoa(j) + "]"
		j++
		if typ := strValue(t, "type"); typ != "function" {
			err = badRequest(at + ": tool type " + strconv.Quote(typ) + " is not supported by Bedrock (function)")
			return
		}
		fn, _ := field(t, "function")
		name, _ := strField(fn, "name")
		if len(name) == 0 {
			err = badRequest(at + ".function.name is required")
			return
		}
		specs = appendComma(specs)
		specs = append(specs, `{"toolSpec":{"name":"`...)
		specs = append(specs, name...)
		specs = append(specs, '"')
		if d, ok := strField(fn, "description"); ok && len(d) > 0 {
			specs = append(specs, `,"description":"`...)
			specs = append(specs, d...)
			specs = append(specs, '"')
		}
		specs = append(specs, `,"inputSchema":{"json":`...)
		if p, ok := field(fn, "parameters"); ok && !isNull(p) {
			specs = append(specs, p...)
		} else {
			// Converse requires a schema; a tool without parameters takes
			// an empty object.
			specs = append(specs, `{"type":"object","properties":{}}`...)
		}
		specs = append(specs, "}}}"...)
	})
	if err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return out, nil
	}
	out = appendKey(out, "toolConfig")
	out = append(out, `{"tools":[`...)
	out = append(out, specs...)
	out = append(out, ']')
	if !isNull(choice) {
		switch {
		case choice[0] == '"':
			switch s, _ := rawString(choice); string(s) {
			case "auto":
				out = append(out, `,"toolChoice":{"auto":{}}`...)
			case "required":
				out = append(out, `,"toolChoice":{"any":{}}`...)
			case "none":
				// Converse has no "none"; the tools must stay declared when
				// the history holds tool use, so the choice is left to the
				// model.
			default:
				return nil, badRequest("tool_choice " + string(choice) + " is not supported (auto, required, none or a function)")
			}
		case choice[0] == '{':
			fn, _ := field(choice, "function")
			name, ok := strField(fn, "name")
			if !ok || len(name) == 0 {
				return nil, badRequest("tool_choice.function.name is required")
			}
			out = append(out, `,"toolChoice":{"tool":{"name":"`...)
			out = append(out, name...)
			out = append(out, `"}}`...)
		default:
			return nil, badRequest("tool_choice must be a string or an object")
		}
	}
	return append(out, '}'), nil
}

// Thinking budgets per reasoning_effort. Claude takes at least 1024 tokens
// and needs maxTokens above the budget.
var thinkingBudgets = map[string]int64{"minimal": 1024, "low": 2048, "medium": 8192, "high": 24576}

// thinkingConfig turns reasoning_effort (or an OpenRouter-style
// "reasoning": {"effort", "max_tokens"}) into Claude's extended thinking
// member `"thinking":{...}` for additionalModelRequestFields. It returns
// the maxTokens to send, raised when unset so the budget fits. Other model
// families take no such field, so for them the setting is ignored.
func thinkingConfig(model string, effort, reasoning, maxTokens []byte) ([]byte, []byte, error) {
	var level string
	var budget int64
	if !isNull(effort) {
		s, ok := rawString(effort)
		if !ok {
			return nil, nil, badRequest("reasoning_effort must be a string")
		}
		level = string(s)
	}
	if !isNull(reasoning) && reasoning[0] == '{' {
		if e := strValue(reasoning, "effort"); e != "" {
			level = e
		}
		budget, _ = intValue(reasoning, "max_tokens")
	}
	if level == "" && budget == 0 || level == "none" || !isClaude(model) {
		return nil, maxTokens, nil
	}
	if budget == 0 {
		var ok bool
		if budget, ok = thinkingBudgets[level]; !ok {
			return nil, nil, badRequest("reasoning_effort " + strconv.Quote(level) + " is not supported (minimal, low, medium, high, none)")
		}
	}
	if budget < 1024 {
		budget = 1024
	}
	if isNull(maxTokens) {
		maxTokens = strconv.AppendInt(nil, budget+4096, 10)
	} else if mt, err := strconv.ParseInt(string(maxTokens), 10, 64); err != nil {
		return nil, nil, badRequest("max_tokens must be an integer")
	} else if mt <= 1024 {
		return nil, nil, badRequest("extended thinking needs max_tokens above 1024")
	} else if budget >= mt {
		budget = mt - 1 // Claude requires budget_tokens < max_tokens
	}
	t := []byte(`"thinking":{"type":"enabled","budget_tokens":`)
	t = strconv.AppendInt(t, budget, 10)
	return append(t, '}'), maxTokens, nil
}

// isClaude reports whether a model id (or inference profile) is Anthropic's.
func isClaude(model string) bool {
	return strings.Contains(model, "anthropic.") || strings.Contains(model, "claude")
}
