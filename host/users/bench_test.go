package users_test

import (
	"net/http"
	"testing"

	"github.com/wasmgate/gateway/host/internal/testgw"
)

// BenchmarkManagementRequest compares one management request (GET
// /api/roles/3 through the Fiber app) authenticated by an admin session,
// which bypasses checks, and by a user session, whose permissions (role and
// two access profiles, one with a parent) are resolved from the store on
// every request. The difference is the cost of per-request resolution.
func BenchmarkManagementRequest(b *testing.B) {
	g := testgw.Start(b, testgw.Options{Env: []string{"GATEWAY_AUTH_CONFIG__ADMIN_USERNAME=admin", "GATEWAY_AUTH_CONFIG__ADMIN_PASSWORD=" + adminPass}})
	g.Auth = basic("admin", adminPass)
	role := g.Expect(201, "POST", "/api/roles", map[string]any{"name": "r", "permissions": []string{"Roles:View"}}).Map(b)
	u := g.Expect(201, "POST", "/api/users", map[string]any{"name": "b", "email": "b@example.com", "password": "bench-password", "role_id": role["id"]}).Map(b)
	tpl := g.Expect(201, "POST", "/api/governance/access-profiles", map[string]any{"name": "t", "permissions": []string{"Logs:View"}}).Map(b)
	g.Expect(201, "POST", "/api/governance/access-profiles", map[string]any{"name": "p1", "user_id": u["id"], "parent_profile_id": tpl["id"], "permissions": []string{"Webhooks:View"}})
	g.Expect(201, "POST", "/api/governance/access-profiles", map[string]any{"name": "p2", "user_id": u["id"], "permissions": []string{"Keys:View"}})
	g.Auth = testgw.NoAuth
	tokens := map[string]string{}
	for name, body := range map[string]any{
		"admin_session": map[string]any{"username": "admin", "password": adminPass},
		"user_session":  map[string]any{"email": "b@example.com", "password": "bench-password"},
	} {
		tokens[name] = g.Expect(200, "POST", "/api/session/login", body).Map(b)["token"].(string)
	}
	for _, name := range []string{"admin_session", "user_session"} {
		tok := tokens[name]
		b.Run(name, func(b *testing.B) {
			as := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
			for b.Loop() {
				if r := g.Do("GET", "/api/roles/3", nil, as); r.Status != 200 {
					b.Fatalf("%d %s", r.Status, r.Body)
				}
			}
		})
	}
}
