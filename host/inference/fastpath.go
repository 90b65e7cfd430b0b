package inference

import (
	"bytes"
	"context"
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

// The fast path sends non-streamed passthrough requests (OpenAI wire, the
// bulk of traffic) with fasthttp's client: no goroutines per connection and
// pooled request/response objects take tens of microseconds of CPU off
// every request compared with net/http. Streams, proxies and credentials
// that need signing or token minting keep the net/http path.

func newFastClient(p *providers.Provider) *fasthttp.Client {
	connect := time.Duration(p.NetworkConfig.ConnectTimeoutInSeconds) * time.Second
	if connect <= 0 {
		connect = 10 * time.Second
	}
	return &fasthttp.Client{
		Name:                          "wasmgate/1",
		MaxConnsPerHost:               4096,
		MaxIdleConnDuration:           90 * time.Second,
		NoDefaultUserAgentHeader:      false,
		DisableHeaderNamesNormalizing: true,
		DisablePathNormalizing:        true,
		MaxResponseBodySize:           0,
		Dial: func(addr string) (net.Conn, error) {
			return fasthttp.DialTimeout(addr, connect)
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

// sendFast performs one upstream exchange with fasthttp and returns it as
// an *http.Response whose body is already in memory.
func sendFast(ctx context.Context, client *fasthttp.Client, url string, body []byte, headers ...map[string]string) (*http.Response, error) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url)
	req.Header.SetMethod(http.MethodPost)
	req.Header.SetContentType("application/json")
	for _, hs := range headers {
		for k, v := range hs {
			req.Header.Set(k, v)
		}
	}
	req.SetBodyRaw(body)
	var err error
	if dl, ok := ctx.Deadline(); ok {
		err = client.DoDeadline(req, resp, dl)
	} else {
		err = client.Do(req, resp)
	}
	if err != nil {
		return nil, err
	}
	out := &http.Response{StatusCode: resp.StatusCode(), Header: http.Header{}, Request: nil}
	resp.Header.VisitAll(func(k, v []byte) {
		out.Header.Add(string(k), string(v))
	})
	out.Body = io.NopCloser(bytes.NewReader(append([]byte(nil), resp.Body()...)))
	return out, nil
}

// fastAttempt sends one attempt on the fast path (see fastEligible).
func (s *Service) fastAttempt(ctx context.Context, tgt targetInfo, body []byte,
	timeout time.Duration, headers ...map[string]string) (*http.Response, *attemptError) {
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Later maps win: provider extra headers, the adapter's headers,
	// plugin headers, then credentials.
	all := append([]map[string]string{tgt.extraHeaders}, headers...)
	all = append(all, tgt.auth)
	resp, err := sendFast(dctx, tgt.fast, tgt.url, body, all...)
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

// fastEligible reports whether an attempt can take the fast path: a
// non-streamed POST with a JSON body, a pool without proxy, and
// credentials that are plain headers (no signing, no token minting).
func fastEligible(spec *UpstreamRequest, stream bool, fast *fasthttp.Client, cred *credential, baseURL string) bool {
	if stream || spec.Stream || fast == nil || cred.static == nil || spec.BodyBase64 != "" || len(spec.Body) == 0 {
		return false
	}
	if spec.Method != "" && spec.Method != http.MethodPost {
		return false
	}
	return spec.URL != "" || baseURL != ""
}
