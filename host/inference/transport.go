package inference

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/wasmgate/gateway/host/netguard"
	"github.com/wasmgate/gateway/host/providers"
)

// transportCache keeps one pooled transport per provider network setup, so
// connections are reused across requests and a proxy or timeout change
// takes effect with a fresh pool.
type transportCache struct {
	mu sync.Mutex
	m  map[string]*transportEntry
}

// transportEntry is a provider's pool and the settings it was built from.
type transportEntry struct {
	updated time.Time
	proxyPW string
	tr      *http.Transport
	// fast serves non-streamed passthrough requests; nil behind a proxy.
	fast *fasthttp.Client
}

func (t *transportCache) get(p *providers.Provider, proxyPassword string) (*http.Transport, error) {
	e, err := t.entry(p, proxyPassword)
	if err != nil {
		return nil, err
	}
	return e.tr, nil
}

func (t *transportCache) entry(p *providers.Provider, proxyPassword string) (*transportEntry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.m[p.Name]; ok && e.updated.Equal(p.UpdatedAt) && e.proxyPW == proxyPassword {
		return e, nil
	}
	pc := p.ProxyConfig
	connect := time.Duration(p.NetworkConfig.ConnectTimeoutInSeconds) * time.Second
	if connect <= 0 {
		connect = 10 * time.Second
	}
	// Provider URLs may be loopback or private (self-hosted servers), never
	// link-local: see netguard.Metadata.
	dialer := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second, Control: netguard.MetadataControl}
	tr := &http.Transport{
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   connect,
		ExpectContinueTimeout: time.Second,
		// Responses are streamed to the client as they arrive; the body is
		// never decompressed behind the adapter's back.
		DisableCompression: true,
	}
	switch pc.Type {
	case providers.ProxyHTTP, providers.ProxySOCKS5:
		u, err := url.Parse(pc.URL)
		if err != nil {
			return nil, fmt.Errorf("proxy_config.url: %w", err)
		}
		if pc.Username != "" {
			u.User = url.UserPassword(pc.Username, proxyPassword)
		}
		tr.Proxy = http.ProxyURL(u)
	case providers.ProxyEnvironment:
		tr.Proxy = http.ProxyFromEnvironment
	}
	if t.m == nil {
		t.m = map[string]*transportEntry{}
	}
	// The previous pool of a changed provider stays usable by requests in
	// flight; its idle connections are closed.
	if old, ok := t.m[p.Name]; ok {
		old.closeIdle()
	}
	e := &transportEntry{updated: p.UpdatedAt, proxyPW: proxyPassword, tr: tr}
	if (pc.Type == "" || pc.Type == providers.ProxyNone) && p.NetworkConfig.HTTPClient != providers.HTTPClientNetHTTP {
		e.fast = newFastClient(p)
	}
	t.m[p.Name] = e
	return e, nil
}

func (t *transportCache) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.m {
		e.closeIdle()
	}
}

// closeIdle closes the idle connections of both of the entry's clients.
// The fast client's matter as much as net/http's: it keeps its own
// keep-alive pool (up to MaxIdleConnDuration, 90 s), which closing only
// the net/http transport left open to the upstream after a provider
// change and after the gateway shut down.
func (e *transportEntry) closeIdle() {
	e.tr.CloseIdleConnections()
	if e.fast != nil {
		e.fast.CloseIdleConnections()
	}
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}
