package auth

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/clientip"
	"github.com/wasmgate/gateway/store"
)

// Routes registers the session, auth-config and API-key endpoints.
func (s *Service) Routes(r *Router) {
	r.Get("/session/is-auth-enabled", Public, s.isAuthEnabled)
	r.Post("/session/login", Public, s.login)
	r.Post("/session/logout", Public, s.logout)
	// Setup checks the token itself: it is how the token is traded.
	r.Post("/session/setup", Public, s.setup)

	r.Get("/config/auth", Perm("Settings", "View"), s.getAuthConfig)
	r.Put("/config/auth", Perm("Settings", "Update"), s.putAuthConfig)

	r.Get("/auth/api-keys", Perm("APIKeys", "View"), s.listAPIKeys)
	r.Post("/auth/api-keys", Perm("APIKeys", "Create"), s.createAPIKey)
	r.Delete("/auth/api-keys/:id", Perm("APIKeys", "Delete"), s.deleteAPIKey)
}

func (s *Service) isAuthEnabled(c *fiber.Ctx) error {
	valid := false
	if s.AuthEnabled() {
		if tok := bearerOrCookie(c); tok != "" {
			p, err := s.sessionPrincipal(c.UserContext(), tok)
			valid = err == nil && p != nil
		}
	}
	return c.JSON(fiber.Map{
		"is_auth_enabled":   s.AuthEnabled(),
		"has_valid_token":   valid,
		"setup_lock_active": !s.AuthEnabled(),
	})
}

func bearerOrCookie(c *fiber.Ctx) string {
	if a := c.Get(fiber.HeaderAuthorization); strings.HasPrefix(a, "Bearer ") {
		return strings.TrimSpace(strings.TrimPrefix(a, "Bearer "))
	}
	return c.Cookies(SessionCookie)
}

// loginRequest is the local admin's username or a user's email, and the password.
type loginRequest struct {
	Username string `json:"username"`
	Email    string `json:"email"`
	Password string `json:"password"`
}

func (s *Service) login(c *fiber.Ctx) error {
	if !s.AuthEnabled() {
		return apierr.BadRequest("auth_not_enabled", "", "dashboard auth is not enabled; configure auth_config.admin_username and admin_password first")
	}
	client := clientip.Of(c)
	if wait := s.throttle.blocked(client); wait > 0 {
		return tooManyAttempts(wait)
	}
	var req loginRequest
	if e := apierr.DecodeJSON(c.Body(), &req); e != nil {
		return e
	}
	if req.Username == "" && req.Email == "" {
		return apierr.BadRequest("missing_field", "email", "email (or username for the local admin) is required")
	}
	if req.Password == "" {
		return apierr.BadRequest("missing_field", "password", "password is required")
	}
	kind, subject, err := s.checkLogin(c.UserContext(), req)
	if err != nil {
		return apierr.Internal(err)
	}
	if subject == "" {
		s.throttle.fail(client)
		return apierr.Unauthorized("invalid_credentials", "invalid username, email or password")
	}
	tok, exp, err := s.createSession(c.UserContext(), kind, subject)
	if err != nil {
		return apierr.Internal(err)
	}
	c.Cookie(&fiber.Cookie{Name: SessionCookie, Value: tok, Path: "/", Expires: exp,
		HTTPOnly: true, SameSite: fiber.CookieSameSiteStrictMode, Secure: c.Protocol() == "https"})
	out := fiber.Map{"token": tok, "expires_at": exp.Format(time.RFC3339)}
	if kind == string(KindUser) {
		out["user_id"] = subject
	}
	return c.JSON(out)
}

// checkLogin returns the session kind and subject of valid credentials, or
// an empty subject. A username is the local admin's first; when it is not
// and looks like an email it is tried as a user's, so one login form serves
// both. An email field is only ever a user's.
func (s *Service) checkLogin(ctx context.Context, req loginRequest) (kind, subject string, err error) {
	if req.Username != "" && s.checkAdmin(req.Username, req.Password) {
		return "admin", req.Username, nil
	}
	email := req.Email
	if email == "" && strings.Contains(req.Username, "@") {
		email = req.Username
	}
	acc := s.userAccounts()
	if email == "" || acc == nil {
		return "", "", nil
	}
	id, ok, err := acc.Login(ctx, email, req.Password)
	if err != nil || !ok {
		return "", "", err
	}
	return string(KindUser), id, nil
}

func (s *Service) logout(c *fiber.Ctx) error {
	if tok := bearerOrCookie(c); strings.HasPrefix(tok, SessionPrefix) {
		_ = s.deleteSession(c, tok)
	}
	c.ClearCookie(SessionCookie)
	return c.JSON(fiber.Map{"status": "success", "message": "logged out"})
}

func (s *Service) deleteSession(c *fiber.Ctx, tok string) error {
	return s.st.Update(c.UserContext(), func(tx store.Tx) error { return tx.Delete(nsSessions, tokenHash(tok)) })
}

// setup trades the setup token for an HttpOnly cookie so the dashboard
// never keeps the token in script-readable storage.
func (s *Service) setup(c *fiber.Ctx) error {
	if s.AuthEnabled() {
		return apierr.BadRequest("setup_complete", "", "dashboard auth is enabled; the setup token no longer applies: log in instead")
	}
	if _, e := s.setupLock(c); e != nil {
		return e
	}
	tok, exp, err := s.createSession(c.UserContext(), "setup", "setup")
	if err != nil {
		return apierr.Internal(err)
	}
	c.Cookie(&fiber.Cookie{Name: SetupSessionCookie, Value: tok, Path: "/", Expires: exp,
		HTTPOnly: true, SameSite: fiber.CookieSameSiteStrictMode, Secure: c.Protocol() == "https"})
	return c.JSON(fiber.Map{"status": "success", "expires_at": exp.Format(time.RFC3339)})
}

func (s *Service) getAuthConfig(c *fiber.Ctx) error {
	st := s.admin.Load()
	pw := ""
	if st.PasswordHash != "" {
		pw = "********"
	}
	return c.JSON(fiber.Map{"enabled": st.Enabled, "admin_username": st.Username,
		"admin_password": pw, "is_auth_enabled": st.active()})
}

type authConfigRequest struct {
	Enabled       *bool   `json:"enabled"`
	AdminUsername *string `json:"admin_username"`
	AdminPassword *string `json:"admin_password"`
	// IsAuthEnabled is read-only; accepted so a GET body can be PUT back.
	IsAuthEnabled *bool `json:"is_auth_enabled"`
}

func (s *Service) putAuthConfig(c *fiber.Ctx) error {
	var req authConfigRequest
	if e := apierr.DecodeJSON(c.Body(), &req); e != nil {
		return e
	}
	// Setting the local admin's username or password is becoming the local
	// admin, who bypasses every permission check, and switching auth off
	// puts every route under the setup lock: only a caller that already
	// holds everything may do either (Settings:Update alone must not).
	if p := FromCtx(c); p != nil && !p.Bypass && !scopeWithin(p.Scopes, "*") {
		return apierr.Forbidden("privilege_escalation",
			"changing the local admin account or dashboard auth needs permission \"*\", which this credential does not hold")
	}
	cur := *s.admin.Load()
	next := cur
	next.UpdatedAt = time.Now().UTC()
	if req.AdminUsername != nil {
		u := strings.TrimSpace(*req.AdminUsername)
		if u == "" || strings.Contains(u, ":") {
			return apierr.BadRequest("invalid_value", "admin_username", "admin_username must be non-empty and must not contain ':'")
		}
		next.Username = u
	}
	if req.AdminPassword != nil && *req.AdminPassword != "********" {
		if len(*req.AdminPassword) < 8 {
			return apierr.BadRequest("invalid_value", "admin_password", "admin_password must be at least 8 characters")
		}
		h, err := hashPassword(*req.AdminPassword)
		if err != nil {
			return apierr.BadRequest("invalid_value", "admin_password", err.Error())
		}
		next.PasswordHash = h
	}
	if req.Enabled != nil {
		next.Enabled = *req.Enabled
	}
	if next.Enabled && (next.Username == "" || next.PasswordHash == "") {
		return apierr.BadRequest("invalid_value", "enabled", "enabling auth needs admin_username and admin_password")
	}
	if err := s.saveAdmin(c.UserContext(), &next); err != nil {
		return apierr.Internal(err)
	}
	return c.Status(http.StatusOK).JSON(fiber.Map{"enabled": next.Enabled, "admin_username": next.Username,
		"admin_password": "********", "is_auth_enabled": next.active()})
}
