// Package upstreamauth holds the credentials the host applies to an upstream
// request after a provider adapter has built it. Adapters are pure
// transformers and never see secrets, so every scheme a provider family needs
// (static headers, AWS SigV4, Google service-account tokens, Azure Entra ID
// tokens) lives here, behind one small interface.
//
// Dependency choice: everything is implemented on the standard library. The
// AWS SDK signer drags in smithy-go and the SDK core, and golang.org/x/oauth2
// plus its google package pull in cloud metadata clients; the protocols we
// need are small and fully covered by tests that compare against the official
// AWS signer (test-only dependency) and against token endpoints that verify
// what we send.
package upstreamauth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

// Authenticator adds credentials to a request that is otherwise ready to send.
// Apply must be called after the body, URL and headers are final: signing
// schemes cover them.
type Authenticator interface {
	Apply(ctx context.Context, req *http.Request) error
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(ctx context.Context, req *http.Request) error

// Apply calls f.
func (f AuthenticatorFunc) Apply(ctx context.Context, req *http.Request) error { return f(ctx, req) }

// ErrNoCredentials is returned when a scheme is built without the secret it needs.
var ErrNoCredentials = errors.New("upstreamauth: missing credentials")

// headerAuth sets fixed headers. The values are secrets, so the type has no
// exported fields and no String method that could leak them into logs.
type headerAuth struct {
	set [][2]string
	// keep lists headers that are only defaulted: a client-chosen value wins
	// (anthropic-version may legitimately be pinned by the caller).
	keep [][2]string
}

// Apply sets the headers; it cannot fail.
func (h headerAuth) Apply(_ context.Context, req *http.Request) error {
	for _, kv := range h.set {
		req.Header.Set(kv[0], kv[1])
	}
	for _, kv := range h.keep {
		if req.Header.Get(kv[0]) == "" {
			req.Header.Set(kv[0], kv[1])
		}
	}
	return nil
}

// Bearer sends "Authorization: Bearer <token>" (OpenAI and the many
// OpenAI-wire providers, Cohere, Mistral, ...).
func Bearer(token string) (Authenticator, error) {
	if token == "" {
		return nil, ErrNoCredentials
	}
	return headerAuth{set: [][2]string{{"Authorization", "Bearer " + token}}}, nil
}

// APIKeyHeader sends the key in a named header, e.g. "api-key" for Azure
// OpenAI or "x-goog-api-key" for Gemini.
func APIKeyHeader(header, key string) (Authenticator, error) {
	if key == "" || header == "" {
		return nil, ErrNoCredentials
	}
	return headerAuth{set: [][2]string{{header, key}}}, nil
}

// AzureAPIKey is the Azure OpenAI / AI Foundry key mode ("api-key" header).
func AzureAPIKey(key string) (Authenticator, error) { return APIKeyHeader("api-key", key) }

// GeminiAPIKey sends the key in x-goog-api-key, which keeps it out of URLs
// (and so out of access logs), unlike the ?key= form.
func GeminiAPIKey(key string) (Authenticator, error) { return APIKeyHeader("x-goog-api-key", key) }

// DefaultAnthropicVersion is sent when the request does not pin a version.
const DefaultAnthropicVersion = "2023-06-01"

// Anthropic sends x-api-key and defaults anthropic-version, which the API
// requires on every call.
func Anthropic(key, version string) (Authenticator, error) {
	if key == "" {
		return nil, ErrNoCredentials
	}
	if version == "" {
		version = DefaultAnthropicVersion
	}
	return headerAuth{
		set:  [][2]string{{"x-api-key", key}},
		keep: [][2]string{{"anthropic-version", version}},
	}, nil
}

// QueryKey adds the key as a query parameter (Gemini's ?key= form) for
// upstreams or proxies that do not accept the header.
func QueryKey(param, key string) (Authenticator, error) {
	if key == "" || param == "" {
		return nil, ErrNoCredentials
	}
	return AuthenticatorFunc(func(_ context.Context, req *http.Request) error {
		q := req.URL.Query()
		q.Set(param, key)
		req.URL.RawQuery = q.Encode()
		return nil
	}), nil
}

// Chain applies several authenticators in order (e.g. a static header plus a
// signer, which must come last because it covers the headers before it).
func Chain(auths ...Authenticator) Authenticator {
	return AuthenticatorFunc(func(ctx context.Context, req *http.Request) error {
		for _, a := range auths {
			if err := a.Apply(ctx, req); err != nil {
				return err
			}
		}
		return nil
	})
}

// redactURL drops query and user info so an error message never carries a key
// passed as ?key= or in the URL.
func redactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	c.RawQuery = ""
	c.ForceQuery = false
	return c.String()
}
