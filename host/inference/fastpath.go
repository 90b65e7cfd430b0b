package inference

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/providers"
)

// The fast path sends requests whose credentials are plain headers (API
// keys, bearer tokens), streamed or not, with fasthttp's client: no
// goroutines per connection and pooled request/response objects take tens
// of microseconds of CPU off every request compared with net/http (a
// third of a short stream's gateway CPU). Streams are read in the
// caller's goroutine (see upstreamconn.go). Proxies and credentials that
// need signing or token minting keep the net/http path, as does HTTP/2:
// fasthttp speaks HTTP/1.1 only.

func newFastClient(p *providers.Provider) *fasthttp.Client {
	return newFastClientTLS(p, nil)
}

// newFastClientTLS is newFastClient trusting roots instead of the system's
// certificate authorities when roots is set (tests).
func newFastClientTLS(p *providers.Provider, roots *x509.CertPool) *fasthttp.Client {
	connect := time.Duration(p.NetworkConfig.ConnectTimeoutInSeconds) * time.Second
	if connect <= 0 {
		connect = 10 * time.Second
	}
	return &fasthttp.Client{
		// The provider's concurrency bounds its requests in flight (see
		// limiter.go); beyond this fasthttp would fail a request at once.
		MaxConnsPerHost:               max(4096, p.ConcurrencyAndBufferSize.Concurrency),
		Name:                          "wasmgate/1",
		MaxIdleConnDuration:           90 * time.Second,
		NoDefaultUserAgentHeader:      false,
		DisableHeaderNamesNormalizing: true,
		DisablePathNormalizing:        true,
		MaxResponseBodySize:           0,
		// Each host's connections come from dialUpstream, which knows
		// whether the host speaks TLS only here.
		ConfigureClient: func(hc *fasthttp.HostClient) error {
			var tc *tls.Config
			if hc.IsTLS {
				host, _, err := net.SplitHostPort(hc.Addr)
				if err != nil {
					host = hc.Addr
				}
				tc = &tls.Config{ServerName: host, RootCAs: roots, ClientSessionCache: tls.NewLRUClientSessionCache(0)}
			}
			hc.Dial = func(addr string) (net.Conn, error) { return dialUpstream(addr, tc, connect) }
			return nil
		},
	}
}

// staticAuthHeaders captures the headers an authenticator sets when they do
// not depend on the request (API keys, bearer tokens), so the fast path can
// set them without building an *http.Request. Nil means "use net/http".
func staticAuthHeaders(info providers.Info, c *credential) map[string]string {
	switch info.Auth {
	case providers.AuthBearer, providers.AuthBearerOptional, providers.AuthXAPIKey,
		providers.AuthGoogAPIKey, providers.AuthXIAPIKey:
	default:
		return nil
	}
	req, _ := http.NewRequest(http.MethodPost, "http://example.invalid/", nil)
	if err := c.auth.Apply(context.Background(), req); err != nil {
		return nil
	}
	h := map[string]string{}
	for k, v := range req.Header {
		if len(v) == 1 {
			h[k] = v[0]
		}
	}
	if req.URL.RawQuery != "" {
		return nil // query-string keys need the full path
	}
	return h
}

// sendFast performs one upstream exchange with fasthttp. The answer stays
// in the pooled response, body included, so nothing is copied or converted
// to net/http's types; the caller releases it (attemptResult.close) once
// the answer has been handed on.
func sendFast(client *fasthttp.Client, url string, body []byte, deadline time.Time, stream bool, headers ...map[string]string) (*fasthttp.Response, error) {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI(url)
	req.Header.SetMethod(http.MethodPost)
	req.Header.SetContentType("application/json")
	for _, hs := range headers {
		for k, v := range hs {
			req.Header.Set(k, v)
		}
	}
	req.SetBodyRaw(body)
	resp := fasthttp.AcquireResponse()
	resp.StreamBody = stream
	if err := client.DoDeadline(req, resp, deadline); err != nil {
		fasthttp.ReleaseResponse(resp)
		return nil, err
	}
	// fasthttp leaves the deadline on the connection: a streamed body is
	// read under it until liftAnswerDeadline.
	return resp, nil
}

// liftAnswerDeadline takes the answer deadline off a streamed response's
// connection once the stream is open: it bounded the wait for the answer
// to start and would cut a long stream.
func liftAnswerDeadline(resp *fasthttp.Response) {
	if c := connOf(resp); c != nil {
		_ = c.SetReadDeadline(time.Time{})
	}
}

// answerDeadline is when an attempt's answer must have started: the
// earlier of the provider's timeout and the caller's own deadline.
// fasthttp takes a deadline, not a context, so it is computed here rather
// than through a context and its timer.
func answerDeadline(ctx context.Context, timeout time.Duration) time.Time {
	deadline := time.Now().Add(timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	return deadline
}

// fastAttempt sends one attempt on the fast path (see fastEligible);
// timeout is the provider's, which deadline applies, for the error.
func (s *Service) fastAttempt(tgt targetInfo, body []byte, stream bool, deadline time.Time,
	timeout time.Duration, headers ...map[string]string) (*fasthttp.Response, *attemptError) {
	// Later maps win: provider extra headers, the adapter's headers,
	// plugin headers, then credentials.
	all := append([]map[string]string{tgt.extraHeaders}, headers...)
	all = append(all, tgt.auth)
	resp, err := sendFast(tgt.fast, tgt.url, body, deadline, stream, all...)
	if err != nil {
		code, msg := http.StatusBadGateway, fmt.Sprintf("provider %q unreachable: %v", tgt.provider, err)
		if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
			code, msg = http.StatusGatewayTimeout, fmt.Sprintf("provider %q did not answer within %s", tgt.provider, timeout)
		}
		return nil, &attemptError{retryable: true, err: apierr.New(code, apierr.TypeUpstream, "upstream_unreachable", msg)}
	}
	return resp, nil
}

// targetInfo is what the fast path needs to know about one attempt.
type targetInfo struct {
	provider     string
	url          string
	fast         *fasthttp.Client
	auth         map[string]string
	extraHeaders map[string]string
}

// fastEligible reports whether an attempt can take the fast path: a POST
// with a JSON body, streamed only when the client asked for a stream, a
// pool without proxy, and credentials that are plain headers (no signing,
// no token minting).
func fastEligible(spec *UpstreamRequest, stream bool, fast *fasthttp.Client, cred *credential, baseURL string) bool {
	if stream != spec.Stream || fast == nil || cred.static == nil || spec.BodyBase64 != "" || len(spec.Body) == 0 {
		return false
	}
	if spec.Method != "" && spec.Method != http.MethodPost {
		return false
	}
	return spec.URL != "" || baseURL != ""
}

// The upstream answer of an attempt comes from one of two clients: the
// fast path's pooled fasthttp response (body in memory) or net/http's
// response (body streamed). These accessors hide which.

// status is the upstream's HTTP status.
func (res *attemptResult) status() int {
	if res.fresp != nil {
		return res.fresp.StatusCode()
	}
	return res.resp.StatusCode
}

// header is the first value of an upstream header, whatever its case: the
// fast client keeps header names as sent.
func (res *attemptResult) header(name string) string {
	if res.fresp == nil {
		return res.resp.Header.Get(name)
	}
	var v []byte
	found := false
	res.fresp.Header.VisitAll(func(k, val []byte) {
		if !found && len(k) == len(name) && bytes.EqualFold(k, []byte(name)) {
			v, found = val, true
		}
	})
	return string(v)
}

// body is the upstream body as a stream.
func (res *attemptResult) body() io.Reader {
	if res.fbody != nil {
		return res.fbody
	}
	if res.fresp != nil {
		return bytes.NewReader(res.fresp.Body())
	}
	return res.resp.Body
}

// readBody reads at most limit bytes of the upstream body. On the fast
// path it is the pooled response's own buffer: valid until close, never
// to be kept or handed to the client without a copy.
func (res *attemptResult) readBody(limit int64) ([]byte, error) {
	if res.fbody != nil {
		return io.ReadAll(io.LimitReader(res.fbody, limit))
	}
	if res.fresp != nil {
		b := res.fresp.Body()
		if int64(len(b)) > limit {
			b = b[:limit]
		}
		return b, nil
	}
	return io.ReadAll(io.LimitReader(res.resp.Body, limit))
}

// close ends the exchange: the fast path's response goes back to its
// pool, net/http's body is closed and its attempt context cancelled.
func (res *attemptResult) close() {
	if res.fresp != nil {
		if res.fbody != nil && !res.fbody.eof {
			// An unfinished stream: its connection cannot be reused, and
			// closing it is what tells the upstream to stop.
			res.fresp.SetConnectionClose()
		}
		fasthttp.ReleaseResponse(res.fresp)
		res.fresp = nil
	} else if res.resp != nil {
		res.resp.Body.Close()
	}
	res.cancel()
	if res.release != nil {
		res.release()
		res.release = nil
	}
}

// retryHeaders are the upstream's retry hints as an http.Header, which
// routing.ParseRetryAfter reads.
func (res *attemptResult) retryHeaders() http.Header {
	if res.fresp == nil {
		return res.resp.Header
	}
	h := http.Header{}
	for _, k := range []string{"retry-after-ms", "Retry-After"} {
		if v := res.header(k); v != "" {
			h.Set(k, v)
		}
	}
	return h
}
