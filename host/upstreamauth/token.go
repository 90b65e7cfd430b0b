package upstreamauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Token is an OAuth access token with its expiry.
type Token struct {
	AccessToken string
	TokenType   string
	Expiry      time.Time
}

// DefaultRefreshMargin is how long before expiry a cached token is replaced,
// so a request never leaves with a token that expires in flight.
const DefaultRefreshMargin = 5 * time.Minute

// DefaultMintTimeout bounds one token exchange.
const DefaultMintTimeout = 30 * time.Second

// tokenCache caches one token and coalesces concurrent refreshes: a burst of
// requests after expiry mints once (singleflight) instead of stampeding the
// identity provider.
type tokenCache struct {
	mint    func(ctx context.Context) (Token, error)
	now     func() time.Time
	margin  time.Duration
	timeout time.Duration

	mu        sync.Mutex
	tok       Token
	refreshAt time.Time
	flight    *tokenFlight
}

type tokenFlight struct {
	done chan struct{}
	tok  Token
	err  error
}

func newTokenCache(mint func(context.Context) (Token, error), now func() time.Time, timeout time.Duration) *tokenCache {
	if now == nil {
		now = time.Now
	}
	if timeout <= 0 {
		timeout = DefaultMintTimeout
	}
	return &tokenCache{mint: mint, now: now, margin: DefaultRefreshMargin, timeout: timeout}
}

func (c *tokenCache) token(ctx context.Context) (Token, error) {
	c.mu.Lock()
	now := c.now()
	if c.tok.AccessToken != "" && now.Before(c.refreshAt) {
		t := c.tok
		c.mu.Unlock()
		return t, nil
	}
	f := c.flight
	if f == nil {
		f = &tokenFlight{done: make(chan struct{})}
		c.flight = f
		// The mint outlives the caller that started it (WithoutCancel): other
		// callers wait on it, and one impatient caller must not fail them all.
		go c.run(context.WithoutCancel(ctx), f)
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		if f.err != nil {
			return Token{}, f.err
		}
		return f.tok, nil
	case <-ctx.Done():
		return Token{}, fmt.Errorf("upstreamauth: waiting for token: %w", ctx.Err())
	}
}

func (c *tokenCache) run(ctx context.Context, f *tokenFlight) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	tok, err := c.mint(ctx)
	c.mu.Lock()
	now := c.now()
	if err == nil {
		c.tok = tok
		// A short-lived token refreshes at half its life rather than never
		// being considered fresh.
		margin := c.margin
		if life := tok.Expiry.Sub(now); life < 2*margin {
			margin = life / 2
		}
		c.refreshAt = tok.Expiry.Add(-margin)
	} else if c.tok.AccessToken != "" && now.Before(c.tok.Expiry) {
		// The identity provider is down but the old token still works:
		// keep serving it rather than failing traffic.
		tok, err = c.tok, nil
	}
	c.flight = nil
	c.mu.Unlock()
	f.tok, f.err = tok, err
	close(f.done)
}

// tokenResponse is the RFC 6749 token response; Azure v1 endpoints send
// expires_in as a string, so it is decoded leniently.
type tokenResponse struct {
	AccessToken string          `json:"access_token"`
	TokenType   string          `json:"token_type"`
	ExpiresIn   json.RawMessage `json:"expires_in"`
	Error       string          `json:"error"`
	ErrorDesc   string          `json:"error_description"`
}

// maxTokenResponse caps what we read from a token endpoint.
const maxTokenResponse = 1 << 20

// exchange posts a form to a token endpoint. what names the scheme in
// errors; the form carries secrets and never appears in an error.
func exchange(ctx context.Context, client *http.Client, what, endpoint string, form url.Values, now time.Time) (Token, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return Token{}, fmt.Errorf("upstreamauth: %s: build token request: %w", what, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		// url.Error repeats the endpoint URL, which holds no secret.
		return Token{}, fmt.Errorf("upstreamauth: %s: token request: %w", what, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse))
	if err != nil {
		return Token{}, fmt.Errorf("upstreamauth: %s: read token response: %w", what, err)
	}
	var tr tokenResponse
	jerr := json.Unmarshal(body, &tr)
	if resp.StatusCode != http.StatusOK {
		if jerr == nil && tr.Error != "" {
			return Token{}, fmt.Errorf("upstreamauth: %s: token endpoint %s: HTTP %d: %s: %s",
				what, redactURL(req.URL), resp.StatusCode, tr.Error, truncate(tr.ErrorDesc, 300))
		}
		return Token{}, fmt.Errorf("upstreamauth: %s: token endpoint %s: HTTP %d", what, redactURL(req.URL), resp.StatusCode)
	}
	if jerr != nil {
		return Token{}, fmt.Errorf("upstreamauth: %s: decode token response: %w", what, jerr)
	}
	if tr.AccessToken == "" {
		return Token{}, fmt.Errorf("upstreamauth: %s: token response has no access_token", what)
	}
	secs, err := parseExpiresIn(tr.ExpiresIn)
	if err != nil {
		return Token{}, fmt.Errorf("upstreamauth: %s: %w", what, err)
	}
	typ := tr.TokenType
	if typ == "" || strings.EqualFold(typ, "bearer") {
		typ = "Bearer"
	}
	return Token{AccessToken: tr.AccessToken, TokenType: typ, Expiry: now.Add(time.Duration(secs) * time.Second)}, nil
}

func parseExpiresIn(raw json.RawMessage) (int64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		// RFC 6749 makes expires_in optional; assume the common hour.
		return 3600, nil
	}
	s := strings.Trim(string(raw), `"`)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("invalid expires_in %q", truncate(string(raw), 40))
	}
	return n, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// bearerSource is the shared Apply of token-based schemes.
func applyBearer(ctx context.Context, c *tokenCache, req *http.Request) error {
	t, err := c.token(ctx)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", t.TokenType+" "+t.AccessToken)
	return nil
}
