package auth_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/internal/testgw"
)

func basic(user, pass string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth(user, pass) }
}

func bearer(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

func header(k, v string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set(k, v) }
}

func TestSetupLock(t *testing.T) {
	g := testgw.New(t)
	g.Auth = testgw.NoAuth

	for _, p := range []string{"/health", "/api/version", "/api/session/is-auth-enabled"} {
		if r := g.Do("GET", p, nil); r.Status != 200 {
			t.Fatalf("public %s: %d %s", p, r.Status, r.Body)
		}
	}
	if m := g.Do("GET", "/api/session/is-auth-enabled", nil).JSON(t); m["is_auth_enabled"] != false || m["setup_lock_active"] != true {
		t.Fatalf("is-auth-enabled: %v", m)
	}

	testgw.WantEnvelope(t, g.Do("GET", "/api/config", nil), 401, "setup_token_required")
	testgw.WantEnvelope(t, g.Do("GET", "/api/config", nil, header("X-Gateway-Setup-Token", "wrong")), 403, "invalid_setup_token")
	if r := g.Do("GET", "/api/config", nil, testgw.SetupAuth); r.Status != 200 {
		t.Fatalf("right token: %d %s", r.Status, r.Body)
	}
	// Authorization is not a substitute for the setup token while the lock is on.
	testgw.WantEnvelope(t, g.Do("GET", "/api/config", nil, basic("admin", "whatever")), 401, "setup_token_required")
	// Login is meaningless before auth is enabled.
	testgw.WantEnvelope(t, g.Do("POST", "/api/session/login", `{"username":"a","password":"b"}`), 400, "auth_not_enabled")

	// Setup trade: wrong token refused, right token gives an HttpOnly cookie.
	testgw.WantEnvelope(t, g.Do("POST", "/api/session/setup", nil), 401, "setup_token_required")
	testgw.WantEnvelope(t, g.Do("POST", "/api/session/setup", nil, header("X-Gateway-Setup-Token", "nope")), 403, "invalid_setup_token")
	r := g.Do("POST", "/api/session/setup", nil, testgw.SetupAuth)
	if r.Status != 200 {
		t.Fatalf("setup: %d %s", r.Status, r.Body)
	}
	ck := r.Header.Get("Set-Cookie")
	if !strings.Contains(ck, "gateway_setup_session=") || !strings.Contains(strings.ToLower(ck), "httponly") {
		t.Fatalf("setup cookie: %q", ck)
	}
	cookie := strings.SplitN(ck, ";", 2)[0]
	if r := g.Do("GET", "/api/config", nil, header("Cookie", cookie)); r.Status != 200 {
		t.Fatalf("cookie auth: %d %s", r.Status, r.Body)
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/config", nil, header("Cookie", "gateway_setup_session=gws_forged")), 401, "setup_token_required")
}

func TestEnableAuthEndsSetupLock(t *testing.T) {
	g := testgw.New(t)
	r := g.Do("PUT", "/api/config/auth", map[string]any{"enabled": true, "admin_username": "admin", "admin_password": "s3cret-pass"})
	if r.Status != 200 {
		t.Fatalf("enable auth: %d %s", r.Status, r.Body)
	}
	// The header stops working once auth is enabled.
	testgw.WantEnvelope(t, g.Do("GET", "/api/config", nil, testgw.SetupAuth), 401, "missing_credentials")
	if r := g.Do("GET", "/api/config", nil, basic("admin", "s3cret-pass")); r.Status != 200 {
		t.Fatalf("basic after enable: %d %s", r.Status, r.Body)
	}
	testgw.WantEnvelope(t, g.Do("POST", "/api/session/setup", nil, testgw.SetupAuth), 400, "setup_complete")
}

func authedGateway(t *testing.T) *testgw.Gateway {
	g := testgw.New(t, "GATEWAY_AUTH_CONFIG__ADMIN_USERNAME=admin", "GATEWAY_AUTH_CONFIG__ADMIN_PASSWORD=correct horse")
	g.Auth = testgw.NoAuth
	return g
}

func TestManagementAuth(t *testing.T) {
	g := authedGateway(t)

	testgw.WantEnvelope(t, g.Do("GET", "/api/config", nil), 401, "missing_credentials")
	testgw.WantEnvelope(t, g.Do("GET", "/api/config", nil, testgw.SetupAuth), 401, "missing_credentials")
	if r := g.Do("GET", "/api/config", nil, basic("admin", "correct horse")); r.Status != 200 {
		t.Fatalf("basic: %d %s", r.Status, r.Body)
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/config", nil, basic("admin", "wrong")), 401, "invalid_credentials")
	testgw.WantEnvelope(t, g.Do("GET", "/api/config", nil, basic("root", "correct horse")), 401, "invalid_credentials")

	legacy := base64.StdEncoding.EncodeToString([]byte("admin:correct horse"))
	if r := g.Do("GET", "/api/config", nil, bearer(legacy)); r.Status != 200 {
		t.Fatalf("base64 bearer: %d %s", r.Status, r.Body)
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/config", nil, bearer("sk-gw-abcdef")), 401, "virtual_key_not_allowed")
	testgw.WantEnvelope(t, g.Do("GET", "/api/config", nil, header("x-api-key", "sk-gw-abcdef")), 401, "api_key_header_not_allowed")
	testgw.WantEnvelope(t, g.Do("GET", "/api/config", nil, header("x-api-key", "anything")), 401, "api_key_header_not_allowed")
	testgw.WantEnvelope(t, g.Do("GET", "/api/config", nil, header("Authorization", "Digest abc")), 401, "unsupported_auth_scheme")

	// Dashboard session: login, bearer, cookie, logout.
	r := g.Do("POST", "/api/session/login", `{"username":"admin","password":"correct horse"}`)
	if r.Status != 200 {
		t.Fatalf("login: %d %s", r.Status, r.Body)
	}
	tok := r.JSON(t)["token"].(string)
	if !strings.HasPrefix(tok, "gws_") {
		t.Fatalf("session token %q", tok)
	}
	if r := g.Do("GET", "/api/config", nil, bearer(tok)); r.Status != 200 {
		t.Fatalf("session bearer: %d %s", r.Status, r.Body)
	}
	if r := g.Do("GET", "/api/config", nil, header("Cookie", "gateway_session="+tok)); r.Status != 200 {
		t.Fatalf("session cookie: %d %s", r.Status, r.Body)
	}
	if m := g.Do("GET", "/api/session/is-auth-enabled", nil, bearer(tok)).JSON(t); m["is_auth_enabled"] != true || m["has_valid_token"] != true {
		t.Fatalf("is-auth-enabled with token: %v", m)
	}
	if r := g.Do("POST", "/api/session/logout", nil, bearer(tok)); r.Status != 200 {
		t.Fatalf("logout: %d", r.Status)
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/config", nil, bearer(tok)), 401, "invalid_credentials")
	testgw.WantEnvelope(t, g.Do("POST", "/api/session/login", `{"username":"admin","password":"nope"}`), 401, "invalid_credentials")
	testgw.WantEnvelope(t, g.Do("POST", "/api/session/login", `{"username":"admin"}`), 400, "missing_field")
}

func TestAPIKeyScopes(t *testing.T) {
	g := authedGateway(t)
	adm := basic("admin", "correct horse")
	r := g.Do("POST", "/api/auth/api-keys", map[string]any{"name": "reader", "scopes": []string{"Settings:View"}}, adm)
	if r.Status != 201 {
		t.Fatalf("create key: %d %s", r.Status, r.Body)
	}
	m := r.JSON(t)
	key := m["key"].(string)
	if !strings.HasPrefix(key, "gwm_") {
		t.Fatalf("key %q", key)
	}
	if r := g.Do("GET", "/api/config", nil, bearer(key)); r.Status != 200 {
		t.Fatalf("scoped read: %d %s", r.Status, r.Body)
	}
	testgw.WantEnvelope(t, g.Do("PUT", "/api/config/auth", `{"enabled":true}`, bearer(key)), 403, "missing_permission")
	testgw.WantEnvelope(t, g.Do("GET", "/api/auth/api-keys", nil, bearer(key)), 403, "missing_permission")
	testgw.WantEnvelope(t, g.Do("GET", "/api/config", nil, bearer("gwm_forged")), 401, "invalid_credentials")

	list := g.Do("GET", "/api/auth/api-keys", nil, adm)
	if strings.Contains(string(list.Body), key) || strings.Contains(string(list.Body), `"hash"`) {
		t.Fatalf("listing leaks the key: %s", list.Body)
	}
	id := m["api_key"].(map[string]any)["id"].(string)
	if r := g.Do("DELETE", "/api/auth/api-keys/"+id, nil, adm); r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/config", nil, bearer(key)), 401, "invalid_credentials")

	testgw.WantEnvelope(t, g.Do("POST", "/api/auth/api-keys", `{"name":"x","scopes":["bogus"]}`, adm), 400, "invalid_value")
	testgw.WantEnvelope(t, g.Do("POST", "/api/auth/api-keys", `{"name":"x"}`, adm), 400, "missing_field")
}

func TestLoginThrottled(t *testing.T) {
	g := authedGateway(t)
	for i := 0; i < 10; i++ {
		testgw.WantEnvelope(t, g.Do("POST", "/api/session/login", `{"username":"admin","password":"guess"}`), 401, "invalid_credentials")
	}
	m := testgw.WantEnvelope(t, g.Do("POST", "/api/session/login", `{"username":"admin","password":"correct horse"}`), 429, "too_many_failed_attempts")
	if ef, ok := m["extra_fields"].(map[string]any); !ok || ef["retry_after_ms"].(float64) <= 0 {
		t.Fatalf("retry_after_ms missing: %v", m)
	}
	// Basic guessing is throttled by the same counter.
	testgw.WantEnvelope(t, g.Do("GET", "/api/config", nil, basic("admin", "correct horse")), 429, "too_many_failed_attempts")
}

func TestAdminPasswordChangeSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	env := []string{"GATEWAY_AUTH_CONFIG__ADMIN_USERNAME=admin", "GATEWAY_AUTH_CONFIG__ADMIN_PASSWORD=first-password"}
	g := testgw.Start(t, testgw.Options{Dir: dir, Env: env})
	g.Auth = basic("admin", "first-password")
	if r := g.Do("PUT", "/api/config/auth", `{"admin_password":"second-password"}`); r.Status != 200 {
		t.Fatalf("change password: %d %s", r.Status, r.Body)
	}
	g.Close()

	// Same config file content: the API change survives.
	g = testgw.Start(t, testgw.Options{Dir: dir, Env: env})
	g.Auth = testgw.NoAuth
	testgw.WantEnvelope(t, g.Do("GET", "/api/config", nil, basic("admin", "first-password")), 401, "invalid_credentials")
	if r := g.Do("GET", "/api/config", nil, basic("admin", "second-password")); r.Status != 200 {
		t.Fatalf("api password after restart: %d %s", r.Status, r.Body)
	}
	g.Close()

	// The config entry changed: the file wins.
	env[1] = "GATEWAY_AUTH_CONFIG__ADMIN_PASSWORD=third-password"
	g = testgw.Start(t, testgw.Options{Dir: dir, Env: env})
	g.Auth = testgw.NoAuth
	if r := g.Do("GET", "/api/config", nil, basic("admin", "third-password")); r.Status != 200 {
		t.Fatalf("file password after change: %d %s", r.Status, r.Body)
	}
}

// TestAuthConfigNeedsEverything: changing the local admin's credentials is
// becoming the local admin (who bypasses every check), so Settings:Update
// alone must not allow it; a credential holding "*" may.
func TestAuthConfigNeedsEverything(t *testing.T) {
	g := authedGateway(t)
	adm := basic("admin", "correct horse")
	mint := func(scopes ...string) func(*http.Request) {
		r := g.Do("POST", "/api/auth/api-keys", map[string]any{"name": "k", "scopes": scopes}, adm)
		if r.Status != 201 {
			t.Fatalf("create key %v: %d %s", scopes, r.Status, r.Body)
		}
		return bearer(r.JSON(t)["key"].(string))
	}
	settings := mint("Settings:*")
	if r := g.Do("GET", "/api/config/auth", nil, settings); r.Status != 200 {
		t.Fatalf("read auth config: %d %s", r.Status, r.Body)
	}
	for _, body := range []string{`{"admin_password":"taken-over-1"}`, `{"admin_username":"mallory"}`, `{"enabled":false}`} {
		testgw.WantEnvelope(t, g.Do("PUT", "/api/config/auth", body, settings), 403, "privilege_escalation")
	}
	if r := g.Do("GET", "/api/config", nil, adm); r.Status != 200 {
		t.Fatalf("admin credentials changed by a Settings key: %d %s", r.Status, r.Body)
	}
	if r := g.Do("PUT", "/api/config/auth", `{"admin_password":"second-password"}`, mint("*")); r.Status != 200 {
		t.Fatalf("\"*\" key: %d %s", r.Status, r.Body)
	}
	if r := g.Do("GET", "/api/config", nil, basic("admin", "second-password")); r.Status != 200 {
		t.Fatalf("new password: %d %s", r.Status, r.Body)
	}
}
