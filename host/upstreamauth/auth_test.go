package upstreamauth

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

func TestHeaderSchemes(t *testing.T) {
	ctx := context.Background()
	mk := func() *http.Request {
		r, _ := http.NewRequest("POST", "https://api.example.com/v1/x?a=1", nil)
		return r
	}
	b, _ := Bearer("sk-1")
	r := mk()
	b.Apply(ctx, r)
	if r.Header.Get("Authorization") != "Bearer sk-1" {
		t.Error("bearer")
	}
	an, _ := Anthropic("sk-ant", "")
	r = mk()
	an.Apply(ctx, r)
	if r.Header.Get("x-api-key") != "sk-ant" || r.Header.Get("anthropic-version") != DefaultAnthropicVersion {
		t.Errorf("anthropic headers %v", r.Header)
	}
	r = mk()
	r.Header.Set("anthropic-version", "2024-01-01")
	an.Apply(ctx, r)
	if r.Header.Get("anthropic-version") != "2024-01-01" {
		t.Error("caller's anthropic-version overwritten")
	}
	az, _ := AzureAPIKey("az-key")
	r = mk()
	az.Apply(ctx, r)
	if r.Header.Get("api-key") != "az-key" {
		t.Error("azure api-key")
	}
	gk, _ := GeminiAPIKey("g-key")
	r = mk()
	gk.Apply(ctx, r)
	if r.Header.Get("x-goog-api-key") != "g-key" {
		t.Error("x-goog-api-key")
	}
	qk, _ := QueryKey("key", "g k")
	r = mk()
	qk.Apply(ctx, r)
	if r.URL.Query().Get("key") != "g k" || r.URL.Query().Get("a") != "1" {
		t.Errorf("query key: %s", r.URL.RawQuery)
	}
	r = mk()
	Chain(b, az).Apply(ctx, r)
	if r.Header.Get("api-key") == "" || r.Header.Get("Authorization") == "" {
		t.Error("chain")
	}
	for name, f := range map[string]func() (Authenticator, error){
		"bearer":    func() (Authenticator, error) { return Bearer("") },
		"anthropic": func() (Authenticator, error) { return Anthropic("", "") },
		"header":    func() (Authenticator, error) { return APIKeyHeader("x", "") },
		"query":     func() (Authenticator, error) { return QueryKey("key", "") },
	} {
		if _, err := f(); !errors.Is(err, ErrNoCredentials) {
			t.Errorf("%s: empty key accepted", name)
		}
	}
}

func TestRedactURL(t *testing.T) {
	r, _ := http.NewRequest("GET", "https://user:pw@h/p?key=secret", nil)
	if got := redactURL(r.URL); got != "https://h/p" {
		t.Errorf("redactURL = %q", got)
	}
}
