package providers

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/secret"
)

// Network defaults and bounds.
const (
	DefaultRequestTimeoutSeconds = 60
	DefaultConnectTimeoutSeconds = 10
	DefaultRetryBackoffInitialMS = 500
	DefaultRetryBackoffMaxMS     = 5000
	MaxRetries                   = 10
	DefaultConcurrency           = 1000
	DefaultBufferSize            = 5000
)

// Provider is a configured upstream provider.
type Provider struct {
	// Name is the provider id from the catalog.
	Name                     string                   `json:"name"`
	NetworkConfig            NetworkConfig            `json:"network_config"`
	ConcurrencyAndBufferSize ConcurrencyAndBufferSize `json:"concurrency_and_buffer_size"`
	ProxyConfig              ProxyConfig              `json:"proxy_config"`
	// Keys is filled in responses and snapshots only; keys are stored and
	// managed separately, and ignored in provider request bodies.
	Keys       []Key     `json:"keys,omitempty"`
	ConfigHash string    `json:"config_hash"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// NetworkConfig tunes the host's upstream HTTP calls for one provider.
type NetworkConfig struct {
	// BaseURL overrides the catalog's default base URL.
	BaseURL string `json:"base_url,omitempty"`
	// ExtraHeaders are sent with every upstream request. Values of headers
	// whose names look like credentials are masked in responses.
	ExtraHeaders                   map[string]string `json:"extra_headers,omitempty"`
	DefaultRequestTimeoutInSeconds int               `json:"default_request_timeout_in_seconds"`
	MaxRetries                     int               `json:"max_retries"`
	RetryBackoffInitialMS          int               `json:"retry_backoff_initial_ms"`
	RetryBackoffMaxMS              int               `json:"retry_backoff_max_ms"`
	ConnectTimeoutInSeconds        int               `json:"connect_timeout_in_seconds"`
	// HTTPClient picks the upstream client: "auto" (the default) sends
	// requests with header credentials through fasthttp's HTTP/1.1 client
	// and the rest through net/http; "net_http" sends everything through
	// net/http (HTTP/2, and upstreams that end a stream by closing).
	HTTPClient string `json:"http_client,omitempty"`
}

// Upstream HTTP clients (NetworkConfig.HTTPClient).
const (
	HTTPClientAuto    = "auto"
	HTTPClientNetHTTP = "net_http"
)

// ConcurrencyAndBufferSize bounds in-flight upstream requests and the queue
// in front of them.
type ConcurrencyAndBufferSize struct {
	Concurrency int `json:"concurrency"`
	BufferSize  int `json:"buffer_size"`
}

// Proxy types.
const (
	ProxyNone        = "none"
	ProxyHTTP        = "http"
	ProxySOCKS5      = "socks5"
	ProxyEnvironment = "environment"
)

// ProxyConfig routes upstream calls through a proxy.
type ProxyConfig struct {
	// Type is none, http, socks5 or environment (HTTP(S)_PROXY variables).
	Type     string       `json:"type"`
	URL      string       `json:"url,omitempty"`
	Username string       `json:"username,omitempty"`
	Password secret.Value `json:"password,omitzero"`
}

// applyDefaults fills zero values with defaults; zero never makes sense
// for these settings, so it reads as "not given".
func (p *Provider) applyDefaults() {
	n := &p.NetworkConfig
	if n.DefaultRequestTimeoutInSeconds == 0 {
		n.DefaultRequestTimeoutInSeconds = DefaultRequestTimeoutSeconds
	}
	if n.ConnectTimeoutInSeconds == 0 {
		n.ConnectTimeoutInSeconds = DefaultConnectTimeoutSeconds
	}
	if n.RetryBackoffInitialMS == 0 {
		n.RetryBackoffInitialMS = DefaultRetryBackoffInitialMS
	}
	if n.RetryBackoffMaxMS == 0 {
		n.RetryBackoffMaxMS = max(DefaultRetryBackoffMaxMS, n.RetryBackoffInitialMS)
	}
	c := &p.ConcurrencyAndBufferSize
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.BufferSize == 0 {
		c.BufferSize = max(DefaultBufferSize, c.Concurrency)
	}
	if p.ProxyConfig.Type == "" {
		p.ProxyConfig.Type = ProxyNone
	}
	if n.HTTPClient == "" {
		n.HTTPClient = HTTPClientAuto
	}
}

// validateProvider applies defaults and checks p; errors name the field.
func validateProvider(p *Provider) *apierr.Error {
	if _, ok := Lookup(p.Name); !ok {
		return apierr.BadRequest("unknown_provider", "name",
			fmt.Sprintf("unknown provider %q: name must be one of %s", p.Name, catalogIDs()))
	}
	p.applyDefaults()
	n := p.NetworkConfig
	if n.BaseURL != "" {
		if e := checkHTTPURL("network_config.base_url", n.BaseURL); e != nil {
			return e
		}
	}
	for h := range n.ExtraHeaders {
		if !validHeaderName(h) {
			return apierr.BadRequest("invalid_value", "network_config.extra_headers", fmt.Sprintf("invalid header name %q", h))
		}
	}
	ranges := []struct {
		field    string
		v, lo, h int
	}{
		{"network_config.default_request_timeout_in_seconds", n.DefaultRequestTimeoutInSeconds, 1, 3600},
		{"network_config.max_retries", n.MaxRetries, 0, MaxRetries},
		{"network_config.retry_backoff_initial_ms", n.RetryBackoffInitialMS, 1, 60_000},
		{"network_config.retry_backoff_max_ms", n.RetryBackoffMaxMS, 1, 600_000},
		{"network_config.connect_timeout_in_seconds", n.ConnectTimeoutInSeconds, 1, 300},
		{"concurrency_and_buffer_size.concurrency", p.ConcurrencyAndBufferSize.Concurrency, 1, 100_000},
		{"concurrency_and_buffer_size.buffer_size", p.ConcurrencyAndBufferSize.BufferSize, 1, 1_000_000},
	}
	for _, r := range ranges {
		if r.v < r.lo || r.v > r.h {
			return apierr.BadRequest("invalid_value", r.field, fmt.Sprintf("%s must be between %d and %d (got %d)", r.field, r.lo, r.h, r.v))
		}
	}
	if n.HTTPClient != HTTPClientAuto && n.HTTPClient != HTTPClientNetHTTP {
		return apierr.BadRequest("invalid_value", "network_config.http_client",
			fmt.Sprintf("network_config.http_client must be %q or %q (got %q)", HTTPClientAuto, HTTPClientNetHTTP, n.HTTPClient))
	}
	if n.RetryBackoffMaxMS < n.RetryBackoffInitialMS {
		return apierr.BadRequest("invalid_value", "network_config.retry_backoff_max_ms", "retry_backoff_max_ms must be >= retry_backoff_initial_ms")
	}
	if p.ConcurrencyAndBufferSize.BufferSize < p.ConcurrencyAndBufferSize.Concurrency {
		return apierr.BadRequest("invalid_value", "concurrency_and_buffer_size.buffer_size", "buffer_size must be >= concurrency")
	}
	return validateProxy(&p.ProxyConfig)
}

func validateProxy(pc *ProxyConfig) *apierr.Error {
	switch pc.Type {
	case ProxyNone, ProxyEnvironment:
		if pc.URL != "" || pc.Username != "" || !pc.Password.IsZero() {
			return apierr.BadRequest("invalid_value", "proxy_config.url", fmt.Sprintf("proxy type %s takes no url or credentials", pc.Type))
		}
	case ProxyHTTP, ProxySOCKS5:
		u, err := url.Parse(pc.URL)
		schemes := map[string][]string{ProxyHTTP: {"http", "https"}, ProxySOCKS5: {"socks5", "socks5h"}}[pc.Type]
		if pc.URL == "" || err != nil || u.Host == "" || (u.Scheme != schemes[0] && u.Scheme != schemes[1]) {
			return apierr.BadRequest("invalid_value", "proxy_config.url",
				fmt.Sprintf("proxy type %s needs url %s://host:port", pc.Type, schemes[0]))
		}
		if u.User != nil {
			return apierr.BadRequest("invalid_value", "proxy_config.url", "put proxy credentials in username and password, not in the url")
		}
		if !pc.Password.IsZero() && pc.Username == "" {
			return apierr.BadRequest("invalid_value", "proxy_config.username", "username is required with a password")
		}
	default:
		return apierr.BadRequest("invalid_value", "proxy_config.type", "proxy_config.type must be none, http, socks5 or environment")
	}
	return nil
}

func validHeaderName(h string) bool {
	if h == "" {
		return false
	}
	for _, r := range h {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune(`()<>@,;:\"/[]?={}`, r) {
			return false
		}
	}
	return true
}

// sensitiveHeader reports whether a header name looks like it carries a
// credential; such values are masked like secrets.
func sensitiveHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"authorization", "api-key", "api_key", "apikey", "token", "secret", "password", "cookie"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// Redacted returns a copy safe to show: credential headers, the proxy
// password and every key's secrets are masked.
func (p Provider) Redacted() Provider {
	if len(p.NetworkConfig.ExtraHeaders) > 0 {
		h := make(map[string]string, len(p.NetworkConfig.ExtraHeaders))
		for k, v := range p.NetworkConfig.ExtraHeaders {
			if sensitiveHeader(k) {
				v = secret.Mask(v)
			}
			h[k] = v
		}
		p.NetworkConfig.ExtraHeaders = h
	}
	p.ProxyConfig.Password = p.ProxyConfig.Password.Redacted()
	keys := make([]Key, len(p.Keys))
	for i, k := range p.Keys {
		keys[i] = k.Redacted()
	}
	p.Keys = keys
	return p
}

// keepMaskedProviderSecrets restores stored secrets the client echoed back
// masked (credential headers, proxy password).
func keepMaskedProviderSecrets(p *Provider, old Provider) {
	for k, v := range p.NetworkConfig.ExtraHeaders {
		if prev, ok := old.NetworkConfig.ExtraHeaders[k]; ok && sensitiveHeader(k) && prev != "" && v == secret.Mask(prev) {
			p.NetworkConfig.ExtraHeaders[k] = prev
		}
	}
	// A proxy switched off must not get its old password back.
	if t := p.ProxyConfig.Type; t == ProxyHTTP || t == ProxySOCKS5 {
		p.ProxyConfig.Password = secret.KeepIfMasked(p.ProxyConfig.Password, old.ProxyConfig.Password)
	}
}

// BaseURL is the URL upstream calls go to: the network config's override
// or the catalog default.
func (p Provider) BaseURL() string {
	if p.NetworkConfig.BaseURL != "" {
		return p.NetworkConfig.BaseURL
	}
	info, _ := Lookup(p.Name)
	return info.DefaultBaseURL
}
