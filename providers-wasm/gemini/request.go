package main

import (
	"bytes"
	"strings"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// Vertex defaults: the Vertex SDKs default to us-central1 when a key does
// not name a region, so a key config with only project_id works the same.
const defaultVertexRegion = "us-central1"

// skipSignature is the value Google documents for function-call parts that
// have no thought signature (history built elsewhere, another provider's
// turn): Gemini 3 rejects unsigned function calls otherwise.
const skipSignature = "skip_thought_signature_validator"

// adaptRequest writes the UpstreamRequest spec for ai into dst.
func adaptRequest(dst []byte, ai *adaptInput) ([]byte, error) {
	model := strings.TrimPrefix(ai.model, "models/")
	if strings.ContainsAny(model, "?#/ \t\r\n") && !strings.HasPrefix(model, "tunedModels/") {
		return nil, badRequest("model %q is not a valid Gemini model id", ai.model)
	}
	if ai.body != nil && !isObject(ai.body) {
		return nil, badRequest("request body must be a JSON object")
	}
	vertex := ai.provider == "vertex"
	switch ai.requestType {
	case pluginsdk.RequestChat:
		method := "generateContent"
		if ai.stream {
			// alt=sse gets SSE framing; without it Google streams one JSON
			// array, which the host cannot frame event by event.
			method = "streamGenerateContent?alt=sse"
		}
		dst, err := startSpec(dst, ai, model, method)
		if err != nil {
			return nil, err
		}
		dst, err = appendGenerateBody(dst, ai.body, model, vertex, bodyFull)
		if err != nil {
			return nil, err
		}
		if ai.stream {
			dst = append(dst, `,"stream":true,"framing":"sse"`...)
		}
		return append(dst, '}'), nil
	case pluginsdk.RequestCountTokens:
		dst, err := startSpec(dst, ai, model, "countTokens")
		if err != nil {
			return nil, err
		}
		body, err := countTokensMessages(ai.body)
		if err != nil {
			return nil, err
		}
		if vertex {
			// Vertex's CountTokensRequest takes contents, systemInstruction
			// and tools at the top level.
			dst, err = appendGenerateBody(dst, body, model, vertex, bodyCount)
		} else {
			// The Gemini API only takes contents at the top level; system
			// instructions and tools must come wrapped in a full request.
			dst = append(dst, `{"generateContentRequest":{"model":`...)
			dst = jsonx.AppendString(dst, "models/"+model)
			dst = append(dst, ',')
			mark := len(dst)
			dst, err = appendGenerateBody(dst, body, model, vertex, bodyFull)
			if err == nil {
				// Splice the generated object's members into the wrapper.
				dst = append(dst[:mark], dst[mark+1:]...)
				dst = append(dst, '}')
			}
		}
		if err != nil {
			return nil, err
		}
		return append(dst, '}'), nil
	case pluginsdk.RequestEmbedding:
		return embeddingRequest(dst, ai, model, vertex)
	case pluginsdk.RequestListModels:
		dst = append(dst, `{"method":"GET",`...)
		if vertex {
			base, _, err := vertexBase(ai)
			if err != nil {
				return nil, err
			}
			// Publisher models are listed per region on v1beta1 only.
			dst = append(dst, `"url":`...)
			dst = jsonx.AppendString(dst, base+"/v1beta1/publishers/google/models?pageSize=1000")
		} else {
			// One page of up to 1000 covers every public model; the
			// default page size (50) would silently cut the list.
			dst = append(dst, `"path":"/models?pageSize=1000"`...)
		}
		return append(dst, '}'), nil
	}
	return nil, badRequest("adapter-gemini does not translate %q requests", ai.requestType)
}

// startSpec writes `{"method":"POST","path"|"url":...,"body":` for a model
// method call; the caller appends the body and closes the object.
func startSpec(dst []byte, ai *adaptInput, model, method string) ([]byte, error) {
	dst = append(dst, `{"method":"POST",`...)
	if ai.provider == "vertex" {
		base, loc, err := vertexBase(ai)
		if err != nil {
			return nil, err
		}
		dst = append(dst, `"url":`...)
		dst = jsonx.AppendString(dst, base+loc+"/publishers/google/models/"+model+":"+method)
	} else {
		p := "/models/" + model
		if strings.HasPrefix(model, "tunedModels/") {
			p = "/" + model
		}
		dst = append(dst, `"path":`...)
		dst = jsonx.AppendString(dst, p+":"+method)
	}
	return append(dst, `,"body":`...), nil
}

// vertexBase returns the Vertex host (base URL when the key sets one, as
// tests do) and the "/v1/projects/{p}/locations/{r}" prefix from the key
// config.
func vertexBase(ai *adaptInput) (base, loc string, err error) {
	project := getString(ai.keyConfig, "project_id")
	region := getString(ai.keyConfig, "region")
	if project == "" {
		return "", "", badRequest("vertex key config has no project_id")
	}
	if region == "" {
		region = defaultVertexRegion
	}
	if strings.ContainsAny(project+region, "/?#@ ") {
		return "", "", badRequest("vertex key config: project_id or region has invalid characters")
	}
	switch {
	case ai.baseURL != "":
		base = strings.TrimRight(ai.baseURL, "/")
	case region == "global":
		base = "https://aiplatform.googleapis.com"
	default:
		base = "https://" + region + "-aiplatform.googleapis.com"
	}
	return base, "/v1/projects/" + project + "/locations/" + region, nil
}

// body modes of appendGenerateBody.
const (
	bodyFull  = iota // generateContent
	bodyCount        // Vertex countTokens: contents, systemInstruction, tools
)

// chatFields are the members of a unified chat request the translation
// reads, collected in one pass over the body.
type chatFields struct {
	messages, temperature, topP, topK, maxTokens, maxCompletion, stop, n []byte
	responseFormat, reasoningEffort, thinking, tools, toolChoice         []byte
	presence, frequency, seed, logprobs, topLogprobs                     []byte
	safety, cached, labels                                               []byte
}

func readChatFields(body []byte) chatFields {
	var f chatFields
	forEachMember(body, func(k, v []byte) bool {
		if isNull(v) {
			return true
		}
		switch string(k) {
		case "messages":
			f.messages = v
		case "temperature":
			f.temperature = v
		case "top_p":
			f.topP = v
		case "top_k":
			f.topK = v
		case "max_tokens":
			f.maxTokens = v
		case "max_completion_tokens":
			f.maxCompletion = v
		case "stop":
			f.stop = v
		case "n":
			f.n = v
		case "response_format":
			f.responseFormat = v
		case "reasoning_effort":
			f.reasoningEffort = v
		case "thinking":
			f.thinking = v
		case "tools":
			f.tools = v
		case "tool_choice":
			f.toolChoice = v
		case "presence_penalty":
			f.presence = v
		case "frequency_penalty":
			f.frequency = v
		case "seed":
			f.seed = v
		case "logprobs":
			f.logprobs = v
		case "top_logprobs":
			f.topLogprobs = v
		case "safety_settings", "safetySettings":
			f.safety = v
		case "cached_content", "cachedContent":
			f.cached = v
		case "labels":
			f.labels = v
		}
		return true
	})
	return f
}

// appendGenerateBody writes a GenerateContentRequest for the unified chat
// request body.
func appendGenerateBody(dst, body []byte, model string, vertex bool, mode int) ([]byte, error) {
	f := readChatFields(body)
	if f.messages == nil || !isArray(f.messages) {
		return nil, badRequest(`"messages" must be an array`)
	}
	dst = append(dst, `{"contents":`...)
	var sys []byte
	var err error
	dst, sys, err = appendContents(dst, f.messages, strings.Contains(model, "gemini-3"))
	if err != nil {
		return nil, err
	}
	if len(sys) > 0 {
		dst = append(dst, `,"systemInstruction":{"parts":[`...)
		dst = append(dst, sys...)
		dst = append(dst, "]}"...)
	}
	if f.tools != nil {
		if dst, err = appendTools(dst, f.tools); err != nil {
			return nil, err
		}
	}
	if mode == bodyCount {
		return append(dst, '}'), nil
	}
	if dst, err = appendGenerationConfig(dst, &f, model); err != nil {
		return nil, err
	}
	if f.toolChoice != nil {
		if dst, err = appendToolConfig(dst, f.toolChoice); err != nil {
			return nil, err
		}
	}
	// Google-specific extras a caller may put in the unified request.
	if f.safety != nil {
		dst = append(dst, `,"safetySettings":`...)
		dst = append(dst, f.safety...)
	}
	if f.cached != nil {
		dst = append(dst, `,"cachedContent":`...)
		dst = append(dst, f.cached...)
	}
	if f.labels != nil && vertex {
		// Only Vertex knows labels; the Gemini API rejects the field.
		dst = append(dst, `,"labels":`...)
		dst = append(dst, f.labels...)
	}
	return append(dst, '}'), nil
}

// message is one unified chat message's members.
type message struct {
	role, content, toolCalls, toolCallID, name []byte
}

func readMessage(m []byte) (message, bool) {
	var msg message
	ok := forEachMember(m, func(k, v []byte) bool {
		if isNull(v) {
			return true
		}
		switch string(k) {
		case "role":
			msg.role = v
		case "content":
			msg.content = v
		case "tool_calls":
			msg.toolCalls = v
		case "tool_call_id":
			msg.toolCallID = v
		case "name":
			msg.name = v
		}
		return true
	})
	return msg, ok
}

// appendContents writes the contents array and returns the system
// instruction parts separately (system and developer messages, wherever
// they appear). Consecutive tool messages become one user turn with one
// functionResponse part each, as Gemini wants the answers to a turn's
// parallel calls together.
func appendContents(dst, messages []byte, gemini3 bool) (_, sys []byte, err error) {
	dst = append(dst, '[')
	// Tool messages name their call by id only; Gemini wants the function
	// name, so the names of the assistant turns' calls are remembered.
	// Later turns may reuse an id (call_0 again), so the latest wins.
	names := map[string]string{}
	toolOpen := false
	forEachElem(messages, func(i int, m []byte) {
		if err != nil {
			return
		}
		msg, ok := readMessage(m)
		if !ok {
			err = badRequest("messages[%d] must be an object", i)
			return
		}
		role := unquote(msg.role)
		if toolOpen && role != "tool" && role != "function" {
			dst = append(dst, "]}"...)
			toolOpen = false
		}
		switch role {
		case "system", "developer":
			sys, _, err = appendParts(sys, msg.content, true)
		case "user":
			start := len(dst)
			dst = appendComma(dst)
			dst = append(dst, `{"role":"user","parts":[`...)
			var n int
			dst, n, err = appendParts(dst, msg.content, false)
			if err != nil {
				break // dst is nil: the error ends the walk
			}
			if n == 0 {
				dst = dst[:start] // Gemini rejects a turn without parts
			} else {
				dst = append(dst, "]}"...)
			}
		case "assistant":
			start := len(dst)
			dst = appendComma(dst)
			dst = append(dst, `{"role":"model","parts":[`...)
			var n, calls int
			dst, n, err = appendParts(dst, msg.content, true)
			if err == nil && msg.toolCalls != nil {
				dst, calls, err = appendFunctionCalls(dst, msg.toolCalls, names, gemini3)
			}
			if err != nil {
				break
			}
			if n+calls == 0 {
				dst = dst[:start]
			} else {
				dst = append(dst, "]}"...)
			}
		case "tool", "function":
			if !toolOpen {
				dst = appendComma(dst)
				dst = append(dst, `{"role":"user","parts":[`...)
				toolOpen = true
			}
			dst, err = appendFunctionResponse(dst, &msg, names, i)
		default:
			err = badRequest("messages[%d]: unsupported role %q", i, role)
		}
		if err != nil {
			if pe, ok := err.(*pluginsdk.Error); !ok || !strings.HasPrefix(pe.Message, "messages[") {
				err = badRequest("messages[%d]: %s", i, errMessage(err))
			}
		}
	})
	if err != nil {
		return nil, nil, err
	}
	if toolOpen {
		dst = append(dst, "]}"...)
	}
	return append(dst, ']'), sys, nil
}

func errMessage(err error) string {
	if pe, ok := err.(*pluginsdk.Error); ok {
		return pe.Message
	}
	return err.Error()
}

// appendParts writes the Gemini parts of a unified content value (string,
// array of parts or absent) and counts them. textOnly drops media, for
// system instructions and model turns, which carry text only.
func appendParts(dst, content []byte, textOnly bool) ([]byte, int, error) {
	n := 0
	switch {
	case content == nil:
		return dst, 0, nil
	case isString(content):
		if len(content) == 2 {
			return dst, 0, nil
		}
		dst = appendComma(dst)
		dst = append(dst, `{"text":`...)
		dst = append(dst, content...)
		return append(dst, '}'), 1, nil
	case isArray(content):
	default:
		return nil, 0, badRequest("content must be a string or an array of parts")
	}
	var err error
	forEachElem(content, func(i int, p []byte) {
		if err != nil {
			return
		}
		typ := getString(p, "type")
		switch typ {
		case "text", "input_text", "output_text":
			if t := get(p, "text"); isString(t) && len(t) > 2 {
				dst = appendComma(dst)
				dst = append(dst, `{"text":`...)
				dst = append(dst, t...)
				dst = append(dst, '}')
				n++
			}
		case "image_url", "input_audio", "file":
			if textOnly {
				return
			}
			dst, err = appendMediaPart(dst, typ, p)
			n++
		case "refusal", "thinking", "reasoning":
			// Model-side bookkeeping, nothing Gemini takes back.
		default:
			err = badRequest("content part %d: unsupported type %q", i, typ)
		}
	})
	return dst, n, err
}

// appendMediaPart writes inlineData (data: URLs, audio, file data) or
// fileData (URLs) for a non-text unified content part.
func appendMediaPart(dst []byte, typ string, p []byte) ([]byte, error) {
	dst = appendComma(dst)
	switch typ {
	case "image_url":
		iu := get(p, "image_url")
		url := unquote(iu)
		if isObject(iu) {
			url = getString(iu, "url")
		}
		if url == "" {
			return nil, badRequest("image_url part without url")
		}
		return appendURLPart(dst, url, "image/jpeg")
	case "input_audio":
		ia := get(p, "input_audio")
		data := get(ia, "data")
		if !isString(data) {
			return nil, badRequest("input_audio part without data")
		}
		format := getString(ia, "format")
		if format == "" {
			format = "wav"
		}
		dst = append(dst, `{"inlineData":{"mimeType":`...)
		dst = jsonx.AppendString(dst, "audio/"+format)
		dst = append(dst, `,"data":`...)
		dst = append(dst, data...)
		return append(dst, "}}"...), nil
	default: // file
		f := get(p, "file")
		name := getString(f, "filename")
		if fd := getString(f, "file_data"); fd != "" {
			if strings.HasPrefix(fd, "data:") {
				return appendURLPart(dst, fd, "")
			}
			dst = append(dst, `{"inlineData":{"mimeType":`...)
			dst = jsonx.AppendString(dst, guessMime(name, "application/pdf"))
			dst = append(dst, `,"data":`...)
			dst = jsonx.AppendString(dst, fd)
			return append(dst, "}}"...), nil
		}
		if id := getString(f, "file_id"); id != "" {
			// A Files API name or URI uploaded beforehand.
			mime := guessMime(name, "")
			if mime == "" {
				mime = guessMime(id, "application/pdf")
			}
			dst = append(dst, `{"fileData":{"mimeType":`...)
			dst = jsonx.AppendString(dst, mime)
			dst = append(dst, `,"fileUri":`...)
			dst = jsonx.AppendString(dst, id)
			return append(dst, "}}"...), nil
		}
		return nil, badRequest("file part needs file_data or file_id")
	}
}

// appendURLPart maps a data: URL to inlineData and any other URL (http,
// https, gs) to fileData with a MIME type guessed from its extension.
func appendURLPart(dst []byte, url, defMime string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		mime, isB64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isB64 {
			return nil, badRequest("data URL must be base64 encoded")
		}
		if i := strings.IndexByte(mime, ';'); i >= 0 {
			mime = mime[:i] // drop parameters such as charset
		}
		if mime == "" {
			mime = "application/octet-stream"
		}
		dst = append(dst, `{"inlineData":{"mimeType":`...)
		dst = jsonx.AppendString(dst, mime)
		dst = append(dst, `,"data":`...)
		dst = jsonx.AppendString(dst, data)
		return append(dst, "}}"...), nil
	}
	dst = append(dst, `{"fileData":{"mimeType":`...)
	dst = jsonx.AppendString(dst, guessMime(url, defMime))
	dst = append(dst, `,"fileUri":`...)
	dst = jsonx.AppendString(dst, url)
	return append(dst, "}}"...), nil
}

var mimeByExt = map[string]string{
	"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
	"heic": "image/heic", "heif": "image/heif", "pdf": "application/pdf", "txt": "text/plain",
	"mp3": "audio/mp3", "wav": "audio/wav", "ogg": "audio/ogg", "flac": "audio/flac", "aac": "audio/aac",
	"mp4": "video/mp4", "mov": "video/quicktime", "webm": "video/webm", "mpeg": "video/mpeg",
}

// guessMime guesses from the extension of a URL or file name, ignoring the
// query and fragment; def when unknown. Gemini requires a mimeType on
// fileData and does not sniff.
func guessMime(name, def string) string {
	if i := strings.IndexAny(name, "?#"); i >= 0 {
		name = name[:i]
	}
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 || dot < strings.LastIndexByte(name, '/') {
		return def
	}
	if m, ok := mimeByExt[strings.ToLower(name[dot+1:])]; ok {
		return m
	}
	return def
}

// appendFunctionCalls writes a functionCall part per assistant tool call,
// restoring the thought signature the adapter attached to the call in the
// response (tool_calls[i].extra_content.google.thought_signature).
func appendFunctionCalls(dst, calls []byte, names map[string]string, gemini3 bool) ([]byte, int, error) {
	if !isArray(calls) {
		return nil, 0, badRequest("tool_calls must be an array")
	}
	n := 0
	var err error
	forEachElem(calls, func(i int, tc []byte) {
		if err != nil {
			return
		}
		fn := get(tc, "function")
		name := get(fn, "name")
		if !isString(name) || len(name) == 2 {
			err = badRequest("tool_calls[%d] has no function name", i)
			return
		}
		if id := getString(tc, "id"); id != "" {
			names[id] = unquote(name)
		}
		dst = appendComma(dst)
		dst = append(dst, `{"functionCall":{"name":`...)
		dst = append(dst, name...)
		dst = append(dst, `,"args":`...)
		dst = appendArgs(dst, get(fn, "arguments"))
		dst = append(dst, '}')
		if sig := get(get(get(tc, "extra_content"), "google"), "thought_signature"); isString(sig) {
			dst = append(dst, `,"thoughtSignature":`...)
			dst = append(dst, sig...)
		} else if gemini3 && n == 0 {
			// Only the first call of a turn carries a signature.
			dst = append(dst, `,"thoughtSignature":"`+skipSignature+`"`...)
		}
		dst = append(dst, '}')
		n++
	})
	return dst, n, err
}

// appendArgs turns the unified arguments string into the args object.
// Arguments that are not a JSON object (models sometimes emit broken JSON,
// and clients echo it back) are wrapped as {"value": ...} rather than
// failing the whole conversation.
func appendArgs(dst, args []byte) []byte {
	var s []byte
	switch {
	case isString(args):
		s = []byte(unquote(args))
	case isObject(args):
		s = args // tolerate an object where a string is expected
	}
	s = bytes.TrimSpace(s)
	switch {
	case len(s) == 0:
		return append(dst, "{}"...)
	case s[0] == '{' && jsonx.Valid(s):
		return append(dst, s...)
	case jsonx.Valid(s):
		dst = append(dst, `{"value":`...)
		dst = append(dst, s...)
	default:
		dst = append(dst, `{"value":`...)
		dst = jsonx.AppendString(dst, string(s))
	}
	return append(dst, '}')
}

// appendFunctionResponse writes the functionResponse part of a tool
// message. A JSON object result is sent as the response itself; anything
// else as {"content": text}, since response must be an object.
func appendFunctionResponse(dst []byte, msg *message, names map[string]string, i int) ([]byte, error) {
	name := names[unquote(msg.toolCallID)]
	if name == "" {
		name = unquote(msg.name)
	}
	if name == "" {
		return nil, badRequest("messages[%d]: tool message does not match a preceding tool call (tool_call_id %s)", i, msg.toolCallID)
	}
	dst = appendComma(dst)
	dst = append(dst, `{"functionResponse":{"name":`...)
	dst = jsonx.AppendString(dst, name)
	dst = append(dst, `,"response":`...)
	switch c := msg.content; {
	case isString(c):
		if s := bytes.TrimSpace([]byte(unquote(c))); len(s) > 0 && s[0] == '{' && jsonx.Valid(s) {
			dst = append(dst, s...)
		} else {
			dst = append(dst, `{"content":`...)
			dst = append(dst, c...)
			dst = append(dst, '}')
		}
	case isArray(c):
		dst = append(dst, `{"content":"`...)
		forEachElem(c, func(_ int, p []byte) {
			if t := get(p, "text"); isString(t) {
				dst = append(dst, inner(t)...)
			}
		})
		dst = append(dst, `"}`...)
	default:
		dst = append(dst, `{"content":""}`...)
	}
	return append(dst, "}}"...), nil
}

// appendGenerationConfig writes generationConfig when any member is set.
func appendGenerationConfig(dst []byte, f *chatFields, model string) ([]byte, error) {
	start := len(dst)
	dst = append(dst, `,"generationConfig":{`...)
	open := len(dst)
	num := func(key string, v []byte) {
		if v != nil {
			dst = appendKey(dst, key)
			dst = append(dst, v...)
		}
	}
	num("temperature", f.temperature)
	num("topP", f.topP)
	num("topK", f.topK)
	if f.maxCompletion != nil {
		num("maxOutputTokens", f.maxCompletion)
	} else {
		num("maxOutputTokens", f.maxTokens)
	}
	switch {
	case isString(f.stop):
		dst = appendKey(dst, "stopSequences")
		dst = append(dst, '[')
		dst = append(dst, f.stop...)
		dst = append(dst, ']')
	case isArray(f.stop):
		num("stopSequences", f.stop)
	}
	num("candidateCount", f.n)
	num("presencePenalty", f.presence)
	num("frequencyPenalty", f.frequency)
	num("seed", f.seed)
	if string(f.logprobs) == "true" {
		dst = appendKey(dst, "responseLogprobs")
		dst = append(dst, "true"...)
		num("logprobs", f.topLogprobs)
	}
	if rf := f.responseFormat; rf != nil {
		switch getString(rf, "type") {
		case "json_object":
			dst = appendKey(dst, "responseMimeType")
			dst = append(dst, `"application/json"`...)
		case "json_schema":
			dst = appendKey(dst, "responseMimeType")
			dst = append(dst, `"application/json"`...)
			if s := get(get(rf, "json_schema"), "schema"); isObject(s) {
				dst = appendKey(dst, "responseSchema")
				dst = appendSchema(dst, s, 0)
			}
		case "text", "":
		default:
			return nil, badRequest("response_format type %q is not supported", getString(rf, "type"))
		}
	}
	var err error
	if dst, err = appendThinking(dst, f, model); err != nil {
		return nil, err
	}
	if len(dst) == open {
		return dst[:start], nil
	}
	return append(dst, '}'), nil
}

// appendThinking maps reasoning_effort (or an Anthropic-style "thinking"
// object) to thinkingConfig. Gemini 3 takes a thinking level; 2.5 models a
// token budget, with the budgets Google's OpenAI compatibility layer uses.
// includeThoughts is set so the reasoning reaches reasoning_content.
func appendThinking(dst []byte, f *chatFields, model string) ([]byte, error) {
	if f.reasoningEffort == nil {
		if th := f.thinking; isObject(th) && getString(th, "type") == "enabled" {
			dst = appendKey(dst, "thinkingConfig")
			dst = append(dst, `{"includeThoughts":true`...)
			if b := get(th, "budget_tokens"); b != nil {
				dst = append(dst, `,"thinkingBudget":`...)
				dst = append(dst, b...)
			}
			dst = append(dst, '}')
		}
		return dst, nil
	}
	effort := unquote(f.reasoningEffort)
	if strings.Contains(model, "gemini-3") {
		level := "high"
		switch effort {
		case "none", "minimal", "low":
			level = "low"
		case "medium", "high", "xhigh":
		default:
			return nil, badRequest("reasoning_effort %q is not supported", effort)
		}
		dst = appendKey(dst, "thinkingConfig")
		dst = append(dst, `{"includeThoughts":true,"thinkingLevel":"`...)
		dst = append(dst, level...)
		return append(dst, `"}`...), nil
	}
	budget := ""
	switch effort {
	case "none":
		budget = "0"
	case "minimal", "low":
		budget = "1024"
	case "medium":
		budget = "8192"
	case "high", "xhigh":
		budget = "24576"
	default:
		return nil, badRequest("reasoning_effort %q is not supported", effort)
	}
	dst = appendKey(dst, "thinkingConfig")
	if budget == "0" {
		return append(dst, `{"thinkingBudget":0}`...), nil
	}
	dst = append(dst, `{"includeThoughts":true,"thinkingBudget":`...)
	dst = append(dst, budget...)
	return append(dst, '}'), nil
}

// appendTools writes the function tools as one functionDeclarations entry.
func appendTools(dst, tools []byte) ([]byte, error) {
	if !isArray(tools) {
		return nil, badRequest("tools must be an array")
	}
	start := len(dst)
	dst = append(dst, `,"tools":[{"functionDeclarations":[`...)
	open := len(dst)
	var err error
	forEachElem(tools, func(i int, t []byte) {
		if err != nil {
			return
		}
		if typ := getString(t, "type"); typ != "function" && typ != "" {
			err = badRequest("tools[%d]: type %q is not supported by Gemini adapters", i, typ)
			return
		}
		fn := get(t, "function")
		name := get(fn, "name")
		if !isString(name) {
			err = badRequest("tools[%d] has no function name", i)
			return
		}
		dst = appendComma(dst)
		dst = append(dst, `{"name":`...)
		dst = append(dst, name...)
		if d := get(fn, "description"); isString(d) {
			dst = append(dst, `,"description":`...)
			dst = append(dst, d...)
		}
		// Gemini rejects an OBJECT schema without properties; a function
		// without arguments simply has no parameters.
		if p := get(fn, "parameters"); isObject(p) && hasProperties(p) {
			dst = append(dst, `,"parameters":`...)
			dst = appendSchema(dst, p, 0)
		}
		dst = append(dst, '}')
	})
	if err != nil {
		return nil, err
	}
	if len(dst) == open {
		return dst[:start], nil
	}
	return append(dst, "]}]"...), nil
}

func hasProperties(schema []byte) bool {
	props := get(schema, "properties")
	has := false
	forEachMember(props, func(_, _ []byte) bool { has = true; return false })
	return has || getString(schema, "type") != "object"
}

// appendToolConfig maps tool_choice to functionCallingConfig.
func appendToolConfig(dst, tc []byte) ([]byte, error) {
	mode, only := "", []byte(nil)
	switch {
	case isString(tc):
		switch unquote(tc) {
		case "none":
			mode = "NONE"
		case "auto":
			mode = "AUTO"
		case "required":
			mode = "ANY"
		default:
			return nil, badRequest("tool_choice %s is not supported", tc)
		}
	case isObject(tc):
		name := get(get(tc, "function"), "name")
		if !isString(name) {
			return nil, badRequest("tool_choice object needs function.name")
		}
		mode, only = "ANY", name
	default:
		return nil, badRequest("tool_choice must be a string or an object")
	}
	dst = append(dst, `,"toolConfig":{"functionCallingConfig":{"mode":"`...)
	dst = append(dst, mode...)
	dst = append(dst, '"')
	if only != nil {
		dst = append(dst, `,"allowedFunctionNames":[`...)
		dst = append(dst, only...)
		dst = append(dst, ']')
	}
	return append(dst, "}}"...), nil
}

// schemaKeys are the members of Gemini's Schema object (an OpenAPI 3.0
// subset). The API answers 400 to any other member, and JSON Schemas from
// OpenAI clients routinely carry some ($schema, additionalProperties,
// strict), so schemas are filtered rather than copied.
var schemaKeys = map[string]bool{
	"type": true, "format": true, "title": true, "description": true, "nullable": true, "enum": true,
	"maxItems": true, "minItems": true, "required": true, "minProperties": true, "maxProperties": true,
	"minLength": true, "maxLength": true, "pattern": true, "example": true, "propertyOrdering": true,
	"default": true, "minimum": true, "maximum": true,
}

// appendSchema writes the Gemini form of a JSON Schema: unsupported
// members dropped, "type": [T, "null"] as type T + nullable, const as a
// one-value enum, oneOf as anyOf.
func appendSchema(dst, s []byte, depth int) []byte {
	if !isObject(s) || depth > 32 {
		return append(dst, "{}"...)
	}
	dst = append(dst, '{')
	nullable := false
	forEachMember(s, func(k, v []byte) bool {
		switch key := string(k); key {
		case "properties":
			if !isObject(v) {
				return true
			}
			dst = appendKey(dst, "properties")
			dst = append(dst, '{')
			forEachMember(v, func(pk, pv []byte) bool {
				dst = appendComma(dst)
				dst = appendRawString(dst, pk)
				dst = append(dst, ':')
				dst = appendSchema(dst, pv, depth+1)
				return true
			})
			dst = append(dst, '}')
		case "items":
			dst = appendKey(dst, "items")
			dst = appendSchema(dst, v, depth+1)
		case "anyOf", "oneOf":
			if !isArray(v) {
				return true
			}
			dst = appendKey(dst, "anyOf")
			dst = append(dst, '[')
			forEachElem(v, func(_ int, e []byte) {
				dst = appendComma(dst)
				dst = appendSchema(dst, e, depth+1)
			})
			dst = append(dst, ']')
		case "type":
			if !isArray(v) {
				dst = appendKey(dst, "type")
				dst = append(dst, v...)
				return true
			}
			var first []byte
			forEachElem(v, func(_ int, e []byte) {
				if string(e) == `"null"` {
					nullable = true
				} else if first == nil {
					first = e
				}
			})
			if first != nil {
				dst = appendKey(dst, "type")
				dst = append(dst, first...)
			}
		case "const":
			// Gemini enums are string enums and want the type spelled out.
			if isString(v) && get(s, "type") == nil {
				dst = appendKey(dst, "type")
				dst = append(dst, `"string"`...)
			}
			dst = appendKey(dst, "enum")
			dst = append(dst, '[')
			dst = append(dst, v...)
			dst = append(dst, ']')
		default:
			if schemaKeys[key] {
				dst = appendKey(dst, key)
				dst = append(dst, v...)
			}
		}
		return true
	})
	if nullable {
		dst = appendKey(dst, "nullable")
		dst = append(dst, "true"...)
	}
	return append(dst, '}')
}

// countTokensMessages returns a chat-shaped body for a count_tokens
// request: one with "messages" is used as is; {"input": string | array of
// strings | array of messages} (the Responses API's input_tokens shape) is
// turned into messages.
func countTokensMessages(body []byte) ([]byte, error) {
	if get(body, "messages") != nil {
		return body, nil
	}
	in := get(body, "input")
	var b []byte
	switch {
	case isString(in):
		b = append(b, `{"messages":[{"role":"user","content":`...)
		b = append(b, in...)
		b = append(b, "}]"...)
	case isArray(in):
		b = append(b, `{"messages":[`...)
		forEachElem(in, func(_ int, e []byte) {
			b = appendComma(b)
			if isString(e) {
				b = append(b, `{"role":"user","content":`...)
				b = append(b, e...)
				b = append(b, '}')
			} else {
				b = append(b, e...)
			}
		})
		b = append(b, ']')
	default:
		return nil, badRequest(`count_tokens needs "messages" or "input"`)
	}
	for _, k := range []string{"tools", "tool_choice"} {
		if v := get(body, k); v != nil {
			b = appendKey(b, k)
			b = append(b, v...)
		}
	}
	return append(b, '}'), nil
}
