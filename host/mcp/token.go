package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/store"
)

// inlineSkew treats a token this close to expiry as expired on use, so a
// request does not leave with a token that dies in flight.
const inlineSkew = 5 * time.Second

// Refresh triggers recorded on the token.
const (
	triggerBackground = "background"
	triggerInline     = "inline"
)

// authRequiredError says an OAuth client has no usable token. It carries
// the message; the envelope (with the authorize URL) is built by
// Service.authRequired.
type authRequiredError struct{ reason string }

func (e *authRequiredError) Error() string { return "mcp: OAuth authorization required: " + e.reason }

func (s *Service) lockFor(configID string) *sync.Mutex {
	m, _ := s.refreshMu.LoadOrStore(configID, &sync.Mutex{})
	return m.(*sync.Mutex)
}

func (s *Service) loadOAuth(ctx context.Context, id string) (oauthConfig, *token, error) {
	var o oauthConfig
	var t *token
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		if o, err = store.GetJSON[oauthConfig](tx, nsOAuth, id); err != nil {
			return err
		}
		tk, err := store.GetJSON[token](tx, nsTokens, id)
		switch {
		case err == nil:
			t = &tk
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		return nil
	})
	return o, t, err
}

// validToken returns a usable access token of the OAuth config, refreshing
// it inline when it has expired. It fails with *authRequiredError when only
// re-authorization can help.
func (s *Service) validToken(ctx context.Context, configID string) (string, error) {
	o, t, err := s.loadOAuth(ctx, configID)
	if err != nil {
		return "", err
	}
	if t != nil && o.Status == OAuthAuthorized && (t.Expiry.IsZero() || s.now().Add(inlineSkew).Before(t.Expiry)) {
		return t.AccessToken, nil
	}
	if o.Status != OAuthAuthorized || t == nil {
		return "", &authRequiredError{reason: authReason(&o)}
	}
	t, err = s.refresh(ctx, configID, triggerInline, func(t *token) bool {
		return !t.Expiry.IsZero() && !s.now().Add(inlineSkew).Before(t.Expiry)
	})
	if err != nil {
		return "", err
	}
	return t.AccessToken, nil
}

func authReason(o *oauthConfig) string {
	switch o.Status {
	case OAuthPending:
		return "the MCP server has not been authorized yet"
	case OAuthRevoked:
		return "the OAuth token was revoked; re-authorize"
	case OAuthFailed:
		return "OAuth token expired or invalid (" + o.StatusReason + "); re-authorize"
	}
	return "OAuth token expired or invalid; re-authorize"
}

// refresh refreshes the token of configID when need (evaluated under the
// per-config lock, on the freshest stored token) says so. A permanent
// refusal (invalid_grant: the refresh token expired or was revoked) deletes
// the token and moves the config to failed; transient errors change
// nothing and are returned.
func (s *Service) refresh(ctx context.Context, configID, trigger string, need func(*token) bool) (*token, error) {
	mu := s.lockFor(configID)
	mu.Lock()
	defer mu.Unlock()
	o, t, err := s.loadOAuth(ctx, configID)
	if err != nil {
		return nil, err
	}
	if o.Status != OAuthAuthorized || t == nil {
		return nil, &authRequiredError{reason: authReason(&o)}
	}
	if !need(t) {
		return t, nil
	}
	if t.RefreshToken == "" {
		return nil, s.failOAuth(ctx, configID, "the access token expired and no refresh token was issued")
	}
	nt, err := s.refreshGrant(ctx, &o, t)
	if err != nil {
		var te *tokenError
		if errors.As(err, &te) && te.permanent() {
			s.log.Warn("mcp: OAuth refresh rejected; re-authorization required", "oauth_config_id", configID, "error", te.Code)
			return nil, s.failOAuth(ctx, configID, "refresh rejected: "+te.Code)
		}
		s.log.Warn("mcp: OAuth refresh failed; will retry", "oauth_config_id", configID, "error", err)
		return nil, fmt.Errorf("refresh OAuth token: %w", err)
	}
	nt.RefreshedAt, nt.RefreshTrigger, nt.ObtainedAt = s.now().UTC(), trigger, t.ObtainedAt
	err = s.update(ctx, func(tx store.Tx) error {
		cur, err := store.GetJSON[oauthConfig](tx, nsOAuth, configID)
		if err != nil {
			return err
		}
		if cur.Status != OAuthAuthorized {
			// Revoked while refreshing: the revocation wins.
			return &authRequiredError{reason: authReason(&cur)}
		}
		return store.PutJSON(tx, nsTokens, configID, nt)
	})
	if err != nil {
		return nil, err
	}
	s.log.Info("mcp: OAuth token refreshed", "oauth_config_id", configID, "trigger", trigger, "expires_at", nt.Expiry)
	return nt, nil
}

// failOAuth moves a config to failed and deletes its token.
func (s *Service) failOAuth(ctx context.Context, configID, reason string) error {
	err := s.update(ctx, func(tx store.Tx) error {
		o, err := store.GetJSON[oauthConfig](tx, nsOAuth, configID)
		if err != nil {
			return err
		}
		o.Status, o.StatusReason, o.UpdatedAt = OAuthFailed, reason, s.now().UTC()
		if err := tx.Delete(nsTokens, configID); err != nil {
			return err
		}
		return store.PutJSON(tx, nsOAuth, configID, o)
	})
	if err != nil {
		return err
	}
	return &authRequiredError{reason: "OAuth token expired or invalid (" + reason + "); re-authorize"}
}

// authRequired builds the envelope of a tool call that needs
// (re-)authorization: 401 with extra_fields.mcp_auth_required carrying an
// authorize URL. A live flow's URL is reused; otherwise a new flow starts.
func (s *Service) authRequired(ctx context.Context, c *Client, reason string) *apierr.Error {
	link := ""
	err := s.update(ctx, func(tx store.Tx) error {
		o, err := store.GetJSON[oauthConfig](tx, nsOAuth, c.OAuthConfigID)
		if err != nil {
			return err
		}
		if o.FlowURL != "" && s.now().Before(o.FlowExpiresAt) {
			link = o.FlowURL
			return nil
		}
		if link, err = s.startFlow(ctx, tx, &o); err != nil {
			return err
		}
		o.UpdatedAt = s.now().UTC()
		return store.PutJSON(tx, nsOAuth, o.ID, o)
	})
	if err != nil {
		s.log.Warn("mcp: cannot start an OAuth flow", "client", c.Name, "error", err)
	}
	msg := fmt.Sprintf("MCP client %s needs OAuth authorization: %s", c.Name, reason)
	return apierr.New(http.StatusUnauthorized, apierr.TypeAuthentication, "mcp_auth_required", msg).
		WithExtra(&apierr.ExtraFields{MCPRequestType: "tool_call", MCPAuthRequired: &apierr.MCPAuthRequired{
			Kind: "oauth", MCPClientID: c.ID, MCPClientName: c.Name, Message: msg, AuthorizeURL: link,
		}})
}

// refreshLoop is the background refresher: tokens of enabled clients that
// are about to expire (but have not yet) are refreshed ahead of time.
// Expired tokens are left to the inline refresh on use, and disabled
// clients are skipped until they are enabled and used again.
func (s *Service) refreshLoop() {
	tick := time.NewTicker(s.o.RefreshInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
			s.refreshDue(s.ctx)
			s.pruneFlows(s.ctx)
		}
	}
}

func (s *Service) refreshDue(ctx context.Context) {
	clients, err := s.listClients(ctx)
	if err != nil {
		s.log.Warn("mcp: refresher cannot list clients", "error", err)
		return
	}
	for i := range clients {
		c := &clients[i]
		if !c.IsEnabled || c.AuthType != AuthOAuth || c.OAuthConfigID == "" {
			continue
		}
		o, t, err := s.loadOAuth(ctx, c.OAuthConfigID)
		if err != nil || o.Status != OAuthAuthorized || t == nil || t.Expiry.IsZero() || t.RefreshToken == "" {
			continue
		}
		now := s.now()
		if !now.Before(t.Expiry) || t.Expiry.Sub(now) > s.o.RefreshBefore {
			continue
		}
		_, err = s.refresh(ctx, c.OAuthConfigID, triggerBackground, func(t *token) bool {
			left := t.Expiry.Sub(s.now())
			return left > 0 && left <= s.o.RefreshBefore
		})
		if err != nil && ctx.Err() == nil {
			s.log.Warn("mcp: background refresh failed", "client", c.Name, "error", err)
		}
	}
}
