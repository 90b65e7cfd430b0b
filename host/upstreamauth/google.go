package upstreamauth

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wasmgate/gateway/host/netguard"
)

// CloudPlatformScope is the scope Vertex AI needs.
const CloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"

// googleDefaultTokenURI is used when the key file omits token_uri.
const googleDefaultTokenURI = "https://oauth2.googleapis.com/token"

// jwtBearerGrant is the RFC 7523 grant type Google's token endpoint expects.
const jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// ServiceAccount is the part of a Google service-account key file we use.
type ServiceAccount struct {
	Type         string `json:"type"`
	ProjectID    string `json:"project_id"`
	PrivateKeyID string `json:"private_key_id"`
	PrivateKey   string `json:"private_key"`
	ClientEmail  string `json:"client_email"`
	TokenURI     string `json:"token_uri"`
}

// ParseServiceAccount parses a service-account JSON key file. Errors never
// quote the file: it holds a private key.
func ParseServiceAccount(data []byte) (*ServiceAccount, *rsa.PrivateKey, error) {
	var sa ServiceAccount
	if err := json.Unmarshal(data, &sa); err != nil {
		return nil, nil, errors.New("upstreamauth: google: service account JSON is not valid JSON")
	}
	if sa.Type != "" && sa.Type != "service_account" {
		return nil, nil, fmt.Errorf("upstreamauth: google: credentials type %q, want service_account", sa.Type)
	}
	if sa.ClientEmail == "" {
		return nil, nil, errors.New("upstreamauth: google: service account JSON has no client_email")
	}
	if sa.TokenURI == "" {
		sa.TokenURI = googleDefaultTokenURI
	}
	key, err := parseRSAKey(sa.PrivateKey)
	if err != nil {
		return nil, nil, fmt.Errorf("upstreamauth: google: private_key: %w", err)
	}
	return &sa, key, nil
}

func parseRSAKey(p string) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode([]byte(p))
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	// Google issues PKCS#8; accept PKCS#1 for hand-made keys.
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, errors.New("PKCS#8 key is not RSA")
		}
		return rk, nil
	}
	k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		return nil, errors.New("neither a PKCS#8 nor a PKCS#1 RSA key")
	}
	return k, nil
}

// GoogleConfig configures service-account token minting.
type GoogleConfig struct {
	// CredentialsJSON is the service-account key file content.
	CredentialsJSON []byte
	// Scopes default to CloudPlatformScope.
	Scopes []string
	// TokenURL overrides the key file's token_uri (tests, private endpoints).
	TokenURL string
	// HTTPClient sends the token request; nil means a client with a 30 s timeout.
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// GoogleServiceAccount mints and caches OAuth access tokens with the
// JWT-bearer flow. It is built on crypto/rsa rather than
// golang.org/x/oauth2/google: the flow is one signed JWT and one form POST,
// and the library brings the GCE metadata client and more into the binary.
type GoogleServiceAccount struct {
	email, keyID, tokenURI, scope string
	key                           *rsa.PrivateKey
	client                        *http.Client
	now                           func() time.Time
	cache                         *tokenCache
}

// NewGoogleServiceAccount parses the key and returns a token source that
// also implements Authenticator (Authorization: Bearer).
func NewGoogleServiceAccount(cfg GoogleConfig) (*GoogleServiceAccount, error) {
	sa, key, err := ParseServiceAccount(cfg.CredentialsJSON)
	if err != nil {
		return nil, err
	}
	scopes := cfg.Scopes
	if len(scopes) == 0 {
		scopes = []string{CloudPlatformScope}
	}
	g := &GoogleServiceAccount{
		email: sa.ClientEmail, keyID: sa.PrivateKeyID, tokenURI: sa.TokenURI,
		scope: strings.Join(scopes, " "), key: key, client: cfg.HTTPClient, now: cfg.Now,
	}
	if cfg.TokenURL != "" {
		g.tokenURI = cfg.TokenURL
	}
	if g.client == nil {
		g.client = netguard.MetadataGuardedClient(DefaultMintTimeout)
	}
	if g.now == nil {
		g.now = time.Now
	}
	g.cache = newTokenCache(g.mint, g.now, 0)
	return g, nil
}

// Token returns a cached token or mints one.
func (g *GoogleServiceAccount) Token(ctx context.Context) (Token, error) { return g.cache.token(ctx) }

// Apply sets Authorization: Bearer <access token>.
func (g *GoogleServiceAccount) Apply(ctx context.Context, req *http.Request) error {
	return applyBearer(ctx, g.cache, req)
}

func (g *GoogleServiceAccount) mint(ctx context.Context) (Token, error) {
	now := g.now()
	assertion, err := g.assertion(now)
	if err != nil {
		return Token{}, err
	}
	form := url.Values{"grant_type": {jwtBearerGrant}, "assertion": {assertion}}
	return exchange(ctx, g.client, "google service account", g.tokenURI, form, now)
}

// assertion builds the RS256 JWT: aud is the token endpoint, valid one hour.
func (g *GoogleServiceAccount) assertion(now time.Time) (string, error) {
	header := map[string]string{"alg": "RS256", "typ": "JWT"}
	if g.keyID != "" {
		header["kid"] = g.keyID
	}
	// iat a little in the past tolerates clock skew against Google's servers.
	iat := now.Add(-10 * time.Second).Unix()
	claims := map[string]any{
		"iss": g.email, "scope": g.scope, "aud": g.tokenURI,
		"iat": iat, "exp": iat + 3600,
	}
	hb, _ := json.Marshal(header)
	cb, _ := json.Marshal(claims)
	signing := base64.RawURLEncoding.EncodeToString(hb) + "." + base64.RawURLEncoding.EncodeToString(cb)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, g.key, crypto.SHA256, sum[:])
	if err != nil {
		return "", fmt.Errorf("upstreamauth: google: sign assertion: %w", err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}
