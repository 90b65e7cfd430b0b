package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/secret"
	"github.com/wasmgate/gateway/store"
)

// OAuth config statuses (spec: OAuth configuration status).
const (
	OAuthPending    = "pending"
	OAuthAuthorized = "authorized"
	OAuthFailed     = "failed"
	OAuthRevoked    = "revoked"
)

// oauthConfig is a client's server-level OAuth configuration. Its row is
// kept when the token is revoked.
type oauthConfig struct {
	ID              string       `json:"id"`
	MCPClientID     string       `json:"mcp_client_id"`
	ClientID        string       `json:"client_id,omitempty"`
	ClientSecret    secret.Value `json:"client_secret"`
	Registered      bool         `json:"registered,omitempty"` // client obtained by RFC 7591 registration
	AuthorizeURL    string       `json:"authorize_url"`
	TokenURL        string       `json:"token_url"`
	RegistrationURL string       `json:"registration_url,omitempty"`
	ServerURL       string       `json:"server_url,omitempty"`
	Resource        string       `json:"resource,omitempty"`
	Scopes          []string     `json:"scopes,omitempty"`
	RedirectURI     string       `json:"redirect_uri"`
	Status          string       `json:"status"`
	StatusReason    string       `json:"status_reason,omitempty"`
	CreatedAt       time.Time    `json:"created_at"`
	UpdatedAt       time.Time    `json:"updated_at"`
	// FlowURL and FlowExpiresAt describe the live authorization flow, if any,
	// so repeated auth-required answers hand out the same URL.
	FlowURL       string    `json:"flow_url,omitempty"`
	FlowExpiresAt time.Time `json:"flow_expires_at"`
	// FlowKey is the store key of the live flow, deleted when a new flow
	// replaces it so only the newest authorize URL can complete.
	FlowKey string `json:"flow_key,omitempty"`
}

// token is the stored grant of an OAuth config (sealed at rest).
type token struct {
	ID             string    `json:"id"`
	AccessToken    string    `json:"access_token"`
	RefreshToken   string    `json:"refresh_token,omitempty"`
	TokenType      string    `json:"token_type,omitempty"`
	Expiry         time.Time `json:"expiry"`
	Scopes         []string  `json:"scopes,omitempty"`
	ObtainedAt     time.Time `json:"obtained_at"`
	RefreshedAt    time.Time `json:"refreshed_at"`
	RefreshTrigger string    `json:"refresh_trigger,omitempty"` // "background" or "inline"
}

// flow is one authorization attempt: the PKCE verifier and where it came
// from, found by the SHA-256 of its state, deleted when used.
type flow struct {
	ConfigID  string    `json:"config_id"`
	Verifier  string    `json:"verifier"`
	ExpiresAt time.Time `json:"expires_at"`
}

// OAuthView is the oauth_config of a client as the API shows it.
type OAuthView struct {
	ID              string       `json:"id"`
	Status          string       `json:"status"`
	StatusReason    string       `json:"status_reason,omitempty"`
	ClientID        string       `json:"client_id,omitempty"`
	ClientSecret    secret.Value `json:"client_secret"`
	Registered      bool         `json:"registered"`
	AuthorizeURL    string       `json:"authorize_url"`
	TokenURL        string       `json:"token_url"`
	RegistrationURL string       `json:"registration_url,omitempty"`
	ServerURL       string       `json:"server_url,omitempty"`
	Resource        string       `json:"resource,omitempty"`
	Scopes          []string     `json:"scopes"`
	RedirectURI     string       `json:"redirect_uri"`
	// PendingAuthorizeURL is the live authorization flow's URL while the
	// config is not authorized.
	PendingAuthorizeURL string `json:"pending_authorize_url,omitempty"`
}

func (o *oauthConfig) view() *OAuthView {
	v := &OAuthView{ID: o.ID, Status: o.Status, StatusReason: o.StatusReason, ClientID: o.ClientID,
		ClientSecret: o.ClientSecret.Redacted(), Registered: o.Registered, AuthorizeURL: o.AuthorizeURL,
		TokenURL: o.TokenURL, RegistrationURL: o.RegistrationURL, ServerURL: o.ServerURL, Resource: o.Resource,
		Scopes: o.Scopes, RedirectURI: o.RedirectURI}
	if v.Scopes == nil {
		v.Scopes = []string{}
	}
	if o.Status != OAuthAuthorized && o.FlowURL != "" {
		v.PendingAuthorizeURL = o.FlowURL
	}
	return v
}

// ConfigStatus is the spec's OAuthConfigStatus, plus the reason of a
// failed status and the token's last refresh.
type ConfigStatus struct {
	ID                  string     `json:"id"`
	Status              string     `json:"status"`
	StatusReason        string     `json:"status_reason,omitempty"`
	MCPClientID         string     `json:"mcp_client_id"`
	CreatedAt           time.Time  `json:"created_at"`
	ExpiresAt           *time.Time `json:"expires_at,omitempty"`
	TokenID             string     `json:"token_id,omitempty"`
	TokenExpiresAt      *time.Time `json:"token_expires_at,omitempty"`
	TokenScopes         []string   `json:"token_scopes"`
	TokenRefreshedAt    *time.Time `json:"token_refreshed_at,omitempty"`
	TokenRefreshTrigger string     `json:"token_refresh_trigger,omitempty"`
}

func statusOf(o *oauthConfig, t *token) ConfigStatus {
	st := ConfigStatus{ID: o.ID, Status: o.Status, StatusReason: o.StatusReason, MCPClientID: o.MCPClientID,
		CreatedAt: o.CreatedAt, TokenScopes: []string{}}
	if !o.FlowExpiresAt.IsZero() {
		e := o.FlowExpiresAt
		st.ExpiresAt = &e
	}
	if t != nil {
		st.TokenID = t.ID
		if !t.Expiry.IsZero() {
			e := t.Expiry
			st.TokenExpiresAt = &e
		}
		if t.Scopes != nil {
			st.TokenScopes = t.Scopes
		}
		if !t.RefreshedAt.IsZero() {
			r := t.RefreshedAt
			st.TokenRefreshedAt = &r
			st.TokenRefreshTrigger = t.RefreshTrigger
		}
	}
	return st
}

func stateKey(state string) string {
	sum := sha256.Sum256([]byte(state))
	return hex.EncodeToString(sum[:])
}

// redirectURI is the callback URL registered upstream: from
// mcp_external_client_url, else the request's scheme and Host. HTTPS is
// required except for loopback hosts (spec: Authentication rule 6).
func (s *Service) redirectURI(scheme, host string) (string, *apierr.Error) {
	base := strings.TrimRight(s.o.ExternalURL, "/")
	if base == "" {
		if host == "" {
			return "", apierr.BadRequest("missing_host", "mcp_external_client_url", "the OAuth redirect URI needs mcp_external_client_url or a request Host header")
		}
		base = scheme + "://" + host
	}
	u, err := url.Parse(base + "/api/oauth/callback")
	if err != nil || u.Host == "" {
		return "", apierr.BadRequest("invalid_redirect_uri", "mcp_external_client_url", "cannot build the OAuth redirect URI from "+base)
	}
	if u.Scheme != "https" && !isLoopbackHost(u.Hostname()) {
		return "", apierr.BadRequest("insecure_redirect_uri", "mcp_external_client_url",
			"OAuth redirect URIs must use https (set mcp_external_client_url to the gateway's public https URL); plain http is accepted for loopback hosts only")
	}
	return u.String(), nil
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err == nil && ip.IsLoopback()
}

// newOAuthConfig discovers, registers when needed and stores nothing: it
// returns the config a new client will carry. Failures are 4xx/502
// envelopes naming the oauth_config field at fault.
func (s *Service) newOAuthConfig(ctx context.Context, c *Client, in *OAuthInput, redirect func() (string, *apierr.Error)) (*oauthConfig, *apierr.Error) {
	o := &oauthConfig{ID: newID(), MCPClientID: c.ID, Resource: strings.TrimSpace(in.Resource),
		AuthorizeURL: strings.TrimSpace(in.AuthorizeURL), TokenURL: strings.TrimSpace(in.TokenURL),
		RegistrationURL: strings.TrimSpace(in.RegistrationURL), ServerURL: strings.TrimSpace(in.ServerURL), Scopes: in.Scopes}
	if in.ClientID != nil {
		o.ClientID = strings.TrimSpace(*in.ClientID)
	}
	if in.ClientSecret != nil {
		o.ClientSecret = *in.ClientSecret
	}
	if o.ClientID == "" && !o.ClientSecret.IsZero() {
		return nil, apierr.BadRequest("invalid_field", "oauth_config.client_secret", "client_secret needs client_id")
	}
	for field, v := range map[string]string{"authorize_url": o.AuthorizeURL, "token_url": o.TokenURL,
		"registration_url": o.RegistrationURL, "server_url": o.ServerURL, "resource": o.Resource} {
		if v == "" {
			continue
		}
		if err := checkURL(v); err != nil {
			return nil, apierr.BadRequest("invalid_field", "oauth_config."+field, err.Error())
		}
	}
	if (o.AuthorizeURL == "") != (o.TokenURL == "") {
		return nil, apierr.BadRequest("invalid_field", "oauth_config.token_url", "authorize_url and token_url are given together or both discovered")
	}
	var e *apierr.Error
	if o.RedirectURI, e = redirect(); e != nil {
		return nil, e
	}
	if o.AuthorizeURL == "" {
		if e := s.discover(ctx, o, c.ConnectionString); e != nil {
			return nil, e
		}
	}
	if o.ClientID == "" {
		if o.RegistrationURL == "" {
			return nil, apierr.BadRequest("invalid_field", "oauth_config.client_id",
				"no client_id given and the authorization server offers no registration endpoint (registration_url)")
		}
		if e := s.register(ctx, o, c.Name); e != nil {
			return nil, e
		}
	}
	return o, nil
}

// discover finds the authorization and token endpoints in the spec's
// order: RFC 8414 metadata at server_url, OpenID configuration at
// server_url, then the MCP server's own metadata (the protected-resource
// metadata its 401 names, RFC 9728) pointing at an authorization server.
func (s *Service) discover(ctx context.Context, o *oauthConfig, connStr string) *apierr.Error {
	base := o.ServerURL
	if base == "" {
		u, _ := url.Parse(connStr)
		base = u.Scheme + "://" + u.Host
	}
	base = strings.TrimRight(base, "/")
	var tried []string
	for _, p := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		meta, err := s.fetchASMeta(ctx, base+p)
		if err == nil {
			return o.apply(meta)
		}
		tried = append(tried, fmt.Sprintf("%s: %v", base+p, err))
	}
	issuers, scopes, err := s.resourceMetadata(ctx, connStr)
	if err != nil {
		tried = append(tried, fmt.Sprintf("%s: %v", connStr, err))
	}
	for _, iss := range issuers {
		for _, mu := range asMetadataURLs(iss) {
			meta, err := s.fetchASMeta(ctx, mu)
			if err != nil {
				tried = append(tried, fmt.Sprintf("%s: %v", mu, err))
				continue
			}
			if len(o.Scopes) == 0 {
				o.Scopes = scopes
			}
			return o.apply(meta)
		}
	}
	return apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "oauth_discovery_failed",
		"could not discover the OAuth endpoints; give oauth_config.authorize_url and token_url, or server_url (tried "+strings.Join(tried, "; ")+")").
		WithParam("oauth_config.server_url")
}

// apply copies discovered endpoints the caller did not give.
func (o *oauthConfig) apply(m *oauthex.AuthServerMeta) *apierr.Error {
	if m.AuthorizationEndpoint == "" || m.TokenEndpoint == "" {
		return apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "oauth_discovery_failed",
			"authorization server metadata lacks authorization_endpoint or token_endpoint").WithParam("oauth_config.server_url")
	}
	for _, u := range []string{m.AuthorizationEndpoint, m.TokenEndpoint, m.RegistrationEndpoint} {
		if u != "" && checkURL(u) != nil {
			return apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "oauth_discovery_failed",
				"authorization server metadata has an invalid endpoint URL "+u).WithParam("oauth_config.server_url")
		}
	}
	o.AuthorizeURL, o.TokenURL = m.AuthorizationEndpoint, m.TokenEndpoint
	if o.RegistrationURL == "" {
		o.RegistrationURL = m.RegistrationEndpoint
	}
	return nil
}

// asMetadataURLs lists the metadata locations of an issuer: RFC 8414 puts
// the well-known segment between host and path, OpenID appends it.
func asMetadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil
	}
	origin := u.Scheme + "://" + u.Host
	path := strings.TrimRight(u.Path, "/")
	return []string{
		origin + "/.well-known/oauth-authorization-server" + path,
		origin + "/.well-known/openid-configuration" + path,
		origin + path + "/.well-known/openid-configuration",
	}
}

func (s *Service) fetchASMeta(ctx context.Context, u string) (*oauthex.AuthServerMeta, error) {
	var m oauthex.AuthServerMeta
	if err := s.getJSON(ctx, u, &m); err != nil {
		return nil, err
	}
	if m.AuthorizationEndpoint == "" {
		return nil, errors.New("not authorization server metadata")
	}
	return &m, nil
}

// resourceMetadata asks the MCP server itself: an unauthenticated request
// answered 401 names its protected-resource metadata in WWW-Authenticate
// (resource_metadata); without it the RFC 9728 well-known location is tried.
func (s *Service) resourceMetadata(ctx context.Context, connStr string) (issuers, scopes []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.ConnectTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, connStr,
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"wasmgate","version":"1"}}}`))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	resp.Body.Close()
	var metaURLs []string
	if resp.StatusCode == http.StatusUnauthorized {
		if chs, perr := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate")); perr == nil {
			for _, ch := range chs {
				if m := ch.Params["resource_metadata"]; m != "" {
					metaURLs = append(metaURLs, m)
				}
			}
		}
	}
	u, _ := url.Parse(connStr)
	metaURLs = append(metaURLs, u.Scheme+"://"+u.Host+"/.well-known/oauth-protected-resource"+strings.TrimRight(u.Path, "/"),
		u.Scheme+"://"+u.Host+"/.well-known/oauth-protected-resource")
	var errs []error
	for _, mu := range metaURLs {
		if checkURL(mu) != nil {
			continue
		}
		var prm oauthex.ProtectedResourceMetadata
		if err := s.getJSON(ctx, mu, &prm); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", mu, err))
			continue
		}
		if len(prm.AuthorizationServers) > 0 {
			return prm.AuthorizationServers, prm.ScopesSupported, nil
		}
	}
	if len(errs) == 0 {
		errs = append(errs, fmt.Errorf("the MCP server answered %d without protected-resource metadata", resp.StatusCode))
	}
	return nil, nil, errors.Join(errs...)
}

// register performs RFC 7591 dynamic client registration. The gateway
// registers a public client (token_endpoint_auth_method none, PKCE) whose
// redirect_uri is locked to the current public URL.
func (s *Service) register(ctx context.Context, o *oauthConfig, name string) *apierr.Error {
	ctx, cancel := context.WithTimeout(ctx, s.o.ConnectTimeout)
	defer cancel()
	resp, err := oauthex.RegisterClient(ctx, o.RegistrationURL, &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{o.RedirectURI}, TokenEndpointAuthMethod: "none",
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		ClientName: "wasmgate MCP client " + name, Scope: strings.Join(o.Scopes, " "), ApplicationType: "web",
	}, s.http)
	if err != nil {
		return apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "oauth_registration_failed",
			"dynamic client registration failed: "+err.Error()).WithParam("oauth_config.registration_url")
	}
	o.ClientID, o.Registered = resp.ClientID, true
	if resp.ClientSecret != "" {
		o.ClientSecret = secret.MustPlain(resp.ClientSecret)
	}
	return nil
}

// oauth2Config is the x/oauth2 view of o. Public clients send client_id in
// the body; confidential ones authenticate with HTTP Basic.
func (s *Service) oauth2Config(ctx context.Context, o *oauthConfig) (*oauth2.Config, error) {
	sec := ""
	if !o.ClientSecret.IsZero() {
		v, err := s.secrets.Resolve(ctx, o.ClientSecret)
		if err != nil {
			return nil, fmt.Errorf("oauth client_secret: %w", err)
		}
		sec = v
	}
	style := oauth2.AuthStyleInHeader
	if sec == "" {
		style = oauth2.AuthStyleInParams
	}
	return &oauth2.Config{ClientID: o.ClientID, ClientSecret: sec, RedirectURL: o.RedirectURI, Scopes: o.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: o.AuthorizeURL, TokenURL: o.TokenURL, AuthStyle: style}}, nil
}

// startFlow creates a new authorization flow for o (in tx) and returns its
// authorize URL. PKCE S256 is always used: it is required for public
// clients and harmless for confidential ones. `resource` is added only
// when configured.
func (s *Service) startFlow(ctx context.Context, tx store.Tx, o *oauthConfig) (string, error) {
	cfg, err := s.oauth2Config(ctx, o)
	if err != nil {
		return "", err
	}
	state, verifier := oauth2.GenerateVerifier(), oauth2.GenerateVerifier()
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	if o.Resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", o.Resource))
	}
	link := cfg.AuthCodeURL(state, opts...)
	exp := s.now().UTC().Add(s.o.FlowTTL)
	if o.FlowKey != "" {
		if err := tx.Delete(nsFlows, o.FlowKey); err != nil {
			return "", err
		}
	}
	key := stateKey(state)
	if err := store.PutJSON(tx, nsFlows, key, flow{ConfigID: o.ID, Verifier: verifier, ExpiresAt: exp}); err != nil {
		return "", err
	}
	o.FlowURL, o.FlowExpiresAt, o.FlowKey = link, exp, key
	return link, nil
}

// tokenError is an OAuth error answer from the token endpoint.
type tokenError struct {
	Code, Description string
	Status            int
}

func (e *tokenError) Error() string {
	if e.Description != "" {
		return fmt.Sprintf("token endpoint answered %d %s: %s", e.Status, e.Code, e.Description)
	}
	return fmt.Sprintf("token endpoint answered %d %s", e.Status, e.Code)
}

// permanent reports whether retrying cannot help: the grant or the client
// is no longer accepted, so re-authorization is needed.
func (e *tokenError) permanent() bool {
	switch e.Code {
	case "invalid_grant", "invalid_client", "unauthorized_client", "unsupported_grant_type", "invalid_scope":
		return true
	}
	return false
}

// exchange trades an authorization code for a token.
func (s *Service) exchange(ctx context.Context, o *oauthConfig, code, verifier string) (*token, error) {
	cfg, err := s.oauth2Config(ctx, o)
	if err != nil {
		return nil, err
	}
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(verifier)}
	if o.Resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", o.Resource))
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, s.http)
	ctx, cancel := context.WithTimeout(ctx, s.o.ConnectTimeout)
	defer cancel()
	t, err := cfg.Exchange(ctx, code, opts...)
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return nil, &tokenError{Code: re.ErrorCode, Description: re.ErrorDescription, Status: re.Response.StatusCode}
		}
		return nil, err
	}
	return s.newToken(t, o.Scopes), nil
}

// refreshGrant uses the refresh token. x/oauth2 cannot add the resource
// indicator to a refresh request, so this one is built here (RFC 6749 6,
// RFC 8707 2.2).
func (s *Service) refreshGrant(ctx context.Context, o *oauthConfig, old *token) (*token, error) {
	cfg, err := s.oauth2Config(ctx, o)
	if err != nil {
		return nil, err
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {old.RefreshToken}}
	if o.Resource != "" {
		form.Set("resource", o.Resource)
	}
	if cfg.ClientSecret == "" {
		form.Set("client_id", cfg.ClientID)
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.ConnectTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if cfg.ClientSecret != "" {
		req.SetBasicAuth(url.QueryEscape(cfg.ClientID), url.QueryEscape(cfg.ClientSecret))
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		TokenType    string `json:"token_type"`
		ExpiresIn    int64  `json:"expires_in"`
		Scope        string `json:"scope"`
		Error        string `json:"error"`
		ErrorDesc    string `json:"error_description"`
	}
	if err := decodeLimited(resp.Body, &body); err != nil && resp.StatusCode < 300 {
		return nil, fmt.Errorf("token endpoint: %w", err)
	}
	if resp.StatusCode >= 300 || body.AccessToken == "" {
		code := body.Error
		if code == "" {
			code = http.StatusText(resp.StatusCode)
		}
		return nil, &tokenError{Code: code, Description: body.ErrorDesc, Status: resp.StatusCode}
	}
	t := &oauth2.Token{AccessToken: body.AccessToken, RefreshToken: body.RefreshToken, TokenType: body.TokenType}
	if body.ExpiresIn > 0 {
		t.Expiry = s.now().Add(time.Duration(body.ExpiresIn) * time.Second)
	}
	t = t.WithExtra(map[string]any{"scope": body.Scope})
	nt := s.newToken(t, old.Scopes)
	if nt.RefreshToken == "" {
		// Providers that do not rotate refresh tokens keep the old one valid.
		nt.RefreshToken = old.RefreshToken
	}
	return nt, nil
}

func (s *Service) newToken(t *oauth2.Token, requested []string) *token {
	nt := &token{ID: newID(), AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, TokenType: t.TokenType,
		Expiry: t.Expiry.UTC(), ObtainedAt: s.now().UTC(), Scopes: requested}
	if sc, ok := t.Extra("scope").(string); ok && sc != "" {
		nt.Scopes = strings.Fields(sc)
	}
	return nt
}
