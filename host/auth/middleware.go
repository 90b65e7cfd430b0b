package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/clientip"
	"github.com/wasmgate/gateway/store"
)

// Header and cookie names.
const (
	SetupTokenHeader   = "X-Gateway-Setup-Token"
	SetupSessionCookie = "gateway_setup_session"
	SessionCookie      = "gateway_session"
	// VirtualKeyPrefix marks inference virtual keys, refused on /api.
	VirtualKeyPrefix = "sk-gw-"
	// APIKeyPrefix marks management API keys.
	APIKeyPrefix = "gwm_"
	// SessionPrefix marks dashboard session tokens.
	SessionPrefix = "gws_"
)

// Kind says how a management caller authenticated.
type Kind string

// Principal kinds.
const (
	KindAdmin   Kind = "admin"       // admin password (Basic, base64 bearer)
	KindSession Kind = "session"     // dashboard session of the admin
	KindAPIKey  Kind = "api_key"     // management API key with scopes
	KindSetup   Kind = "setup_token" // setup lock: auth not enabled yet
)

// Principal is the authenticated management caller.
type Principal struct {
	Kind    Kind
	Subject string
	// Scopes are the permissions of an API key.
	Scopes []string
	// Bypass skips permission checks: the local admin, and any caller
	// while dashboard auth is disabled.
	Bypass bool
}

const principalKey = "wasmgate.principal"

// FromCtx returns the caller authenticated for this request, if any.
func FromCtx(c *fiber.Ctx) *Principal {
	p, _ := c.Locals(principalKey).(*Principal)
	return p
}

// Require authenticates the caller and checks perm.
func (s *Service) Require(perm Permission) fiber.Handler {
	return func(c *fiber.Ctx) error {
		p, aerr := s.Authenticate(c)
		if aerr != nil {
			return aerr
		}
		if !p.Bypass && !Allows(p.Scopes, perm) {
			return apierr.Forbidden("missing_permission",
				fmt.Sprintf("this credential lacks permission %s", perm))
		}
		c.Locals(principalKey, p)
		return c.Next()
	}
}

// Authenticate resolves the management caller of c.
func (s *Service) Authenticate(c *fiber.Ctx) (*Principal, *apierr.Error) {
	if !s.AuthEnabled() {
		return s.setupLock(c)
	}
	client := clientip.Of(c)
	if wait := s.throttle.blocked(client); wait > 0 {
		return nil, tooManyAttempts(wait)
	}
	authz := c.Get(fiber.HeaderAuthorization)
	if authz == "" {
		if c.Get("x-api-key") != "" {
			return nil, apierr.Unauthorized("api_key_header_not_allowed",
				"x-api-key is not accepted on management APIs; use Authorization with a management API key, session token or admin credentials")
		}
		if tok := c.Cookies(SessionCookie); tok != "" {
			p, err := s.sessionPrincipal(c.UserContext(), tok)
			if err != nil {
				return nil, apierr.Internal(err)
			}
			if p != nil {
				return p, nil
			}
		}
		return nil, apierr.Unauthorized("missing_credentials",
			"management API requires Authorization: Basic admin credentials or Bearer management API key / session token").
			WithHeader("WWW-Authenticate", `Basic realm="wasmgate"`)
	}
	scheme, cred, _ := strings.Cut(authz, " ")
	cred = strings.TrimSpace(cred)
	var p *Principal
	switch strings.ToLower(scheme) {
	case "basic":
		p = s.passwordPrincipal(cred)
	case "bearer":
		switch {
		case strings.HasPrefix(cred, VirtualKeyPrefix):
			return nil, apierr.Unauthorized("virtual_key_not_allowed",
				"virtual keys are inference credentials and are not accepted on management APIs")
		case strings.HasPrefix(cred, APIKeyPrefix):
			p = s.apiKeyPrincipal(c.UserContext(), cred)
		case strings.HasPrefix(cred, SessionPrefix):
			var err error
			if p, err = s.sessionPrincipal(c.UserContext(), cred); err != nil {
				return nil, apierr.Internal(err)
			}
		default:
			p = s.passwordPrincipal(cred)
		}
	default:
		return nil, apierr.Unauthorized("unsupported_auth_scheme",
			fmt.Sprintf("unsupported Authorization scheme %q; use Basic or Bearer", scheme))
	}
	if p == nil {
		s.throttle.fail(client)
		return nil, apierr.Unauthorized("invalid_credentials", "the management credentials are invalid or expired")
	}
	return p, nil
}

// passwordPrincipal checks base64 "user:password" (Basic or legacy bearer).
func (s *Service) passwordPrincipal(cred string) *Principal {
	raw, err := base64.StdEncoding.DecodeString(cred)
	if err != nil {
		return nil
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok || !s.checkAdmin(user, pass) {
		return nil
	}
	return &Principal{Kind: KindAdmin, Subject: user, Bypass: true}
}

func (s *Service) setupLock(c *fiber.Ctx) (*Principal, *apierr.Error) {
	tok := c.Get(SetupTokenHeader)
	if tok == "" {
		if ck := c.Cookies(SetupSessionCookie); ck != "" && s.validSetupSession(c.UserContext(), ck) {
			return &Principal{Kind: KindSetup, Subject: "setup", Bypass: true}, nil
		}
		return nil, apierr.Unauthorized("setup_token_required",
			"dashboard auth is not enabled yet: send the setup token in the X-Gateway-Setup-Token header (see the gateway log for where it is)")
	}
	client := clientip.Of(c)
	if wait := s.throttle.blocked(client); wait > 0 {
		return nil, tooManyAttempts(wait)
	}
	if !constantTimeEqual(tok, s.setupToken) {
		s.throttle.fail(client)
		return nil, apierr.Forbidden("invalid_setup_token", "the setup token is wrong")
	}
	return &Principal{Kind: KindSetup, Subject: "setup", Bypass: true}, nil
}

func tooManyAttempts(wait time.Duration) *apierr.Error {
	ms := wait.Milliseconds()
	return apierr.New(http.StatusTooManyRequests, apierr.TypeRateLimit, "too_many_failed_attempts",
		"too many failed authentication attempts from this client; retry later").
		WithExtra(&apierr.ExtraFields{RetryAfterMS: &ms}).
		WithHeader("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
}

// session is a persisted dashboard session, keyed by the token's hash.
type session struct {
	Subject   string    `json:"subject"`
	Kind      string    `json:"kind"` // "admin", "user" (Subject is the user id) or "setup"
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// lookupSession returns the live session of tok when its kind is one of kinds.
func (s *Service) lookupSession(ctx context.Context, tok string, kinds ...string) *session {
	var out *session
	_ = s.st.View(ctx, func(tx store.Tx) error {
		v, err := store.GetJSON[session](tx, nsSessions, tokenHash(tok))
		if err == nil && slices.Contains(kinds, v.Kind) && s.now().Before(v.ExpiresAt) {
			out = &v
		}
		return nil
	})
	return out
}

// sessionPrincipal resolves a dashboard session token: the admin's (which
// bypasses permission checks) or a user's (permissions from their role).
// A nil principal with a nil error means the token is not valid.
func (s *Service) sessionPrincipal(ctx context.Context, tok string) (*Principal, error) {
	sess := s.lookupSession(ctx, tok, "admin", string(KindUser))
	switch {
	case sess == nil:
		return nil, nil
	case sess.Kind == string(KindUser):
		return s.userPrincipal(ctx, sess)
	case sess.Subject != s.admin.Load().Username:
		return nil, nil
	}
	return &Principal{Kind: KindSession, Subject: sess.Subject, Bypass: true}, nil
}

func (s *Service) validSetupSession(ctx context.Context, tok string) bool {
	return s.lookupSession(ctx, tok, "setup") != nil
}

func (s *Service) createSession(ctx context.Context, kind, subject string) (string, time.Time, error) {
	tok := SessionPrefix + randomToken(32)
	now := s.now().UTC()
	sess := session{Subject: subject, Kind: kind, CreatedAt: now, ExpiresAt: now.Add(s.sessionTTL)}
	err := s.st.Update(ctx, func(tx store.Tx) error { return store.PutJSON(tx, nsSessions, tokenHash(tok), sess) })
	if err != nil {
		return "", time.Time{}, fmt.Errorf("auth: save session: %w", err)
	}
	return tok, sess.ExpiresAt, nil
}

// PruneSessions deletes expired sessions; the server runs it periodically.
func (s *Service) PruneSessions(ctx context.Context) error {
	now := s.now()
	var expired []string
	err := s.st.View(ctx, func(tx store.Tx) error {
		return tx.Scan(nsSessions, store.ScanOptions{}, func(k string, v []byte) error {
			var sess session
			if jsonErr := jsonUnmarshal(v, &sess); jsonErr != nil || !now.Before(sess.ExpiresAt) {
				expired = append(expired, k)
			}
			return nil
		})
	})
	if err != nil || len(expired) == 0 {
		return err
	}
	return s.st.Update(ctx, func(tx store.Tx) error {
		for _, k := range expired {
			if err := tx.Delete(nsSessions, k); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return nil
	})
}
