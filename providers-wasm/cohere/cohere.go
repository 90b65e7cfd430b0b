// Command cohere is the provider adapter for Cohere's v2 API (wire
// "cohere"): chat (streamed or not, with tools), embeddings, rerank and
// model listing, translated to and from the unified OpenAI-shaped wire.
//
//	chat        POST {base}/chat     (base https://api.cohere.com/v2)
//	embeddings  POST {base}/embed
//	rerank      POST {base}/rerank
//	list models GET  {base without /v2}/v1/models?page_size=1000
//
// Model listing only exists in Cohere's v1 API, so that one spec carries an
// absolute URL derived from the base URL.
//
// The drop-in hooks (ingress_request, egress_response, egress_stream, in
// native.go) serve the /cohere prefix; see that file.
//
// The adapt_* hooks scan with pluginsdk/jsonx and append bytes:
// no encoding/json decoding on them (json.Valid, a non-reflective
// scanner, guards the decoders so malformed upstream bytes are an error).
//
// Request facts the response side needs — the model (Cohere's stream never
// names it) and the embeddings encoding_format — travel in the spec's
// opaque context, which the host hands back to adapt_response and as the
// first stream state.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o adapter-cohere.wasm ./providers-wasm/cohere
package main

import (
	"bytes"
	"strconv"
	"time"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// Adapter is the Cohere adapter. Its buffers are reused across calls: a
// wasm instance runs one call at a time and the host copies outputs at once.
type Adapter struct {
	out  []byte
	body []byte
	tmp  []byte
}

// New returns the adapter.
func New() *Adapter { return &Adapter{} }

// now is the clock for "created"; tests pin it for golden files.
var now = func() int64 { return time.Now().Unix() }

// Manifest describes the adapter.
func (a *Adapter) Manifest() pluginsdk.Manifest {
	return pluginsdk.Manifest{
		Name: "adapter-cohere", Version: "1.0.0", Kind: pluginsdk.KindProvider, Wire: "cohere",
		Capabilities: []string{
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestChat,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestEmbedding,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestRerank,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestListModels,
		},
	}
}

// Configure accepts no settings.
func (a *Adapter) Configure([]byte) error { return nil }

func reject(code int, format string, args ...any) error {
	return pluginsdk.Reject(code, "adapter-cohere: "+format, args...)
}

var errMalformed = &pluginsdk.Error{Code: 502, Message: "adapter-cohere: malformed upstream JSON"}

// requestInput holds raw spans of the AdaptRequestInput (strings still
// JSON-escaped: they are copied back into JSON unchanged).
type requestInput struct {
	reqType, model, baseURL []byte
	stream                  bool
	body                    []byte
}

// AdaptRequest translates a unified request into a Cohere v2 spec.
func (a *Adapter) AdaptRequest(in []byte) (pluginsdk.Output, error) {
	var r requestInput
	ok := jsonx.ForEachMember(in, 0, func(k []byte, s, e int) {
		switch string(k) {
		case "request_type":
			r.reqType, _ = jsonx.StringAt(in, s, e)
		case "model":
			r.model, _ = jsonx.StringAt(in, s, e)
		case "base_url":
			r.baseURL, _ = jsonx.StringAt(in, s, e)
		case "stream":
			r.stream = string(in[s:e]) == "true"
		case "body":
			r.body = in[s:e]
		}
	})
	if !ok {
		return pluginsdk.Output{}, reject(400, "adapt_request input is not a JSON object")
	}
	if string(r.reqType) == pluginsdk.RequestListModels {
		return a.listModelsRequest(r)
	}
	if len(r.body) == 0 || r.body[0] != '{' {
		return pluginsdk.Output{}, reject(400, "request body is not a JSON object")
	}
	var (
		path string
		err  error
		st   state
	)
	st.model = r.model
	body := a.body[:0]
	switch string(r.reqType) {
	case pluginsdk.RequestChat:
		path = "/chat"
		body, err = appendChatRequest(body, r)
	case pluginsdk.RequestEmbedding:
		path = "/embed"
		body, st.flags, err = appendEmbedRequest(body, r)
	case pluginsdk.RequestRerank:
		path = "/rerank"
		body, err = appendRerankRequest(body, r)
	default:
		return pluginsdk.Output{}, reject(400, "unsupported request type %q", r.reqType)
	}
	a.body = body
	if err != nil {
		return pluginsdk.Output{}, err
	}
	b := append(a.out[:0], `{"method":"POST","path":"`...)
	b = append(b, path...)
	b = append(b, `","body":`...)
	b = append(b, body...)
	if r.stream && path == "/chat" {
		b = append(b, `,"stream":true`...)
	}
	b = append(b, `,"context":`...)
	a.tmp = st.append(a.tmp[:0])
	b = jsonx.AppendString(b, string(a.tmp))
	b = append(b, '}')
	a.out = b
	return pluginsdk.Replace(b), nil
}

// responseInput holds raw spans of the AdaptResponseInput.
type responseInput struct {
	reqType, model, context []byte
	body                    []byte
}

// AdaptResponse translates a Cohere answer into the unified response.
func (a *Adapter) AdaptResponse(in []byte) (pluginsdk.Output, error) {
	var r responseInput
	if !jsonx.ForEachMember(in, 0, func(k []byte, s, e int) {
		switch string(k) {
		case "request_type":
			r.reqType, _ = jsonx.StringAt(in, s, e)
		case "model":
			r.model, _ = jsonx.StringAt(in, s, e)
		case "context":
			r.context, _ = jsonx.StringAt(in, s, e)
		case "body":
			r.body = in[s:e]
		}
	}) {
		return pluginsdk.Output{}, reject(502, "adapt_response input is not a JSON object")
	}
	if len(r.body) == 0 || r.body[0] != '{' || !jsonx.Valid(r.body) {
		return pluginsdk.Output{}, reject(502, "upstream answered a body that is not a JSON object")
	}
	var st state
	if len(r.context) > 0 {
		ctx, ok := jsonx.AppendUnescaped(a.tmp[:0], r.context)
		a.tmp = ctx
		if !ok || !st.parse(ctx) {
			return pluginsdk.Output{}, reject(500, "adapt_response: unreadable adapter context")
		}
	}
	if len(r.model) > 0 || len(st.model) == 0 {
		st.model = r.model
	}
	var (
		b   []byte
		err error
	)
	switch string(r.reqType) {
	case pluginsdk.RequestChat:
		b, err = appendChatResponse(a.out[:0], r.body, &st)
	case pluginsdk.RequestEmbedding:
		b, err = appendEmbedResponse(a.out[:0], r.body, &st)
	case pluginsdk.RequestRerank:
		b, err = appendRerankResponse(a.out[:0], r.body, &st)
	case pluginsdk.RequestListModels:
		b, err = appendModelsResponse(a.out[:0], r.body)
	default:
		return pluginsdk.Output{}, reject(400, "unsupported request type %q", r.reqType)
	}
	if err != nil {
		return pluginsdk.Output{}, err
	}
	a.out = b
	return pluginsdk.Replace(b), nil
}

// state is the adapter's per-request note: the spec's context and, for
// streams, the per-stream state. Text format, so it fits the context string:
//
//	c1|flags|tools|created|id|model
//
// model is last and still JSON-escaped (it may contain '|'); id never has
// one (Cohere ids are UUIDs; anything else is rejected on parse).
type state struct {
	flags   int
	tools   int
	created int64
	id      []byte
	model   []byte
}

// state flags.
const (
	flagBase64   = 1 << iota // embeddings: the client asked encoding_format=base64
	flagRoleSent             // stream: the role chunk went out
	flagFinished             // stream: message-end was seen
)

func (s *state) append(b []byte) []byte {
	b = append(b, "c1|"...)
	b = strconv.AppendInt(b, int64(s.flags), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(s.tools), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, s.created, 10)
	b = append(b, '|')
	b = append(b, s.id...)
	b = append(b, '|')
	return append(b, s.model...)
}

// parse reads a state; the slices alias b. It rejects anything it did not
// write, so a corrupted state never produces invalid JSON output.
func (s *state) parse(b []byte) bool {
	if !bytes.HasPrefix(b, []byte("c1|")) {
		return false
	}
	parts := bytes.SplitN(b[3:], []byte("|"), 5)
	if len(parts) != 5 {
		return false
	}
	var nums [3]int64
	for i := range nums {
		n, err := strconv.ParseInt(string(parts[i]), 10, 64)
		if err != nil || n < 0 {
			return false
		}
		nums[i] = n
	}
	if nums[0] > 7 || nums[1] > 1<<20 {
		return false
	}
	s.flags, s.tools, s.created = int(nums[0]), int(nums[1]), nums[2]
	s.id, s.model = parts[3], parts[4]
	return validStringContent(s.id) && validStringContent(s.model)
}

// validStringContent reports whether raw is valid as the escaped content
// of a JSON string, so it can be copied between quotes as is.
func validStringContent(raw []byte) bool {
	if len(raw) == 0 {
		return true
	}
	// Quoted, raw must be exactly one JSON string: an unescaped quote
	// inside it (`a","x":"`) makes the whole invalid.
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	return jsonx.Valid(q)
}

// str returns the raw content of a string value span, or nil.
func str(b []byte, s, e int) []byte {
	v, _ := jsonx.StringAt(b, s, e)
	return v
}

// field returns the span of key in the object at b[obj:], or ok=false.
func field(b []byte, obj int, key string) (int, int, bool) {
	if obj >= len(b) {
		return 0, 0, false
	}
	return jsonx.ObjectField(b, obj, key)
}

// path follows object keys from the value at b[s:] and returns the span of
// the last one.
func path(b []byte, s int, keys ...string) (int, int, bool) {
	e := 0
	for _, k := range keys {
		var ok bool
		if s, e, ok = field(b, s, k); !ok {
			return 0, 0, false
		}
	}
	return s, e, true
}

// number parses the integer at b[s:e] (Cohere sends integers; a float is
// truncated), 0 when it is not a number.
func number(b []byte, s, e int) int64 {
	if n, err := strconv.ParseInt(string(b[s:e]), 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(string(b[s:e]), 64); err == nil && f >= 0 && f < 1e15 {
		return int64(f)
	}
	return 0
}

// appendQuoted appends raw (escaped content) as a JSON string.
func appendQuoted(b, raw []byte) []byte {
	b = append(b, '"')
	b = append(b, raw...)
	return append(b, '"')
}

// rateLimited tells whether an upstream error text means throttling, so
// the host backs off (429) instead of treating it as a server fault.
func rateLimited(msg []byte) bool {
	l := bytes.ToLower(msg)
	return bytes.Contains(l, []byte("rate limit")) || bytes.Contains(l, []byte("too many requests")) ||
		bytes.Contains(l, []byte("rate_limit")) || bytes.Contains(l, []byte("throttl"))
}

// upstreamError is the error for a Cohere failure message (escaped raw).
func upstreamError(prefix string, msg []byte) error {
	code := 500
	if rateLimited(msg) {
		code = 429
	}
	if len(msg) > 300 {
		msg = msg[:300]
	}
	text := "adapter-cohere: " + prefix
	if len(msg) > 0 {
		u, _ := jsonx.AppendUnescaped(nil, msg)
		text += ": " + string(bytes.ToValidUTF8(u, []byte("?")))
	}
	return &pluginsdk.Error{Code: code, Message: text}
}
