package inference

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"github.com/wasmgate/gateway/host/reqid"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/host/providers"
	"github.com/wasmgate/gateway/host/routing"
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// call is one client request on its way through the plan.
type call struct {
	reqType string
	path    string // OpenAI-wire resource path, e.g. /chat/completions
	p       *parsed
	out     Outcome
	primary routing.Target
	// upstreamHeaders were added by pre_request plugins.
	upstreamHeaders map[string]string
	// eg, on a drop-in route, encodes the answer back into the caller's
	// native wire; nil on the unified API.
	eg *egress
	// ticket is the gate's reservation, settled once by record.
	ticket Ticket
	// routed is set when the client named a bare model and the gate chose
	// its provider: routing_info then reports no requested provider.
	routed bool
	// cost is out.Cost broken down, valid once priced is set.
	cost   CostBreakdown
	priced bool
	// capture, when set, receives the answer instead of the client (a
	// model call of the gateway's tool loop); such calls never stream.
	capture *[]byte
}

// attemptResult is a successful upstream exchange not yet sent to the client.
type attemptResult struct {
	// resp is net/http's answer; fresp the fast path's (see fastpath.go),
	// read through status, header, readBody and released by close.
	resp  *http.Response
	fresp *fasthttp.Response
	// fbody is fresp's body when it is streamed.
	fbody *fastBody
	// release gives back the provider slot the exchange holds (see
	// providerLimits); close calls it.
	release     func()
	cancel      context.CancelFunc
	adapter     Adapter
	passthrough bool
	target      routing.Target
	resolved    string
	keyID       string
	// secret is the key's, masked wherever the upstream's answer quotes it.
	secret  string
	framing string
	// context is the adapter's UpstreamRequest.Context, handed back to
	// adapt_response and as the first stream state.
	context string
	// For streams: events already read while checking the stream opens
	// without an error, and the reader to continue with.
	pending [][]byte
	reader  *eventReader
	state   []byte
	// The same read-ahead as events (passthrough) or unified chunks
	// (adapted), for when stream plugins must see it.
	heldEvents []UpstreamEvent
	// unread: events openStream read past the first content but did not
	// adapt; the emitter handles them before reading more.
	unread     []UpstreamEvent
	heldChunks []json.RawMessage
	// conv converts a chat answer back to Responses or Completions.
	conv *conversion
	// reqType is the request type the adapter was asked for (chat when
	// the client's type is converted).
	reqType string
}

// attemptError is a failed attempt: the envelope to report, and whether
// the same target may be retried.
type attemptError struct {
	err        *apierr.Error
	retryable  bool
	retryAfter time.Duration
}

func (s *Service) handle(reqType, path string) fiber.Handler { return s.handleAs(reqType, path, "") }

// handleAs serves an OpenAI-shaped route whose bare model names belong to
// provider ("" requires "<provider>/<model>").
func (s *Service) handleAs(reqType, path, provider string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		body := defaultProvider(c.Body(), provider)
		caller := callerCredential(c)
		if s.wantsChatTools(c, reqType, body, caller) {
			return s.serveChatTools(c, path, body, caller)
		}
		return s.serve(c, reqType, path, body, nil, caller)
	}
}

// serve runs one unified request through plugins and the plan; every
// route, unified or drop-in, goes through here so none bypasses metering.
func (s *Service) serve(c *fiber.Ctx, reqType, path string, body []byte, eg *egress, caller string) error {
	return s.serveCaptured(c, reqType, path, body, caller, eg, nil)
}

// newCall starts the outcome of one request.
func (s *Service) newCall(c *fiber.Ctx, reqType, path string, p *parsed, eg *egress, capture *[]byte, caller string) *call {
	cl := &call{reqType: reqType, path: path, p: p, eg: eg, capture: capture}
	start := s.now()
	cl.out = Outcome{ID: reqid.New(start), Start: start,
		// c.Path() points into the pooled request buffer, reused once the
		// handler returns; the outcome outlives it (the log writer reads it
		// later), so it keeps its own copy.
		Route: strings.Clone(c.Path()), RoutePattern: c.Route().Path,
		RequestType: reqType, Model: p.model, Stream: p.stream, CallerCredential: caller}
	return cl
}

// serveCaptured is serve whose non-streamed answer goes to *capture when
// capture is set (the tool loop reads the model's answer).
func (s *Service) serveCaptured(c *fiber.Ctx, reqType, path string, body []byte, caller string, eg *egress, capture *[]byte) error {
	p, aerr := parseRequest(body)
	if aerr != nil {
		// A request the gateway cannot read is still a request: it is
		// logged (with whatever model it names) like any other failure.
		p = &parsed{body: body}
		if raw, ok := jsonx.StringField(body, "model"); ok {
			p.model = unescape(raw)
		}
		s.finishError(s.newCall(c, reqType, path, p, eg, capture, caller), aerr)
		return aerr
	}
	if capture != nil && p.stream {
		return apierr.BadRequest("invalid_value", "stream", "a model call of the gateway's tool loop cannot stream")
	}
	cl := s.newCall(c, reqType, path, p, eg, capture, caller)
	vk, apiKey, bearer := gateCredentials(c, caller)
	if aerr := s.admit(c.UserContext(), cl, vk, apiKey, bearer); aerr != nil {
		s.finishError(cl, aerr)
		return aerr
	}
	// A path that ends without recording (none should) must not keep its
	// reservation. A stream settles when its writer (already running on
	// its own goroutine) finishes, so its ticket is not touched here.
	defer func() {
		if !c.Response().IsBodyStream() && cl.ticket != nil {
			cl.settle()
		}
	}()
	pre, aerr := s.runPreRequest(c.UserContext(), p.body)
	if aerr != nil {
		s.finishError(cl, aerr)
		return aerr
	}
	if pre.response != nil {
		return s.respondShortCircuit(c, cl, pre.response)
	}
	if &pre.body[0] != &p.body[0] || len(pre.body) != len(p.body) {
		if aerr := p.replaceBody(pre.body); aerr != nil {
			s.finishError(cl, aerr)
			return aerr
		}
		cl.out.Model, cl.out.Stream = p.model, p.stream
		if capture != nil && p.stream {
			aerr := apierr.BadRequest("invalid_value", "stream", "a plugin made a model call of the gateway's tool loop stream")
			s.finishError(cl, aerr)
			return aerr
		}
	}
	cl.upstreamHeaders = pre.headers
	cl.primary = p.plan.Targets[0]
	return s.execute(c, cl)
}

// execute walks the plan: each target is tried (with its retries) until one
// answers; a failure that would fail everywhere (bad request) stops early.
func (s *Service) execute(c *fiber.Ctx, cl *call) error {
	var last *apierr.Error
	for i, tgt := range cl.p.plan.Targets {
		res, aerr := s.tryTarget(c.UserContext(), cl, tgt, i)
		if aerr == nil {
			cl.out.IsFallback, cl.out.FallbackIndex = i > 0, i
			return s.respond(c, cl, res)
		}
		last = aerr
		cl.out.Provider, cl.out.ResolvedModel = tgt.Provider, tgt.Model
		if !routing.FallbackWorthy(aerr.StatusCode) {
			break
		}
	}
	s.finishError(cl, last)
	return last
}

// tryTarget runs the attempts against one provider/model: pick a key, build
// and send the request, retry retryable failures with backoff.
func (s *Service) tryTarget(ctx context.Context, cl *call, tgt routing.Target, index int) (*attemptResult, *apierr.Error) {
	prov, ok := s.o.Providers.Provider(tgt.Provider)
	if !ok {
		if _, known := providers.Lookup(tgt.Provider); !known {
			return nil, s.routeErr(cl, tgt, index, apierr.New(http.StatusBadRequest, apierr.TypeInvalidRequest, "unknown_provider",
				fmt.Sprintf("unknown provider %q in model %q", tgt.Provider, tgt.String())).WithParam("model"))
		}
		return nil, s.routeErr(cl, tgt, index, apierr.New(http.StatusNotFound, apierr.TypeNotFound, "provider_not_configured",
			fmt.Sprintf("provider %q is not configured: add it with POST /api/providers", tgt.Provider)))
	}
	info, _ := providers.Lookup(tgt.Provider)
	adapter, ok := s.o.Adapters.Adapter(string(info.Family))
	if !ok {
		return nil, s.routeErr(cl, tgt, index, apierr.New(http.StatusNotImplemented, apierr.TypeInvalidRequest, "no_adapter",
			fmt.Sprintf("no provider adapter for wire family %q is loaded; install one through /api/plugins", info.Family)))
	}
	passthrough := adapter.Passthrough() && openAIWireType(cl.reqType)
	if !passthrough && !adapter.Supports(cl.reqType) && !needsConversion(cl.reqType, adapter, false) {
		return nil, s.routeErr(cl, tgt, index, apierr.New(http.StatusBadRequest, apierr.TypeInvalidRequest, "unsupported_request_type",
			fmt.Sprintf("provider %q does not support %s requests", tgt.Provider, cl.reqType)))
	}
	keys := cl.allowedKeys(tgt.Provider, routingKeys(prov.Keys))
	if len(keys) == 0 && len(prov.Keys) > 0 {
		return nil, s.routeErr(cl, tgt, index, apierr.Forbidden("provider_key_not_allowed",
			fmt.Sprintf("the virtual key allows none of the keys of provider %q", tgt.Provider)))
	}
	policy := routing.RetryPolicy{
		MaxRetries: prov.NetworkConfig.MaxRetries,
		Initial:    time.Duration(prov.NetworkConfig.RetryBackoffInitialMS) * time.Millisecond,
		Max:        time.Duration(prov.NetworkConfig.RetryBackoffMaxMS) * time.Millisecond,
	}
	timeout := time.Duration(prov.NetworkConfig.DefaultRequestTimeoutInSeconds) * time.Second
	var proxyPW string
	if !prov.ProxyConfig.Password.IsZero() {
		pw, err := s.o.Providers.ResolveProxyPassword(ctx, prov)
		if err != nil {
			return nil, s.routeErr(cl, tgt, index, apierr.Internal(err))
		}
		proxyPW = pw
	}
	te, err := s.transports.entry(&prov, proxyPW)
	if err != nil {
		return nil, s.routeErr(cl, tgt, index, apierr.Internal(err))
	}
	client := &http.Client{Transport: te.tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	exclude := map[string]bool{}
	var last *attemptError
	for attempt := 0; attempt <= policy.MaxRetries; attempt++ {
		if attempt > 0 {
			cl.out.Retries++
			if err := sleepCtx(ctx, policy.Backoff(attempt, last.retryAfter, nil)); err != nil {
				break
			}
		}
		key, err := routing.SelectKey(keys, tgt.Model, exclude, nil)
		if errors.Is(err, routing.ErrNoKey) && len(exclude) > 0 {
			// Every key was tried: start over rather than give up early.
			clear(exclude)
			key, err = routing.SelectKey(keys, tgt.Model, exclude, nil)
		}
		if err != nil {
			return nil, s.routeErr(cl, tgt, index, apierr.New(http.StatusNotFound, apierr.TypeNotFound, "no_key_for_model",
				fmt.Sprintf("no enabled key of provider %q allows model %q", tgt.Provider, tgt.Model)))
		}
		res, aerr := s.attempt(ctx, cl, tgt, prov, info, adapter, client, te.fast, timeout, key)
		if aerr == nil {
			return res, nil
		}
		last = aerr
		s.routeErr(cl, tgt, index, aerr.err)
		if !aerr.retryable {
			break
		}
		// Prefer another key on retry: its limits and health are separate.
		exclude[key.ID] = true
	}
	return nil, last.err
}

func routingKeys(ks []providers.Key) []routing.Key {
	out := make([]routing.Key, len(ks))
	for i, k := range ks {
		out[i] = routing.Key{ID: k.ID, Weight: k.Weight, Enabled: k.Enabled, Models: k.Models,
			BlacklistedModels: k.BlacklistedModels, Aliases: k.Aliases}
	}
	return out
}

// routeErr fills the routing part of extra_fields on an error.
func (s *Service) routeErr(cl *call, tgt routing.Target, index int, e *apierr.Error) *apierr.Error {
	if e.ExtraFields == nil {
		e.ExtraFields = &apierr.ExtraFields{}
	}
	x := e.ExtraFields
	x.Provider, x.ModelRequested, x.RequestType = tgt.Provider, cl.p.model, cl.reqType
	if x.RoutingInfo == nil {
		x.RoutingInfo = &apierr.RoutingInfo{}
	}
	ri := x.RoutingInfo
	ri.Provider, ri.Model, ri.IsFallback = tgt.Provider, tgt.Model, index > 0
	ri.PrimaryProvider, ri.PrimaryModel = cl.primary.Provider, cl.primary.Model
	ri.RequestedProvider, ri.RequestedModel = cl.primary.Provider, cl.primary.Model
	if cl.routed {
		ri.RequestedProvider = ""
	}
	return e
}

// attempt sends one request with one key.
func (s *Service) attempt(ctx context.Context, cl *call, tgt routing.Target, prov providers.Provider, info providers.Info,
	adapter Adapter, client *http.Client, fast *fasthttp.Client, timeout time.Duration, key *routing.Key) (*attemptResult, *attemptError) {
	pk, _ := s.o.Providers.Key(tgt.Provider, key.ID)
	cred, err := s.creds.get(ctx, s.o.Providers, info, pk)
	if err != nil {
		return nil, &attemptError{err: apierr.New(http.StatusInternalServerError, apierr.TypeInternal, "key_unresolved",
			fmt.Sprintf("provider %q key %q could not be used: %v", tgt.Provider, pk.Name, err))}
	}
	resolved := key.Resolve(tgt.Model)
	if vl := cred.key.VLLM; vl != nil && vl.ModelName != "" && resolved == "" {
		resolved = vl.ModelName
	}
	baseURL := cred.key.BaseURL

	var spec *UpstreamRequest
	var conv *conversion
	effType := cl.reqType
	passthrough := adapter.Passthrough() && openAIWireType(cl.reqType)
	baseType, baseBody := cl.reqType, cl.p.body
	if cl.eg != nil && cl.eg.invoke != nil {
		// Bedrock InvokeModel: the native body or the unified request.
		if baseType, baseBody, err = cl.eg.invoke.request(ctx, tgt, baseType, baseBody); err != nil {
			return nil, &attemptError{err: apierr.As(err)}
		}
		passthrough = passthrough && baseType != TypeInvoke
	}
	if passthrough {
		body, ok := jsonx.SetStringField(baseBody, "model", resolved)
		if !ok {
			return nil, &attemptError{err: apierr.BadRequest("invalid_json", "", "request body is not valid JSON")}
		}
		spec = &UpstreamRequest{Method: http.MethodPost, Path: cl.path, Body: body, Stream: cl.p.stream}
	} else {
		reqType, body := baseType, baseBody
		if needsConversion(cl.reqType, adapter, false) {
			body, conv, err = toChat(cl.reqType, cl.p.body, tgt.Model, cl.p.stream)
			if err != nil {
				return nil, &attemptError{err: apierr.As(err)}
			}
			reqType = TypeChat
		}
		effType = reqType
		in := &AdaptRequestInput{RequestType: reqType, Provider: tgt.Provider, Model: resolved, Stream: cl.p.stream,
			BaseURL: baseURL, KeyConfig: cred.keyConfig, Body: body}
		spec, err = adapter.AdaptRequest(ctx, in)
		if err != nil {
			return nil, &attemptError{err: adapterError(adapter, "adapt_request", err)}
		}
	}
	if fastEligible(spec, cl.p.stream, fast, cred, baseURL) {
		url := spec.URL
		if url == "" {
			url = strings.TrimRight(baseURL, "/") + spec.Path
		}
		release, aerr := s.limits.get(&prov).acquire(ctx, tgt.Provider, timeout)
		if aerr != nil {
			return nil, aerr
		}
		deadline := answerDeadline(ctx, timeout)
		fresp, aerr := s.fastAttempt(targetInfo{provider: tgt.Provider, url: url, fast: fast,
			auth: cred.static, extraHeaders: prov.NetworkConfig.ExtraHeaders}, spec.Body, spec.Stream, deadline, timeout, spec.Headers, cl.upstreamHeaders)
		if aerr != nil {
			release()
			return nil, aerr
		}
		res := &attemptResult{fresp: fresp, cancel: func() {}, release: release, adapter: adapter, passthrough: passthrough,
			target: tgt, resolved: resolved, keyID: key.ID, secret: cred.key.Secret(), framing: spec.Framing, reqType: effType, conv: conv}
		res.fbody = newFastBody(fresp)
		if len(spec.Context) <= pluginsdk.MaxAdapterContext {
			res.context = spec.Context
			if spec.Stream {
				res.state = []byte(spec.Context)
			}
		}
		return s.answered(ctx, tgt, key, res, spec.Stream, timeout, upstreamClock{
			expired: func() bool { return !time.Now().Before(deadline) },
			lift:    func() bool { liftAnswerDeadline(fresp); return true },
		})
	}
	req, err := buildHTTPRequest(ctx, spec, baseURL, prov.NetworkConfig.ExtraHeaders)
	if err != nil {
		return nil, &attemptError{err: apierr.New(http.StatusBadGateway, apierr.TypePlugin, "bad_upstream_spec",
			fmt.Sprintf("adapter %s built an unusable upstream request: %v", adapter.Name(), err))}
	}
	for k, v := range cl.upstreamHeaders {
		req.Header.Set(k, v)
	}
	if err := cred.auth.Apply(ctx, req); err != nil {
		return nil, &attemptError{retryable: true, err: apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_auth_failed",
			fmt.Sprintf("could not authenticate to provider %q: %v", tgt.Provider, err))}
	}
	release, aerr := s.limits.get(&prov).acquire(ctx, tgt.Provider, timeout)
	if aerr != nil {
		return nil, aerr
	}
	actx, cancel := context.WithCancel(ctx)
	req = req.WithContext(actx)
	// The timeout bounds the wait for the answer to start (for a stream, its
	// first content: see answered); a stream may then run as long as it
	// keeps sending.
	timer := time.AfterFunc(timeout, cancel)
	resp, err := client.Do(req)
	if err != nil {
		release()
		timer.Stop()
		cancel()
		code, msg := http.StatusBadGateway, fmt.Sprintf("provider %q unreachable: %v", tgt.Provider, errText(err))
		if actx.Err() != nil && ctx.Err() == nil {
			code, msg = http.StatusGatewayTimeout, fmt.Sprintf("provider %q did not answer within %s", tgt.Provider, timeout)
		}
		return nil, &attemptError{retryable: true, err: apierr.New(code, apierr.TypeUpstream, "upstream_unreachable", msg)}
	}
	res := &attemptResult{resp: resp, cancel: func() { timer.Stop(); cancel() }, release: release, adapter: adapter, passthrough: passthrough,
		target: tgt, resolved: resolved, keyID: key.ID, secret: cred.key.Secret(), framing: spec.Framing, conv: conv, reqType: effType}
	if len(spec.Context) <= pluginsdk.MaxAdapterContext {
		res.context = spec.Context
		res.state = []byte(spec.Context)
	}
	return s.answered(ctx, tgt, key, res, cl.p.stream && spec.Stream, timeout, upstreamClock{
		expired: func() bool { return actx.Err() != nil && ctx.Err() == nil },
		// Stop fails once the timer fired: the attempt's context is
		// cancelled then, and the stream with it.
		lift: timer.Stop,
	})
}

// upstreamClock is the answer timeout of one attempt, whichever client
// sent it: the fast path's read deadline or net/http's timer.
type upstreamClock struct {
	// expired reports whether the timeout cut the exchange.
	expired func() bool
	// lift ends the timeout once a stream is open; false if it had
	// already expired.
	lift func() bool
}

// answered takes an upstream answer that holds a provider slot: a failure
// status becomes the attempt's error, and a stream is opened (its first
// events read) under the answer timeout. res is handed on only when it
// succeeds; on every other way out, a panic of an adapter hook in
// openStream included, it is closed here, once, so the slot, the pooled
// response and the attempt's context are given back. (A panic used to
// leave the slot taken for good: the server's recoverer answers 500, but
// nothing released the exchange, and a provider whose slots all leaked
// refused every request.)
func (s *Service) answered(ctx context.Context, tgt routing.Target, key *routing.Key, res *attemptResult, stream bool,
	timeout time.Duration, clock upstreamClock) (*attemptResult, *attemptError) {
	handed := false
	defer func() {
		if !handed {
			res.close() // idempotent: upstreamFailure closes it too
		}
	}()
	if res.status() >= 300 {
		return nil, s.upstreamFailure(ctx, tgt, key, res)
	}
	if stream {
		// Nothing has reached the client yet, and nothing would notice it
		// leave: an upstream that sends its headers (and perhaps a
		// role-only chunk) and then stalls held the slot, the connection
		// and this goroutine for good once the timeout stopped at the
		// headers. It runs until the first content instead, as it does
		// until the whole answer of a request that does not stream; a
		// stall is then a retryable timeout, so retries and fallbacks
		// apply.
		aerr := s.openStream(ctx, res)
		if aerr == nil && !clock.lift() || aerr != nil && clock.expired() {
			aerr = &attemptError{retryable: true, err: apierr.New(http.StatusGatewayTimeout, apierr.TypeUpstream, "upstream_unreachable",
				fmt.Sprintf("provider %q sent no content within %s", tgt.Provider, timeout))}
		}
		if aerr != nil {
			return nil, aerr
		}
	}
	handed = true
	return res, nil
}

func errText(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner.Error()
		}
	}
	return err.Error()
}

// adapterError reports a plugin failure or rejection with the plugin named.
func adapterError(a Adapter, hook string, err error) *apierr.Error {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	status := http.StatusBadGateway
	var pe *plugins.Error
	if errors.As(err, &pe) {
		status = pe.HTTPStatus()
		if !pe.Failure() {
			// The adapter refused the request on purpose (say, an image
			// the provider cannot take): the client's request is at fault.
			return apierr.New(status, apierr.TypeInvalidRequest, "adapter_rejected",
				fmt.Sprintf("provider adapter %s: %s", a.Name(), pe.Message))
		}
	}
	return apierr.New(status, apierr.TypePlugin, "adapter_error",
		fmt.Sprintf("provider adapter %s failed in %s: %v", a.Name(), hook, err))
}

// buildHTTPRequest turns an adapter's spec into an *http.Request.
func buildHTTPRequest(ctx context.Context, spec *UpstreamRequest, baseURL string, extra map[string]string) (*http.Request, error) {
	target := spec.URL
	if target == "" {
		if baseURL == "" {
			return nil, errors.New("no base URL: set network_config.base_url or the key's url")
		}
		target = strings.TrimRight(baseURL, "/") + spec.Path
	}
	var body []byte
	switch {
	case spec.BodyBase64 != "":
		return nil, errors.New("body_base64 is not supported yet")
	case len(spec.Body) > 0:
		body = spec.Body
	}
	method := spec.Method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", "wasmgate/1")
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	for k, v := range spec.Headers {
		req.Header.Set(k, v)
	}
	if spec.Stream && req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "text/event-stream")
	}
	return req, nil
}

// redactSecret masks the key's secret wherever an upstream's answer quotes
// it (some servers echo the key they rejected, whole): the answer goes to
// the gateway's caller, who may hold a virtual key but must never see the
// provider's. Secrets too short to be told from ordinary text are left.
func redactSecret(body []byte, secret string) []byte {
	if len(secret) < 8 || !bytes.Contains(body, []byte(secret)) {
		return body
	}
	return bytes.ReplaceAll(body, []byte(secret), []byte("[redacted]"))
}

// redact masks the key's secret in upstream bytes shown to the caller.
func (r *attemptResult) redact(b []byte) []byte { return redactSecret(b, r.secret) }

// openAIWireType reports whether a request type exists on the OpenAI wire,
// so a passthrough adapter's provider serves it byte for byte.
func openAIWireType(t string) bool {
	return t == TypeChat || t == TypeCompletion || t == TypeResponses || t == TypeEmbedding
}

// upstreamFailure turns a non-2xx upstream answer into the attempt's error:
// the provider's status and message, Retry-After, and key health.
func (s *Service) upstreamFailure(ctx context.Context, tgt routing.Target, key *routing.Key, res *attemptResult) *attemptError {
	status := res.status()
	{
		defer res.close()
		body, _ := res.readBody(1 << 20)
		body = res.redact(body)
		e := apierr.New(status, apierr.TypeUpstream, "upstream_error",
			fmt.Sprintf("provider %q answered %d: %s", tgt.Provider, status, upstreamMessage(status, body)))
		e.IsGatewayError = false
		if status < 400 {
			e.StatusCode = http.StatusBadGateway
		}
		var raw any
		if json.Unmarshal(body, &raw) == nil {
			e.WithExtra(&apierr.ExtraFields{RawResponse: raw})
		}
		ra := routing.ParseRetryAfter(res.retryHeaders(), time.Now())
		if ra > 0 {
			ms := ra.Milliseconds()
			if e.ExtraFields == nil {
				e.ExtraFields = &apierr.ExtraFields{}
			}
			e.ExtraFields.RetryAfterMS = &ms
		}
		if status == http.StatusUnauthorized || status == http.StatusForbidden {
			_ = s.o.Providers.SetKeyStatus(context.WithoutCancel(ctx), tgt.Provider, key.ID, "auth_failed", e.Detail.Message)
		}
		return &attemptError{err: e, retryable: routing.Retryable(status), retryAfter: ra}
	}
}
