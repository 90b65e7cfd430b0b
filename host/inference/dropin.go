package inference

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/eventstream"
	"github.com/wasmgate/gateway/host/providers"
	"github.com/wasmgate/gateway/host/sse"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// NativeCodec is the drop-in side of a provider adapter: it decodes a
// provider-native request into a unified chat request (ingress_request)
// and encodes the unified answer back into the native wire
// (egress_response, egress_stream). The unified pipeline runs in between,
// so a native client reaches any provider with fallbacks, retries,
// plugins, logs and metrics exactly as on /v1.
type NativeCodec interface {
	Adapter
	// Native reports whether the adapter implements the three hooks.
	Native() bool
	IngressRequest(ctx context.Context, native []byte) ([]byte, error)
	EgressResponse(ctx context.Context, unified []byte) ([]byte, error)
	// EgressStream maps unified chunks to native events, each
	// {"event": name?, "data": {...}}, carrying per-stream state.
	EgressStream(ctx context.Context, state []byte, chunks []json.RawMessage, end bool) ([]json.RawMessage, []byte, error)
}

// wire is a provider-native API served under a drop-in prefix.
type wire struct {
	// module is the adapter module holding the ingress/egress hooks.
	module string
	// provider is the provider a bare model name (no "<provider>/")
	// belongs to: the prefix's own.
	provider string
	// errorBody renders an error in the native shape; nil leaves it to the
	// egress_response hook (which gets the gateway envelope).
	errorBody func(e *apierr.Error) []byte
	// countBody renders a token count in the native count response.
	countBody func(n int64) []byte
	// eventStream: streams are AWS event-stream framed (Bedrock), not SSE.
	eventStream bool
	// streamErrorData, when set, is the data of the SSE event that ends a
	// failed stream (Google sends its error object); otherwise the egress
	// hook gets an error chunk and emits the wire's error event.
	streamErrorData func(e *apierr.Error) []byte
	// invoke, on Bedrock InvokeModel routes, is the native body shape:
	// stream events are framed as {"bytes": base64} chunks.
	invoke invokeFormat
}

var (
	wireAnthropic = &wire{module: "anthropic", provider: "anthropic",
		countBody: func(n int64) []byte { return mustJSON(map[string]int64{"input_tokens": n}) }}
	wireGenAI = &wire{module: "gemini", provider: "gemini", errorBody: googleError, streamErrorData: googleError,
		countBody: func(n int64) []byte { return mustJSON(map[string]int64{"totalTokens": n}) }}
	wireCohere  = &wire{module: "cohere", provider: "cohere", errorBody: cohereError}
	wireBedrock = &wire{module: "bedrock", provider: "bedrock", errorBody: bedrockError, eventStream: true}
)

// bedrockError is the AWS REST-JSON error: {"message"} with the error
// type in x-amzn-ErrorType, which the AWS SDKs map to exception classes.
func bedrockError(e *apierr.Error) []byte {
	typ := map[int]string{400: "ValidationException", 401: "UnrecognizedClientException", 403: "AccessDeniedException",
		404: "ResourceNotFoundException", 408: "ModelTimeoutException", 429: "ThrottlingException",
		503: "ServiceUnavailableException"}[e.StatusCode]
	if typ == "" {
		typ = "InternalServerException"
		if e.StatusCode < 500 {
			typ = "ValidationException"
		}
	}
	e.WithHeader("x-amzn-ErrorType", typ)
	return mustJSON(map[string]string{"message": e.Detail.Message})
}

// bedrockInput reads /bedrock/model/{modelId}/converse[-stream]: the
// Bedrock ingress takes {"model","stream","body":{Converse request}}.
func bedrockInput(stream bool) func(c *fiber.Ctx) ([]byte, *apierr.Error) {
	return func(c *fiber.Ctx) ([]byte, *apierr.Error) {
		model, err := url.PathUnescape(c.Params("modelId"))
		if err != nil {
			model = c.Params("modelId")
		}
		body := c.Body()
		if !json.Valid(body) {
			return nil, apierr.BadRequest("invalid_json", "", "request body is not valid JSON")
		}
		return mustJSON(map[string]any{"model": model, "stream": stream, "body": json.RawMessage(body)}), nil
	}
}

// cohereError is Cohere's v2 error shape, which cohere-ai reads.
func cohereError(e *apierr.Error) []byte {
	return mustJSON(map[string]string{"message": e.Detail.Message})
}

// egress carries one drop-in call's answer back into its native wire.
type egress struct {
	w     *wire
	codec NativeCodec
	state []byte
	// encode, when set, replaces egress_response: the host's own mapping
	// for native APIs no adapter hook covers (embeddings).
	encode func(unified []byte) ([]byte, error)
	// invoke, on Bedrock InvokeModel routes, picks each attempt's body.
	invoke *invokeCall
}

// codec finds the ingress/egress adapter of a wire.
func (s *Service) codec(w *wire) (NativeCodec, *apierr.Error) {
	a, ok := s.o.Adapters.Adapter(w.module)
	if ok {
		if nc, ok := a.(NativeCodec); ok && nc.Native() {
			return nc, nil
		}
	}
	return nil, apierr.New(http.StatusNotImplemented, apierr.TypeInvalidRequest, "no_native_adapter",
		fmt.Sprintf("no adapter implementing the %s drop-in hooks (ingress_request, egress_response, egress_stream) is loaded", w.module))
}

// reject answers a drop-in request refused before it reached the
// pipeline (unreadable body, no adapter, an ingress hook's refusal) in the
// caller's native shape, and logs it as the pipeline logs its failures:
// every request is recorded. model is what the route names ("" reads the
// body's "model").
func (s *Service) reject(c *fiber.Ctx, eg *egress, reqType, model string, e *apierr.Error) error {
	// A model from the route's parameters points into the request buffer,
	// which the next request on the connection reuses; the record
	// outlives this one.
	p := &parsed{body: c.Body(), model: strings.Clone(model)}
	if model == "" {
		if raw, ok := jsonx.StringField(p.body, "model"); ok {
			p.model = unescape(raw)
		}
	}
	s.finishError(s.newCall(c, reqType, "", p, eg, nil, callerCredential(c)), e)
	return eg.fail(c, e)
}

// fail answers an error in the caller's native shape where the wire has
// one; otherwise the gateway envelope (returned to the error handler).
func (eg *egress) fail(c *fiber.Ctx, e *apierr.Error) error {
	var body []byte
	switch {
	case eg.w.errorBody != nil:
		body = eg.w.errorBody(e)
	case eg.codec != nil:
		// The egress hook maps an error type to the native one; the
		// gateway's types say who failed (upstream_error), the native ones
		// what happened, which the status tells.
		errObj := map[string]any{"type": nativeErrorType(e), "message": e.Detail.Message, "code": e.Detail.Code}
		native, err := eg.codec.EgressResponse(c.UserContext(), mustJSON(map[string]any{"error": errObj}))
		if err != nil || len(native) == 0 || native[0] != '{' {
			return e
		}
		body = native
	default:
		return e
	}
	for k, v := range e.Headers {
		c.Set(k, v)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(e.StatusCode).Send(body)
}

// nativeErrorType names an error by what happened, in the vocabulary the
// Anthropic wire shares with OpenAI's where they overlap.
func nativeErrorType(e *apierr.Error) string {
	switch e.StatusCode {
	case 400, 422:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 503, 529:
		return "overloaded_error"
	}
	return "api_error"
}

// googleError is Google's error shape, which @google/genai reads.
func googleError(e *apierr.Error) []byte {
	status := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
		429: "RESOURCE_EXHAUSTED", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}[e.StatusCode]
	if status == "" {
		status = "INTERNAL"
		if e.StatusCode < 500 {
			status = "FAILED_PRECONDITION"
		}
	}
	return mustJSON(map[string]any{"error": map[string]any{"code": e.StatusCode, "message": e.Detail.Message, "status": status}})
}

// nativeChat serves a native chat request: ingress to unified chat, the
// unified pipeline, egress back. input builds the ingress_request input.
func (s *Service) nativeChat(w *wire, input func(c *fiber.Ctx) ([]byte, *apierr.Error)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		in, aerr := input(c)
		if aerr != nil {
			eg := &egress{w: w}
			// With the codec the error takes the native shape (Anthropic's
			// comes from its egress hook).
			eg.codec, _ = s.codec(w)
			return s.reject(c, eg, TypeChat, "", aerr)
		}
		return s.native(c, w, in, TypeChat)
	}
}

// native runs one native request of reqType (chat or count_tokens, both
// decoded by ingress_request into a unified chat body).
func (s *Service) native(c *fiber.Ctx, w *wire, in []byte, reqType string) error {
	eg := &egress{w: w}
	codec, aerr := s.codec(w)
	if aerr != nil {
		return s.reject(c, eg, reqType, "", aerr)
	}
	eg.codec = codec
	unified, err := codec.IngressRequest(c.UserContext(), in)
	if err != nil {
		return s.reject(c, eg, reqType, "", adapterError(codec, "ingress_request", err))
	}
	path := "/chat/completions"
	if stream, _ := jsonx.BoolField(unified, "stream"); stream && w.module == "anthropic" && reqType == TypeChat {
		// message_start goes out before a translated upstream reports
		// usage: it carries an estimate (dropin_usage.go).
		eg.state = anthropicStreamSeed(unified)
	}
	if reqType == TypeCountTokens {
		// Counting never streams, whatever the native body said.
		unified, _ = removeFields(unified, []string{"stream", "stream_options"})
		path = "/count_tokens"
	}
	return s.serveNative(c, eg, reqType, path, unified)
}

// anthropicCount serves /anthropic/v1/messages/count_tokens through the
// target provider's count_tokens support (Anthropic, Gemini).
func (s *Service) anthropicCount(c *fiber.Ctx) error {
	return s.native(c, wireAnthropic, c.Body(), TypeCountTokens)
}

// bodyInput is the ingress input of routes whose native request carries
// everything (Anthropic Messages, Cohere v2 chat): the body as sent.
func bodyInput(c *fiber.Ctx) ([]byte, *apierr.Error) { return c.Body(), nil }

// genai serves /genai/v1beta/models/{model}:{method}. The Gemini ingress
// takes {"model","stream","body":{GenerateContentRequest}}.
func (s *Service) genai(c *fiber.Ctx) error {
	rest, err := url.PathUnescape(c.Params("*"))
	if err != nil {
		rest = c.Params("*")
	}
	eg := &egress{w: wireGenAI}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return s.reject(c, eg, "", "", apierr.New(http.StatusNotFound, apierr.TypeNotFound, "route_not_found",
			fmt.Sprintf("no route for %s %s: want models/{model}:{method}", c.Method(), c.Path())))
	}
	model, method := strings.TrimPrefix(rest[:i], "models/"), rest[i+1:]
	body := c.Body()
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if !json.Valid(body) {
		return s.reject(c, eg, "", model, apierr.BadRequest("invalid_json", "", "request body is not valid JSON"))
	}
	envelope := func(stream bool, b []byte) []byte {
		return mustJSON(map[string]any{"model": model, "stream": stream, "body": json.RawMessage(b)})
	}
	switch method {
	case "generateContent":
		return s.native(c, wireGenAI, envelope(false, body), TypeChat)
	case "streamGenerateContent":
		return s.native(c, wireGenAI, envelope(true, body), TypeChat)
	case "countTokens":
		// countTokens takes {"contents"} or a whole generateContentRequest.
		if st, en, ok := jsonx.Field(body, "generateContentRequest"); ok && body[st] == '{' {
			body = body[st:en]
		}
		return s.native(c, wireGenAI, envelope(false, body), TypeCountTokens)
	case "embedContent", "batchEmbedContents":
		return s.genaiEmbed(c, model, method == "batchEmbedContents", body)
	}
	return s.reject(c, eg, "", model, apierr.New(http.StatusNotImplemented, apierr.TypeInvalidRequest, "unsupported_method",
		fmt.Sprintf("method %q is not served on the GenAI drop-in prefix", method)))
}

// defaultProvider gives a bare model name (no known "<provider>/" in
// front) the drop-in prefix's own provider, so a native client keeps its
// usual model names while "<provider>/<model>" reaches any provider.
func defaultProvider(body []byte, provider string) []byte {
	if provider == "" {
		return body
	}
	raw, ok := jsonx.StringField(body, "model")
	if !ok {
		return body
	}
	model := unescape(raw)
	if i := strings.IndexByte(model, '/'); i > 0 {
		if _, known := providers.Lookup(model[:i]); known {
			return body
		}
	}
	if out, ok := jsonx.SetStringField(body, "model", provider+"/"+model); ok {
		return out
	}
	return body
}

// callerCredential is the credential the client presented in its
// family's own style: Bearer (OpenAI, Cohere, Anthropic authToken),
// x-api-key (Anthropic), x-goog-api-key or ?key= (GenAI), or the access
// key id of a SigV4 Authorization (Bedrock; the signature is not checked).
// There is no inference auth yet: it is recorded for governance, never
// verified.
func callerCredential(c *fiber.Ctx) string {
	// Header values alias fasthttp's buffer; the outcome keeps a copy.
	return strings.Clone(presentedCredential(c))
}

func presentedCredential(c *fiber.Ctx) string {
	if v := c.Get("x-api-key"); v != "" {
		return v
	}
	if v := c.Get("x-goog-api-key"); v != "" {
		return v
	}
	auth := c.Get(fiber.HeaderAuthorization)
	if v, ok := strings.CutPrefix(auth, "Bearer "); ok {
		return strings.TrimSpace(v)
	}
	if strings.HasPrefix(auth, "AWS4-HMAC-SHA256") {
		if _, cred, ok := strings.Cut(auth, "Credential="); ok {
			akid, _, _ := strings.Cut(cred, "/")
			return akid
		}
	}
	return c.Query("key")
}

// emitNative writes native events in the wire's framing.
func (em *streamEmitter) emitNative(evs []json.RawMessage) {
	for _, ev := range evs {
		if b := frameNative(em.cl.eg.w, ev); b != nil {
			em.write(b)
		}
	}
}

// frameNative frames one native event {"event"?, "exception"?, "data"}:
// in SSE an "event" member names the event (Anthropic, Cohere) and none
// makes a data-only event (GenAI); in AWS event-stream (Bedrock) it is the
// :event-type, or "exception" the :exception-type of a modelled exception.
func frameNative(w *wire, ev []byte) []byte {
	s, e, ok := jsonx.Field(ev, "data")
	if !ok {
		return nil
	}
	data := ev[s:e]
	name, _ := jsonx.StringField(ev, "event")
	if w.invoke != invokeNone {
		exc, _ := jsonx.StringField(ev, "exception")
		return invokeFrame(w, unescape(name), unescape(exc), data)
	}
	if !w.eventStream {
		return sse.AppendEvent(nil, unescape(name), data)
	}
	m := eventstream.Event(unescape(name), data)
	if exc, ok := jsonx.StringField(ev, "exception"); ok {
		m = eventstream.Exception(unescape(exc), data)
	}
	b, err := eventstream.Append(nil, m)
	if err != nil {
		return nil
	}
	return b
}

// sameWire reports whether a drop-in stream's upstream speaks the caller's
// wire in SSE (Anthropic, Gemini, Cohere to their own prefix), so its
// events can be passed as sent: lossless, and with the upstream's own
// event order (Anthropic's input tokens in message_start). Bedrock events
// arrive AWS-framed and decoded, so they are re-encoded instead.
func sameWire(cl *call, res *attemptResult) bool {
	if cl.eg != nil && cl.eg.invoke != nil {
		// An InvokeModel passthrough: the events are the model's own.
		return res.reqType == TypeInvoke
	}
	if cl.eg == nil || cl.eg.w.eventStream || res.passthrough || res.conv != nil {
		return false
	}
	info, ok := providers.Lookup(res.target.Provider)
	return ok && ModuleFamily(string(info.Family)) == cl.eg.w.module && res.framing != "aws-eventstream"
}

// countUsage keeps the usage of unified chunks for logs and metrics.
func (em *streamEmitter) countUsage(chunks []json.RawMessage) {
	for _, ch := range chunks {
		if u, ok := usageOf(ch); ok {
			em.cl.out.Usage = u
		}
	}
}

// egressChunks hands unified chunks to egress_stream. Usage is read from
// the unified chunks: native events split it (Anthropic sends input tokens
// first, output tokens last).
func (em *streamEmitter) egressChunks(chunks []json.RawMessage, end bool) *apierr.Error {
	eg := em.cl.eg
	em.countUsage(chunks)
	if eg.w.streamErrorData != nil {
		// An OpenAI-wire upstream reports a mid-stream error as a chunk
		// {"error": {...}}; this wire ends with its own error event.
		for i, ch := range chunks {
			if st, en, ok := jsonx.Field(ch, "error"); ok && ch[st] == '{' {
				if aerr := em.egressChunks(chunks[:i], false); aerr != nil {
					return aerr
				}
				msg, _ := jsonx.StringField(ch[st:en], "message")
				e := apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_stream_error",
					fmt.Sprintf("provider %q reported an error in the stream: %s", em.res.target.Provider, unescape(msg)))
				em.write(dataLine(eg.w.streamErrorData(e)))
				em.passedErr = true
				return e
			}
		}
	}
	if len(chunks) == 0 && !end {
		return nil
	}
	evs, state, err := eg.codec.EgressStream(em.ctx, eg.state, chunks, end)
	eg.state = state
	if err != nil {
		return adapterError(eg.codec, "egress_stream", err)
	}
	em.emitNative(evs)
	return nil
}

// nativeRoutes mounts the provider-native APIs under r (a drop-in prefix
// or a framework prefix).
func (s *Service) nativeRoutes(r fiber.Router) {
	r.Post("/anthropic/v1/messages", s.nativeChat(wireAnthropic, bodyInput))
	r.Post("/anthropic/v1/messages/count_tokens", s.anthropicCount)
	r.Get("/anthropic/v1/models", s.nativeModels(anthropicModelList))
	r.Get("/genai/v1beta/models", s.nativeModels(genaiModelList))
	r.Post("/genai/v1beta/models/*", s.genai)
	r.Post("/genai/v1/models/*", s.genai)
	r.Post("/cohere/v2/chat", s.nativeChat(wireCohere, bodyInput))
	r.Post("/cohere/v2/embed", s.cohereEmbed)
	r.Post("/cohere/v2/rerank", s.cohereRerank)
	r.Post("/bedrock/model/:modelId/converse", s.nativeChat(wireBedrock, bedrockInput(false)))
	r.Post("/bedrock/model/:modelId/converse-stream", s.nativeChat(wireBedrock, bedrockInput(true)))
	r.Post("/bedrock/model/:modelId/invoke", s.bedrockInvoke(false))
	r.Post("/bedrock/model/:modelId/invoke-with-response-stream", s.bedrockInvoke(true))
}

// openAIRoutes mounts the OpenAI-shaped API under prefix; bare model names
// default to provider.
func (s *Service) openAIRoutes(r fiber.Router, prefix, provider string) {
	r.Post(prefix+"/chat/completions", s.handleDropIn(TypeChat, "/chat/completions", provider))
	r.Post(prefix+"/completions", s.handleDropIn(TypeCompletion, "/completions", provider))
	r.Post(prefix+"/responses", s.handleDropIn(TypeResponses, "/responses", provider))
	r.Post(prefix+"/embeddings", s.handleDropIn(TypeEmbedding, "/embeddings", provider))
	r.Get(prefix+"/models", s.listModels)
}

// Frameworks are the framework drop-in prefixes: each is a multi-provider
// proxy speaking the OpenAI, Anthropic and GenAI formats.
var Frameworks = []string{"langchain", "litellm", "pydanticai"}

// sendNative answers a drop-in call with the unified response encoded by
// egress_response; the log keeps the unified body.
func (s *Service) sendNative(c *fiber.Ctx, cl *call, unified []byte) error {
	var native []byte
	var err error
	if cl.eg.encode != nil {
		native, err = cl.eg.encode(unified)
	} else if cl.reqType == TypeCountTokens && cl.eg.w.countBody != nil {
		// The unified count is {"object":"count_tokens","input_tokens":N}.
		n, _ := jsonx.IntField(unified, "input_tokens")
		native = cl.eg.w.countBody(n)
	} else {
		native, err = cl.eg.codec.EgressResponse(c.UserContext(), unified)
	}
	if err != nil {
		e := apierr.As(err)
		if cl.eg.codec != nil {
			e = adapterError(cl.eg.codec, "egress_response", err)
		}
		s.finishError(cl, e)
		return e
	}
	cl.out.ResponseBody = unified
	s.record(cl)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	// Copied into the response's buffer: native may be a part of the fast
	// path's pooled upstream body (an answer passed through), released
	// before the response is written.
	c.Response().SetBody(native)
	c.Status(http.StatusOK)
	return nil
}

// streamContentType is the stream's media type in the caller's wire.
func streamContentType(cl *call) string {
	if cl.eg != nil && cl.eg.w.eventStream {
		return "application/vnd.amazon.eventstream"
	}
	return "text/event-stream"
}

// Embeddings have no adapter hooks: the native shapes are small, so the
// host maps them to the unified embeddings request and back itself.

// embeddingList reads the vectors of a unified embeddings response (float
// encoding: the host never asks for base64 here).
func embeddingList(unified []byte) ([][]float64, Usage, error) {
	var r struct {
		Data []struct {
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(unified, &r); err != nil {
		return nil, Usage{}, apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_malformed", "embeddings answer is not readable: "+err.Error())
	}
	out := make([][]float64, len(r.Data))
	for i, d := range r.Data {
		out[i] = d.Embedding
	}
	u, _ := usageOf(unified)
	return out, u, nil
}

// genaiEmbed serves :embedContent ({"content":{"parts":[{"text"}]}}) and
// :batchEmbedContents ({"requests":[{"content":...}]}, which @google/genai
// uses) as one unified embeddings request.
func (s *Service) genaiEmbed(c *fiber.Ctx, model string, batch bool, body []byte) error {
	eg := &egress{w: wireGenAI}
	type content struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	}
	type single struct {
		Content              content `json:"content"`
		OutputDimensionality *int    `json:"outputDimensionality"`
	}
	var reqs []single
	if batch {
		var b struct {
			Requests []single `json:"requests"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			return s.reject(c, eg, TypeEmbedding, model, apierr.BadRequest("invalid_json", "", "invalid batchEmbedContents request: "+err.Error()))
		}
		reqs = b.Requests
	} else {
		var one single
		if err := json.Unmarshal(body, &one); err != nil {
			return s.reject(c, eg, TypeEmbedding, model, apierr.BadRequest("invalid_json", "", "invalid embedContent request: "+err.Error()))
		}
		reqs = []single{one}
	}
	if len(reqs) == 0 {
		return s.reject(c, eg, TypeEmbedding, model, apierr.BadRequest("missing_field", "requests", "nothing to embed"))
	}
	inputs := make([]string, len(reqs))
	for i, r := range reqs {
		var sb strings.Builder
		for _, p := range r.Content.Parts {
			sb.WriteString(p.Text)
		}
		inputs[i] = sb.String()
	}
	// One text goes as a string, so a Gemini target uses embedContent.
	var input any = inputs
	if len(inputs) == 1 {
		input = inputs[0]
	}
	u := map[string]any{"model": model, "input": input, "encoding_format": "float"}
	if d := reqs[0].OutputDimensionality; d != nil {
		u["dimensions"] = *d
	}
	eg.encode = func(unified []byte) ([]byte, error) {
		vecs, _, err := embeddingList(unified)
		if err != nil {
			return nil, err
		}
		if !batch {
			if len(vecs) == 0 {
				vecs = [][]float64{{}}
			}
			return mustJSON(map[string]any{"embedding": map[string]any{"values": vecs[0]}}), nil
		}
		list := make([]any, len(vecs))
		for i, v := range vecs {
			list[i] = map[string]any{"values": v}
		}
		return mustJSON(map[string]any{"embeddings": list}), nil
	}
	return s.serveNative(c, eg, TypeEmbedding, "/embeddings", mustJSON(u))
}

// cohereEmbed serves /cohere/v2/embed (texts; float embeddings) as a
// unified embeddings request.
func (s *Service) cohereEmbed(c *fiber.Ctx) error {
	eg := &egress{w: wireCohere}
	var r struct {
		Model      string   `json:"model"`
		Texts      []string `json:"texts"`
		Dimensions *int     `json:"output_dimension"`
	}
	if err := json.Unmarshal(c.Body(), &r); err != nil {
		return s.reject(c, eg, TypeEmbedding, "", apierr.BadRequest("invalid_json", "", "invalid v2 embed request: "+err.Error()))
	}
	if len(r.Texts) == 0 {
		return s.reject(c, eg, TypeEmbedding, "", apierr.BadRequest("missing_field", "texts", "texts is required (images and inputs are not served on the drop-in prefix)"))
	}
	u := map[string]any{"model": r.Model, "input": r.Texts, "encoding_format": "float"}
	if r.Dimensions != nil {
		u["dimensions"] = *r.Dimensions
	}
	eg.encode = func(unified []byte) ([]byte, error) {
		vecs, us, err := embeddingList(unified)
		if err != nil {
			return nil, err
		}
		id, _ := jsonx.StringField(unified, "id")
		return mustJSON(map[string]any{"id": unescape(id), "response_type": "embeddings_by_type", "texts": r.Texts,
			"embeddings": map[string]any{"float": vecs},
			"meta": map[string]any{"api_version": map[string]string{"version": "2"},
				"billed_units": map[string]int64{"input_tokens": us.PromptTokens}}}), nil
	}
	return s.serveNative(c, eg, TypeEmbedding, "/embeddings", mustJSON(u))
}

// serveNative runs a unified request built by the host for a native route
// and answers through eg.
func (s *Service) serveNative(c *fiber.Ctx, eg *egress, reqType, path string, unified []byte) error {
	fb, aerr := nativeFallbacks(c, c.Body())
	if aerr != nil {
		return s.reject(c, eg, reqType, "", aerr)
	}
	unified = withFallbacks(unified, fb)
	err := s.serve(c, reqType, path, defaultProvider(unified, eg.w.provider), eg, callerCredential(c))
	if e, ok := err.(*apierr.Error); ok && e != nil {
		return eg.fail(c, e)
	}
	return err
}

// nativeModels serves a native model listing: the unified listing (every
// model of every configured provider, ids "<provider>/<model>", usable as
// is on any prefix) re-encoded by render.
func (s *Service) nativeModels(render func(ids []modelEntry) any) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := s.listModels(c); err != nil {
			return err
		}
		var l struct {
			Data []modelEntry `json:"data"`
		}
		if err := json.Unmarshal(c.Response().Body(), &l); err != nil {
			return apierr.Internal(err)
		}
		return c.JSON(render(l.Data))
	}
}

// anthropicModelList is GET /anthropic/v1/models' shape.
func anthropicModelList(ms []modelEntry) any {
	data := make([]map[string]any, len(ms))
	for i, m := range ms {
		created := time.Unix(m.Created, 0).UTC().Format(time.RFC3339)
		data[i] = map[string]any{"type": "model", "id": m.ID, "display_name": m.ID, "created_at": created}
	}
	out := map[string]any{"data": data, "has_more": false, "first_id": nil, "last_id": nil}
	if len(ms) > 0 {
		out["first_id"], out["last_id"] = ms[0].ID, ms[len(ms)-1].ID
	}
	return out
}

// genaiModelList is GET /genai/v1beta/models' shape.
func genaiModelList(ms []modelEntry) any {
	models := make([]map[string]any, len(ms))
	for i, m := range ms {
		models[i] = map[string]any{"name": "models/" + m.ID, "displayName": m.ID,
			"supportedGenerationMethods": []string{"generateContent", "streamGenerateContent", "countTokens", "embedContent"}}
	}
	return map[string]any{"models": models}
}

// cohereRerank serves /cohere/v2/rerank. The unified rerank request is
// Cohere's own shape ({model, query, documents, top_n}), so the body goes
// on as is; the answer is re-encoded in v2's shape.
func (s *Service) cohereRerank(c *fiber.Ctx) error {
	eg := &egress{w: wireCohere}
	body := c.Body()
	if !json.Valid(body) {
		return s.reject(c, eg, TypeRerank, "", apierr.BadRequest("invalid_json", "", "request body is not valid JSON"))
	}
	eg.encode = func(unified []byte) ([]byte, error) {
		var r struct {
			ID      string `json:"id"`
			Results []struct {
				Index          int     `json:"index"`
				RelevanceScore float64 `json:"relevance_score"`
			} `json:"results"`
			Usage struct {
				SearchUnits int64 `json:"search_units"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(unified, &r); err != nil {
			return nil, apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_malformed", "rerank answer is not readable: "+err.Error())
		}
		results := make([]map[string]any, len(r.Results))
		for i, x := range r.Results {
			results[i] = map[string]any{"index": x.Index, "relevance_score": x.RelevanceScore}
		}
		return mustJSON(map[string]any{"id": r.ID, "results": results,
			"meta": map[string]any{"api_version": map[string]string{"version": "2"},
				"billed_units": map[string]int64{"search_units": r.Usage.SearchUnits}}}), nil
	}
	return s.serveNative(c, eg, TypeRerank, "/rerank", body)
}
