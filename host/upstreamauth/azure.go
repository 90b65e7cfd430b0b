package upstreamauth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wasmgate/gateway/host/netguard"
)

// AzureDefaultAuthority is the Entra ID (public cloud) authority.
const AzureDefaultAuthority = "https://login.microsoftonline.com"

// AzureCognitiveServicesScope is the default scope for Azure OpenAI / AI Foundry.
const AzureCognitiveServicesScope = "https://cognitiveservices.azure.com/.default"

// AzureClientCredentials configures Entra ID client-credentials minting.
type AzureClientCredentials struct {
	TenantID     string
	ClientID     string
	ClientSecret string
	// Scope defaults to AzureCognitiveServicesScope.
	Scope string
	// Authority defaults to AzureDefaultAuthority; sovereign clouds and tests
	// set their own base URL.
	Authority string
	// HTTPClient sends the token request; nil means a client with a 30 s timeout.
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// AzureEntraID mints and caches Entra ID tokens (client-credentials grant)
// and implements Authenticator (Authorization: Bearer).
type AzureEntraID struct {
	endpoint string
	form     url.Values
	client   *http.Client
	now      func() time.Time
	cache    *tokenCache
}

// NewAzureEntraID validates cfg and returns the token source.
func NewAzureEntraID(cfg AzureClientCredentials) (*AzureEntraID, error) {
	if cfg.TenantID == "" || cfg.ClientID == "" || cfg.ClientSecret == "" {
		return nil, ErrNoCredentials
	}
	if strings.ContainsAny(cfg.TenantID, "/?#") {
		return nil, errors.New("upstreamauth: azure: tenant_id must be a bare tenant id or domain")
	}
	authority := cfg.Authority
	if authority == "" {
		authority = AzureDefaultAuthority
	}
	scope := cfg.Scope
	if scope == "" {
		scope = AzureCognitiveServicesScope
	}
	a := &AzureEntraID{
		endpoint: strings.TrimRight(authority, "/") + "/" + url.PathEscape(cfg.TenantID) + "/oauth2/v2.0/token",
		form: url.Values{
			"grant_type":    {"client_credentials"},
			"client_id":     {cfg.ClientID},
			"client_secret": {cfg.ClientSecret},
			"scope":         {scope},
		},
		client: cfg.HTTPClient,
		now:    cfg.Now,
	}
	if a.client == nil {
		a.client = netguard.MetadataGuardedClient(DefaultMintTimeout)
	}
	if a.now == nil {
		a.now = time.Now
	}
	a.cache = newTokenCache(a.mint, a.now, 0)
	return a, nil
}

// Token returns a cached token or mints one.
func (a *AzureEntraID) Token(ctx context.Context) (Token, error) { return a.cache.token(ctx) }

// Apply sets Authorization: Bearer <access token>.
func (a *AzureEntraID) Apply(ctx context.Context, req *http.Request) error {
	return applyBearer(ctx, a.cache, req)
}

func (a *AzureEntraID) mint(ctx context.Context) (Token, error) {
	return exchange(ctx, a.client, "azure entra id", a.endpoint, a.form, a.now())
}
