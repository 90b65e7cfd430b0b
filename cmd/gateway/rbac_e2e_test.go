package main_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUserRBACThroughTheBinary: an admin creates a custom role, a user and
// an access profile; the user logs in by email, is refused (403 naming the
// permission) what the role lacks, and after a kill -9 and restart the
// acknowledged user, role, profile and session are all still there.
func TestUserRBACThroughTheBinary(t *testing.T) {
	cwd, data := t.TempDir(), t.TempDir()
	env := []string{"GATEWAY_AUTH_CONFIG__ADMIN_USERNAME=admin", "GATEWAY_AUTH_CONFIG__ADMIN_PASSWORD=e2e-admin-password",
		"GATEWAY_ENCRYPTION_KEY=an rbac e2e passphrase, long enough"}
	p := start(t, cwd, data, env)
	admin := func(r *http.Request) { r.SetBasicAuth("admin", "e2e-admin-password") }

	code, body := call(t, p, "POST", "/api/roles", map[string]any{"name": "provider-reader", "permissions": []string{"Providers:View"}}, admin)
	if code != 201 {
		t.Fatalf("create role: %d %s", code, body)
	}
	var role struct{ ID int64 }
	_ = json.Unmarshal(body, &role)
	code, body = call(t, p, "POST", "/api/users", map[string]any{"name": "Eve", "email": "eve@example.com",
		"password": "eve-password-1", "role_id": role.ID}, admin)
	if code != 201 {
		t.Fatalf("create user: %d %s", code, body)
	}
	var user struct{ ID string }
	_ = json.Unmarshal(body, &user)
	code, body = call(t, p, "POST", "/api/governance/access-profiles", map[string]any{"name": "hooks",
		"user_id": user.ID, "permissions": []string{"Webhooks:View"}}, admin)
	if code != 201 {
		t.Fatalf("create profile: %d %s", code, body)
	}

	tok := userLogin(t, p, "eve@example.com", "eve-password-1")
	checkUser := func(stage, tok string) {
		t.Helper()
		as := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
		if code, body := call(t, p, "GET", "/api/providers", nil, as); code != 200 {
			t.Fatalf("%s: role permission: %d %s", stage, code, body)
		}
		if code, body := call(t, p, "GET", "/api/webhooks", nil, as); code != 200 {
			t.Fatalf("%s: profile permission: %d %s", stage, code, body)
		}
		code, body := call(t, p, "POST", "/api/providers", map[string]any{"name": "openai"}, as)
		if code != 403 || !strings.Contains(string(body), "Providers:Create") || !strings.Contains(string(body), `"permission_error"`) {
			t.Fatalf("%s: missing permission: %d %s", stage, code, body)
		}
		if code, body := call(t, p, "GET", "/api/users", nil, as); code != 403 {
			t.Fatalf("%s: users listing: %d %s", stage, code, body)
		}
	}
	checkUser("before kill", tok)

	// kill -9 right after the last acknowledgement.
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(10 * time.Second)

	p = start(t, cwd, data, env)
	checkUser("session after restart", tok)
	checkUser("new login after restart", userLogin(t, p, "eve@example.com", "eve-password-1"))
	code, body = call(t, p, "GET", "/api/users?email=eve", nil, admin)
	if code != 200 || !strings.Contains(string(body), `"name":"provider-reader"`) || strings.Contains(string(body), "eve-password") {
		t.Fatalf("user after restart: %d %s", code, body)
	}
	// The admin login keeps working next to user logins.
	code, body = call(t, p, "POST", "/api/session/login", map[string]any{"username": "admin", "password": "e2e-admin-password"}, nil)
	if code != 200 {
		t.Fatalf("admin login: %d %s", code, body)
	}
}

func userLogin(t *testing.T, p *proc, email, password string) string {
	t.Helper()
	code, body := call(t, p, "POST", "/api/session/login", map[string]any{"email": email, "password": password}, nil)
	if code != 200 {
		t.Fatalf("login %s: %d %s", email, code, body)
	}
	var m struct{ Token string }
	if err := json.Unmarshal(body, &m); err != nil || !strings.HasPrefix(m.Token, "gws_") {
		t.Fatalf("login answer: %s", body)
	}
	return m.Token
}

// call sends a request to the running binary with the given credentials.
func call(t *testing.T, p *proc, method, path string, body any, auth func(*http.Request)) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if auth != nil {
		auth(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}
