package users_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/server"
)

const adminPass = "correct horse battery"

func basic(user, pass string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth(user, pass) }
}

func bearer(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

// fakeDirectory stands in for the governance capability's teams and
// virtual keys.
type fakeDirectory struct {
	teams map[string]string
	vks   map[string]bool
}

func (d fakeDirectory) TeamName(_ context.Context, id string) (string, bool, error) {
	n, ok := d.teams[id]
	return n, ok, nil
}

func (d fakeDirectory) VirtualKeyExists(_ context.Context, id string) (bool, error) {
	return d.vks[id], nil
}

// clock is an adjustable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// authed starts a gateway with dashboard auth on; g.Auth is the admin.
func authed(t *testing.T, opts ...server.Option) *testgw.Gateway {
	t.Helper()
	g := testgw.Start(t, testgw.Options{
		Env:           []string{"GATEWAY_AUTH_CONFIG__ADMIN_USERNAME=admin", "GATEWAY_AUTH_CONFIG__ADMIN_PASSWORD=" + adminPass},
		ServerOptions: opts,
	})
	g.Auth = basic("admin", adminPass)
	return g
}

func create(t *testing.T, g *testgw.Gateway, path string, body any) map[string]any {
	t.Helper()
	return g.Expect(201, "POST", path, body).Map(t)
}

func login(t *testing.T, g *testgw.Gateway, email, password string) string {
	t.Helper()
	r := g.Do("POST", "/api/session/login", map[string]any{"email": email, "password": password}, func(r *http.Request) { r.Header.Del("Authorization") })
	if r.Status != 200 {
		t.Fatalf("login %s: %d %s", email, r.Status, r.Body)
	}
	return r.Map(t)["token"].(string)
}

func TestUsersCRUD(t *testing.T) {
	g := testgw.New(t)
	u := create(t, g, "/api/users", map[string]any{"name": "Ada Lovelace", "email": "ada@example.com", "password": "analytical-engine"})
	id := u["id"].(string)
	role := u["role"].(map[string]any)
	if u["role_id"].(float64) != 3 || role["name"] != "viewer" || role["is_system_role"] != true {
		t.Fatalf("default role is not viewer: %v", u)
	}
	if strings.Contains(string(g.Do("GET", "/api/users/"+id, nil).Body), "analytical") ||
		strings.Contains(string(g.Do("GET", "/api/users/"+id, nil).Body), "password_hash") {
		t.Fatal("user view leaks the password")
	}
	for _, f := range []string{"id", "name", "email", "role_id", "role", "created_at", "updated_at", "teams", "business_units", "access_profiles", "access_profile"} {
		if _, ok := u[f]; !ok {
			t.Errorf("user lacks spec field %s: %v", f, u)
		}
	}
	create(t, g, "/api/users", map[string]any{"name": "Grace Hopper", "email": "grace@example.com", "role_id": 2,
		"business_units": []map[string]string{{"id": "bu1", "name": "Research"}}})
	create(t, g, "/api/users", map[string]any{"name": "Alan Turing", "email": "alan@example.org", "role_id": 1})

	// Validation: each failure names its field.
	for _, c := range []struct {
		body        any
		status      int
		code, param string
	}{
		{map[string]any{"name": "x", "email": "not-an-email"}, 400, "invalid_value", "email"},
		{map[string]any{"name": "x", "email": "Bob <bob@example.com>"}, 400, "invalid_value", "email"},
		{map[string]any{"name": "x"}, 400, "missing_field", "email"},
		{map[string]any{"email": "x@example.com"}, 400, "missing_field", "name"},
		{map[string]any{"name": "x", "email": "x@example.com", "role_id": 42}, 400, "invalid_value", "role_id"},
		{map[string]any{"name": "x", "email": "x@example.com", "password": "short"}, 400, "invalid_value", "password"},
		{map[string]any{"name": "x", "email": "x@example.com", "team_ids": []string{"t1"}}, 400, "invalid_value", "team_ids[0]"},
		{map[string]any{"name": "x", "email": "x@example.com", "role": "admin"}, 400, "unknown_field", "role"},
		{map[string]any{"name": "x", "email": "ADA@example.com"}, 409, "email_taken", "email"},
	} {
		m := testgw.WantEnvelope(t, g.Do("POST", "/api/users", c.body), c.status, c.code)
		if p := m["error"].(map[string]any)["param"]; p != c.param {
			t.Errorf("%v: param %v, want %s", c.body, p, c.param)
		}
	}

	// Listing: filters and paging.
	list := func(q string) map[string]any { return g.Expect(200, "GET", "/api/users"+q, nil).Map(t) }
	if m := list(""); m["total_count"].(float64) != 3 || m["limit"].(float64) != 50 {
		t.Fatalf("list: %v", m)
	}
	if m := list("?email=EXAMPLE.COM"); m["total_count"].(float64) != 2 {
		t.Fatalf("email filter: %v", m)
	}
	if m := list("?name=grace"); m["count"].(float64) != 1 {
		t.Fatalf("name filter: %v", m)
	}
	if m := list("?role=admin"); m["count"].(float64) != 1 || m["users"].([]any)[0].(map[string]any)["email"] != "alan@example.org" {
		t.Fatalf("role filter: %v", m)
	}
	if m := list("?role_id=2"); m["count"].(float64) != 1 {
		t.Fatalf("role_id filter: %v", m)
	}
	if m := list("?limit=1&offset=1"); m["count"].(float64) != 1 || m["total_count"].(float64) != 3 ||
		m["users"].([]any)[0].(map[string]any)["name"] != "Grace Hopper" {
		t.Fatalf("paging: %v", m)
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/users?limit=501", nil), 400, "invalid_parameter")
	testgw.WantEnvelope(t, g.Do("GET", "/api/users?role_id=x", nil), 400, "invalid_parameter")

	// Update is partial; the email index follows a change of address.
	m := g.Expect(200, "PUT", "/api/users/"+id, map[string]any{"email": "ada@lovelace.org", "role_id": 2}).Map(t)
	if m["name"] != "Ada Lovelace" || m["email"] != "ada@lovelace.org" || m["role"].(map[string]any)["name"] != "developer" {
		t.Fatalf("update: %v", m)
	}
	create(t, g, "/api/users", map[string]any{"name": "New Ada", "email": "ada@example.com"})
	testgw.WantEnvelope(t, g.Do("PUT", "/api/users/"+id, map[string]any{"email": "grace@example.com"}), 409, "email_taken")
	testgw.WantEnvelope(t, g.Do("PUT", "/api/users/nope", map[string]any{"name": "x"}), 404, "not_found")

	g.Expect(200, "DELETE", "/api/users/"+id, nil)
	testgw.WantEnvelope(t, g.Do("GET", "/api/users/"+id, nil), 404, "not_found")
	testgw.WantEnvelope(t, g.Do("DELETE", "/api/users/"+id, nil), 404, "not_found")
	// The freed address can be used again.
	create(t, g, "/api/users", map[string]any{"name": "Ada again", "email": "ada@lovelace.org"})
}

func TestRolesCRUD(t *testing.T) {
	g := testgw.New(t)
	m := g.Expect(200, "GET", "/api/roles", nil).Map(t)
	roles := m["roles"].([]any)
	names := []string{}
	for _, r := range roles[:3] {
		rm := r.(map[string]any)
		if rm["is_system_role"] != true {
			t.Fatalf("system role flag: %v", rm)
		}
		names = append(names, fmt.Sprint(rm["id"], rm["name"]))
	}
	if strings.Join(names, ",") != "1admin,2developer,3viewer" {
		t.Fatalf("system roles: %v", names)
	}
	viewer := g.Expect(200, "GET", "/api/roles/3", nil).Map(t)
	perms := fmt.Sprint(viewer["permissions"])
	if !strings.Contains(perms, "Providers:View") || strings.Contains(perms, "Providers:Create") || strings.Contains(perms, "Users:View") {
		t.Fatalf("viewer permissions: %s", perms)
	}
	dev := fmt.Sprint(g.Expect(200, "GET", "/api/roles/2", nil).Map(t)["permissions"])
	if !strings.Contains(dev, "Providers:Create") || strings.Contains(dev, "Users:") || strings.Contains(dev, "Settings:Update") {
		t.Fatalf("developer permissions: %s", dev)
	}

	r := create(t, g, "/api/roles", map[string]any{"name": "key-manager", "description": "keys",
		"permissions": []string{"keys:view", "Keys:Create", "Providers:*", "Keys:View"}})
	if r["id"].(float64) < 100 || r["is_system_role"] != false || fmt.Sprint(r["permissions"]) != "[Keys:View Keys:Create Providers:*]" {
		t.Fatalf("created role: %v", r)
	}
	rid := fmt.Sprint(r["id"])

	bad := testgw.WantEnvelope(t, g.Do("POST", "/api/roles", map[string]any{"name": "x", "permissions": []string{"Keys:View", "Keys:Fly"}}), 400, "unknown_permission")
	if e := bad["error"].(map[string]any); e["param"] != "permissions[1]" || !strings.Contains(e["message"].(string), "Keys:Fly") {
		t.Fatalf("unknown permission not named: %v", e)
	}
	testgw.WantEnvelope(t, g.Do("POST", "/api/roles", map[string]any{"name": "x", "permissions": []string{"Nope:*"}}), 400, "unknown_permission")
	testgw.WantEnvelope(t, g.Do("POST", "/api/roles", map[string]any{"name": "x"}), 400, "missing_field")
	testgw.WantEnvelope(t, g.Do("POST", "/api/roles", map[string]any{"name": "KEY-MANAGER", "permissions": []string{}}), 409, "role_name_taken")
	testgw.WantEnvelope(t, g.Do("POST", "/api/roles", map[string]any{"name": "Viewer", "permissions": []string{}}), 409, "role_name_taken")
	testgw.WantEnvelope(t, g.Do("PUT", "/api/roles/1", map[string]any{"description": "mine"}), 409, "system_role_immutable")
	testgw.WantEnvelope(t, g.Do("DELETE", "/api/roles/3", nil), 409, "system_role_immutable")
	testgw.WantEnvelope(t, g.Do("GET", "/api/roles/abc", nil), 400, "invalid_parameter")
	testgw.WantEnvelope(t, g.Do("GET", "/api/roles/999", nil), 404, "not_found")

	// Rename (also case only) and replace permissions.
	u := g.Expect(200, "PUT", "/api/roles/"+rid, map[string]any{"name": "Key-Manager", "permissions": []string{"Keys:View"}}).Map(t)
	if u["name"] != "Key-Manager" || fmt.Sprint(u["permissions"]) != "[Keys:View]" || u["description"] != "keys" {
		t.Fatalf("update: %v", u)
	}
	// In use: 409 until the holder moves.
	user := create(t, g, "/api/users", map[string]any{"name": "k", "email": "k@example.com", "role_id": r["id"]})
	if user["role"].(map[string]any)["name"] != "Key-Manager" {
		t.Fatalf("user role: %v", user)
	}
	testgw.WantEnvelope(t, g.Do("DELETE", "/api/roles/"+rid, nil), 409, "role_in_use")
	g.Expect(200, "PUT", "/api/users/"+user["id"].(string), map[string]any{"role_id": 3})
	g.Expect(200, "DELETE", "/api/roles/"+rid, nil)
	testgw.WantEnvelope(t, g.Do("GET", "/api/roles/"+rid, nil), 404, "not_found")
	// The name is free again and ids are not reused.
	r2 := create(t, g, "/api/roles", map[string]any{"name": "key-manager", "permissions": []string{"*"}})
	if r2["id"].(float64) <= r["id"].(float64) {
		t.Fatalf("role id reused: %v after %v", r2["id"], r["id"])
	}

	p := g.Expect(200, "GET", "/api/permissions", nil).Map(t)
	if !strings.Contains(fmt.Sprint(p["permissions"]), "Roles:Create") || p["count"].(float64) < 20 {
		t.Fatalf("permissions: %v", p)
	}
}

func TestAccessProfilesCRUD(t *testing.T) {
	g := testgw.New(t)
	u := create(t, g, "/api/users", map[string]any{"name": "p", "email": "p@example.com"})
	uid := u["id"].(string)
	tpl := create(t, g, "/api/governance/access-profiles", map[string]any{"name": "oncall template", "permissions": []string{"Logs:*"}})
	if tpl["id"].(float64) != 1 || tpl["user_id"] != "" || tpl["is_active"] != true || tpl["parent_profile_id"] != nil {
		t.Fatalf("template: %v", tpl)
	}
	exp := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	p := create(t, g, "/api/governance/access-profiles", map[string]any{"name": "oncall", "user_id": uid,
		"parent_profile_id": 1, "expires_at": exp, "permissions": []string{"Providers:Update"}})
	pid := fmt.Sprint(p["id"])
	for _, f := range []string{"id", "user_id", "parent_profile_id", "name", "is_active", "expires_at", "created_at", "updated_at"} {
		if _, ok := p[f]; !ok {
			t.Errorf("profile lacks spec field %s", f)
		}
	}
	view := g.Expect(200, "GET", "/api/users/"+uid, nil).Map(t)
	if len(view["access_profiles"].([]any)) != 1 || view["access_profile"].(map[string]any)["name"] != "oncall" {
		t.Fatalf("user view profiles: %v", view)
	}

	for _, c := range []struct {
		body  map[string]any
		param string
	}{
		{map[string]any{"name": "x", "user_id": "nobody"}, "user_id"},
		{map[string]any{"name": "x", "parent_profile_id": 77}, "parent_profile_id"},
		{map[string]any{"name": "x", "expires_at": time.Now().Add(-time.Minute)}, "expires_at"},
		{map[string]any{"name": "x", "permissions": []string{"Teleport:Now"}}, "permissions[0]"},
		{map[string]any{"user_id": uid}, "name"},
	} {
		m := testgw.WantEnvelope(t, g.Do("POST", "/api/governance/access-profiles", c.body), 400, "")
		if got := m["error"].(map[string]any)["param"]; got != c.param {
			t.Errorf("%v: param %v, want %s", c.body, got, c.param)
		}
	}
	// A parent chain cannot loop back.
	testgw.WantEnvelope(t, g.Do("PUT", "/api/governance/access-profiles/1", map[string]any{"name": "t", "parent_profile_id": p["id"]}), 400, "invalid_value")
	testgw.WantEnvelope(t, g.Do("PUT", "/api/governance/access-profiles/1", map[string]any{"name": "t", "parent_profile_id": 1}), 400, "invalid_value")

	// PUT replaces: is_active false, expiry removed.
	r := g.Expect(200, "PUT", "/api/governance/access-profiles/"+pid, map[string]any{"name": "oncall", "user_id": uid, "is_active": false}).Map(t)
	if r["is_active"] != false || r["expires_at"] != nil || r["parent_profile_id"] != nil || r["created_at"] != p["created_at"] {
		t.Fatalf("replace: %v", r)
	}
	if v := g.Expect(200, "GET", "/api/users/"+uid, nil).Map(t); v["access_profile"] != nil {
		t.Fatalf("inactive profile shown as effective: %v", v["access_profile"])
	}
	if m := g.Expect(200, "GET", "/api/governance/access-profiles?user_id="+uid, nil).Map(t); m["total_count"].(float64) != 1 {
		t.Fatalf("user filter: %v", m)
	}
	if m := g.Expect(200, "GET", "/api/governance/access-profiles?is_active=true", nil).Map(t); m["total_count"].(float64) != 1 {
		t.Fatalf("active filter: %v", m)
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/governance/access-profiles?is_active=maybe", nil), 400, "invalid_parameter")

	// The audit-log route under the same prefix still answers, and saw these mutations.
	al := g.Expect(200, "GET", "/api/governance/access-profiles/audit-logs?action=AccessProfiles.Create", nil).Map(t)
	if al["total_count"].(float64) < 2 {
		t.Fatalf("audit logs: %v", al)
	}

	// Deleting the user deletes their profiles.
	g.Expect(200, "DELETE", "/api/users/"+uid, nil)
	testgw.WantEnvelope(t, g.Do("GET", "/api/governance/access-profiles/"+pid, nil), 404, "not_found")
	g.Expect(200, "DELETE", "/api/governance/access-profiles/1", nil)
	testgw.WantEnvelope(t, g.Do("DELETE", "/api/governance/access-profiles/1", nil), 404, "not_found")
}

func TestViewerLogin(t *testing.T) {
	g := authed(t)
	u := create(t, g, "/api/users", map[string]any{"name": "Vic", "email": "vic@example.com", "password": "viewer-password", "role_id": 3})
	tok := login(t, g, "VIC@example.com", "viewer-password")

	as := bearer(tok)
	g.Auth = testgw.NoAuth
	if r := g.Do("GET", "/api/providers", nil, as); r.Status != 200 {
		t.Fatalf("viewer GET providers: %d %s", r.Status, r.Body)
	}
	m := testgw.WantEnvelope(t, g.Do("POST", "/api/providers", map[string]any{"name": "openai"}, as), 403, "missing_permission")
	if e := m["error"].(map[string]any); e["type"] != "permission_error" || !strings.Contains(e["message"].(string), "Providers:Create") {
		t.Fatalf("403 does not name the permission: %v", e)
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/users", nil, as), 403, "missing_permission")
	// The cookie carries the same session.
	if r := g.Do("GET", "/api/providers", nil, func(r *http.Request) { r.Header.Set("Cookie", "gateway_session="+tok) }); r.Status != 200 {
		t.Fatalf("cookie: %d %s", r.Status, r.Body)
	}
	if is := g.Do("GET", "/api/session/is-auth-enabled", nil, as).Map(t); is["has_valid_token"] != true {
		t.Fatalf("is-auth-enabled: %v", is)
	}
	// Wrong password and unknown email look alike.
	testgw.WantEnvelope(t, g.Do("POST", "/api/session/login", map[string]any{"email": "vic@example.com", "password": "wrong-password"}), 401, "invalid_credentials")
	testgw.WantEnvelope(t, g.Do("POST", "/api/session/login", map[string]any{"email": "nobody@example.com", "password": "wrong-password"}), 401, "invalid_credentials")
	// The admin login keeps working, and a username that is an email reaches users.
	if r := g.Do("POST", "/api/session/login", map[string]any{"username": "admin", "password": adminPass}); r.Status != 200 {
		t.Fatalf("admin login: %d %s", r.Status, r.Body)
	}
	if r := g.Do("POST", "/api/session/login", map[string]any{"username": "vic@example.com", "password": "viewer-password"}); r.Status != 200 {
		t.Fatalf("login by username field: %d %s", r.Status, r.Body)
	}

	// A role change applies to the live session at once.
	adm := basic("admin", adminPass)
	id := u["id"].(string)
	if r := g.Do("PUT", "/api/users/"+id, map[string]any{"role_id": 2}, adm); r.Status != 200 {
		t.Fatalf("promote: %d %s", r.Status, r.Body)
	}
	if r := g.Do("POST", "/api/providers", map[string]any{"name": "openai"}, as); r.Status != 201 {
		t.Fatalf("developer create provider: %d %s", r.Status, r.Body)
	}
	// Deleting the user ends the session.
	if r := g.Do("DELETE", "/api/users/"+id, nil, adm); r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/providers", nil, as), 401, "invalid_credentials")
}

func TestAccessProfileGrantsPermissions(t *testing.T) {
	clk := &clock{t: time.Now()}
	g := authed(t, server.WithClock(clk.now))
	role := create(t, g, "/api/roles", map[string]any{"name": "reader", "permissions": []string{"Providers:View"}})
	u := create(t, g, "/api/users", map[string]any{"name": "o", "email": "o@example.com", "password": "oncall-password", "role_id": role["id"]})
	tok := bearer(login(t, g, "o@example.com", "oncall-password"))
	want := func(status int, what string) {
		t.Helper()
		r := g.Do("GET", "/api/webhooks", nil, func(r *http.Request) { r.Header.Del("Authorization") }, tok)
		if r.Status != status {
			t.Fatalf("%s: GET /api/webhooks %d, want %d: %s", what, r.Status, status, r.Body)
		}
	}
	want(403, "role alone")
	tpl := create(t, g, "/api/governance/access-profiles", map[string]any{"name": "webhook template", "permissions": []string{"Webhooks:View"}})
	tplPath := fmt.Sprint("/api/governance/access-profiles/", tpl["id"])
	p := create(t, g, "/api/governance/access-profiles", map[string]any{"name": "hook reader", "user_id": u["id"],
		"parent_profile_id": tpl["id"], "expires_at": clk.now().Add(time.Hour)})
	pPath := fmt.Sprint("/api/governance/access-profiles/", p["id"])
	want(200, "inherited from the parent profile")

	// An inactive parent stops granting through the chain.
	g.Expect(200, "PUT", tplPath, map[string]any{"name": "webhook template", "permissions": []string{"Webhooks:View"}, "is_active": false})
	want(403, "parent inactive")
	g.Expect(200, "PUT", tplPath, map[string]any{"name": "webhook template", "permissions": []string{"Webhooks:View"}})
	want(200, "parent active again")

	// Expiry, by the injected clock.
	clk.add(time.Hour + time.Second)
	want(403, "profile expired")
	if v := g.Expect(200, "GET", fmt.Sprint("/api/users/", u["id"]), nil).Map(t); v["access_profile"] != nil {
		t.Fatalf("expired profile shown as effective: %v", v["access_profile"])
	}
	// Extending it (the stored past expiry may be re-sent unchanged, a new one must be future).
	g.Expect(200, "PUT", pPath, map[string]any{"name": "hook reader", "user_id": u["id"], "parent_profile_id": tpl["id"]})
	want(200, "expiry removed")
	g.Expect(200, "DELETE", pPath, nil)
	want(403, "profile deleted")
}

// TestNoPrivilegeEscalation: a non-admin caller cannot hand out, or take
// over, more than it holds.
func TestNoPrivilegeEscalation(t *testing.T) {
	g := authed(t)
	role := create(t, g, "/api/roles", map[string]any{"name": "user-manager",
		"permissions": []string{"Users:*", "Roles:*", "AccessProfiles:*", "Providers:View"}})
	boss := create(t, g, "/api/users", map[string]any{"name": "root", "email": "root@example.com", "role_id": 1})
	create(t, g, "/api/users", map[string]any{"name": "m", "email": "m@example.com", "password": "manager-password", "role_id": role["id"]})
	tok := bearer(login(t, g, "m@example.com", "manager-password"))
	as := func(method, path string, body any) *testgw.Response {
		return g.Do(method, path, body, func(r *http.Request) { r.Header.Del("Authorization") }, tok)
	}
	testgw.WantEnvelope(t, as("POST", "/api/roles", map[string]any{"name": "god", "permissions": []string{"*"}}), 403, "privilege_escalation")
	testgw.WantEnvelope(t, as("POST", "/api/roles", map[string]any{"name": "p", "permissions": []string{"Providers:*"}}), 403, "privilege_escalation")
	testgw.WantEnvelope(t, as("POST", "/api/users", map[string]any{"name": "x", "email": "x@example.com", "role_id": 1}), 403, "privilege_escalation")
	testgw.WantEnvelope(t, as("PUT", fmt.Sprint("/api/users/", boss["id"]), map[string]any{"password": "taken-over!"}), 403, "privilege_escalation")
	testgw.WantEnvelope(t, as("DELETE", fmt.Sprint("/api/users/", boss["id"]), nil), 403, "privilege_escalation")
	testgw.WantEnvelope(t, as("POST", "/api/governance/access-profiles", map[string]any{"name": "x", "permissions": []string{"Settings:Update"}}), 403, "privilege_escalation")
	// Within its own permissions it may act.
	if r := as("POST", "/api/roles", map[string]any{"name": "reader", "permissions": []string{"Providers:View"}}); r.Status != 201 {
		t.Fatalf("grant held permission: %d %s", r.Status, r.Body)
	}
	if r := as("POST", "/api/users", map[string]any{"name": "v", "email": "v@example.com", "role_id": role["id"]}); r.Status != 201 {
		t.Fatalf("create peer: %d %s", r.Status, r.Body)
	}
}

func TestMembershipListings(t *testing.T) {
	dir := fakeDirectory{teams: map[string]string{"t1": "Platform", "t2": "Research"}, vks: map[string]bool{"vk1": true, "vk2": true}}
	g := testgw.Start(t, testgw.Options{ServerOptions: []server.Option{server.WithDirectory(dir)}})
	a := create(t, g, "/api/users", map[string]any{"name": "A", "email": "a@example.com", "team_ids": []string{"t1", "t2", "t1"}, "virtual_key_ids": []string{"vk1"}})
	create(t, g, "/api/users", map[string]any{"name": "B", "email": "b@example.com", "team_ids": []string{"t1"}})
	if fmt.Sprint(a["teams"]) != "[map[id:t1 name:Platform] map[id:t2 name:Research]]" || fmt.Sprint(a["virtual_key_ids"]) != "[vk1]" {
		t.Fatalf("user teams: %v %v", a["teams"], a["virtual_key_ids"])
	}
	testgw.WantEnvelope(t, g.Do("POST", "/api/users", map[string]any{"name": "C", "email": "c@example.com", "virtual_key_ids": []string{"vk9"}}), 400, "invalid_value")

	m := g.Expect(200, "GET", "/api/governance/teams/t1/members", nil).Map(t)
	members := m["members"].([]any)
	if len(members) != 2 {
		t.Fatalf("members: %v", m)
	}
	first := members[0].(map[string]any)
	if first["user_id"] != a["id"] || first["user_name"] != "A" || first["user_email"] != "a@example.com" || first["source"] != "direct" {
		t.Fatalf("member row: %v", first)
	}
	alias := g.Expect(200, "GET", "/api/teams/t2/members", nil)
	if alias.Header.Get("Deprecation") != "true" || !strings.Contains(alias.Header.Get("Link"), "/api/governance/teams/{team_id}/members") {
		t.Fatalf("alias headers: %v", alias.Header)
	}
	if n := len(alias.Map(t)["members"].([]any)); n != 1 {
		t.Fatalf("t2 members: %d", n)
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/governance/teams/t9/members", nil), 404, "not_found")
	testgw.WantEnvelope(t, g.Do("GET", "/api/teams/t9/members", nil), 404, "not_found")

	v := g.Expect(200, "GET", "/api/governance/virtual-keys/vk1/users", nil).Map(t)
	if v["count"].(float64) != 1 || v["users"].([]any)[0].(map[string]any)["email"] != "a@example.com" {
		t.Fatalf("vk users: %v", v)
	}
	if v := g.Expect(200, "GET", "/api/governance/virtual-keys/vk2/users", nil).Map(t); v["count"].(float64) != 0 || v["users"] == nil {
		t.Fatalf("vk2 users: %v", v)
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/governance/virtual-keys/vk9/users", nil), 404, "not_found")

	// Leaving a team is replacing the list.
	g.Expect(200, "PUT", fmt.Sprint("/api/users/", a["id"]), map[string]any{"team_ids": []string{"t2"}})
	if n := len(g.Expect(200, "GET", "/api/governance/teams/t1/members", nil).Map(t)["members"].([]any)); n != 1 {
		t.Fatalf("t1 members after leaving: %d", n)
	}

	// Without a directory every team and virtual key is unknown.
	bare := testgw.New(t)
	testgw.WantEnvelope(t, bare.Do("GET", "/api/governance/teams/t1/members", nil), 404, "not_found")
	testgw.WantEnvelope(t, bare.Do("GET", "/api/governance/virtual-keys/vk1/users", nil), 404, "not_found")
}

// TestAPIKeysWithinCreator: a user allowed to create management API keys
// cannot mint one wider than their own permissions.
func TestAPIKeysWithinCreator(t *testing.T) {
	g := authed(t)
	role := create(t, g, "/api/roles", map[string]any{"name": "key-minter", "permissions": []string{"APIKeys:Create", "Providers:View"}})
	create(t, g, "/api/users", map[string]any{"name": "k", "email": "k@example.com", "password": "minter-password", "role_id": role["id"]})
	tok := bearer(login(t, g, "k@example.com", "minter-password"))
	as := func(body any) *testgw.Response {
		return g.Do("POST", "/api/auth/api-keys", body, func(r *http.Request) { r.Header.Del("Authorization") }, tok)
	}
	for _, scopes := range [][]string{{"*"}, {"Providers:*"}, {"Providers:View", "Providers:Create"}} {
		testgw.WantEnvelope(t, as(map[string]any{"name": "x", "scopes": scopes}), 403, "privilege_escalation")
	}
	if r := as(map[string]any{"name": "ok", "scopes": []string{"providers:view"}}); r.Status != 201 {
		t.Fatalf("key within own permissions: %d %s", r.Status, r.Body)
	}
}

// TestPasswordChangeEndsSessions: sessions opened before a password change
// stop working; a login with the new password works.
func TestPasswordChangeEndsSessions(t *testing.T) {
	g := authed(t)
	u := create(t, g, "/api/users", map[string]any{"name": "s", "email": "s@example.com", "password": "first-password"})
	old := bearer(login(t, g, "s@example.com", "first-password"))
	noAdmin := func(r *http.Request) { r.Header.Del("Authorization") }
	if r := g.Do("GET", "/api/providers", nil, noAdmin, old); r.Status != 200 {
		t.Fatalf("before change: %d %s", r.Status, r.Body)
	}
	g.Expect(200, "PUT", fmt.Sprint("/api/users/", u["id"]), map[string]any{"name": "renamed"})
	if r := g.Do("GET", "/api/providers", nil, noAdmin, old); r.Status != 200 {
		t.Fatalf("a change other than the password ended the session: %d %s", r.Status, r.Body)
	}
	g.Expect(200, "PUT", fmt.Sprint("/api/users/", u["id"]), map[string]any{"password": "second-password"})
	testgw.WantEnvelope(t, g.Do("GET", "/api/providers", nil, noAdmin, old), 401, "invalid_credentials")
	testgw.WantEnvelope(t, g.Do("POST", "/api/session/login", map[string]any{"email": "s@example.com", "password": "first-password"}, noAdmin), 401, "invalid_credentials")
	fresh := bearer(login(t, g, "s@example.com", "second-password"))
	if r := g.Do("GET", "/api/providers", nil, noAdmin, fresh); r.Status != 200 {
		t.Fatalf("new session: %d %s", r.Status, r.Body)
	}
}

// TestConcurrentSameEmail: of many concurrent creates with one address,
// exactly one succeeds and the rest get 409.
func TestConcurrentSameEmail(t *testing.T) {
	g := testgw.New(t)
	const n = 16
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes <- g.Do("POST", "/api/users", map[string]any{"name": fmt.Sprint("u", i), "email": "same@example.com"}).Status
		}()
	}
	wg.Wait()
	close(codes)
	got := map[int]int{}
	for c := range codes {
		got[c]++
	}
	if got[201] != 1 || got[409] != n-1 {
		t.Fatalf("statuses %v, want one 201 and %d 409", got, n-1)
	}
	if m := g.Expect(200, "GET", "/api/users?email=same@", nil).Map(t); m["total_count"].(float64) != 1 {
		t.Fatalf("users with the address: %v", m["total_count"])
	}
}

// TestNoTakeoverOfProfileGrants: what a user's access profiles grant counts
// like their role, so a caller cannot set the password of (and so become) a
// peer whose profile grants more than the caller holds.
func TestNoTakeoverOfProfileGrants(t *testing.T) {
	g := authed(t)
	role := create(t, g, "/api/roles", map[string]any{"name": "user-manager",
		"permissions": []string{"Users:*", "Providers:View"}})
	create(t, g, "/api/users", map[string]any{"name": "m", "email": "m@example.com", "password": "manager-password", "role_id": role["id"]})
	boss := create(t, g, "/api/users", map[string]any{"name": "boss", "email": "boss@example.com", "role_id": role["id"]})
	create(t, g, "/api/governance/access-profiles", map[string]any{"name": "break glass", "user_id": boss["id"], "permissions": []string{"*"}})
	peer := create(t, g, "/api/users", map[string]any{"name": "peer", "email": "peer@example.com", "role_id": role["id"]})
	tok := bearer(login(t, g, "m@example.com", "manager-password"))
	as := func(method, path string, body any) *testgw.Response {
		return g.Do(method, path, body, func(r *http.Request) { r.Header.Del("Authorization") }, tok)
	}
	testgw.WantEnvelope(t, as("PUT", fmt.Sprint("/api/users/", boss["id"]), map[string]any{"password": "taken-over!"}), 403, "privilege_escalation")
	testgw.WantEnvelope(t, as("DELETE", fmt.Sprint("/api/users/", boss["id"]), nil), 403, "privilege_escalation")
	// A peer without such a profile is within the manager's permissions.
	if r := as("PUT", fmt.Sprint("/api/users/", peer["id"]), map[string]any{"name": "peer 2"}); r.Status != 200 {
		t.Fatalf("change peer: %d %s", r.Status, r.Body)
	}
}
