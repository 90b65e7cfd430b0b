package server_test

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/internal/testgw"
)

// TestEveryManagementRouteEnforcesItsPermission walks the routes Fiber
// actually serves (not just the declared table): every route under /api,
// /metrics and /ws must be in the route table (so none is registered
// around the permission check), writes must not declare a View permission,
// and every non-public one must answer 401 without credentials and 403 to a
// management API key holding every declared permission except its own.
func TestEveryManagementRouteEnforcesItsPermission(t *testing.T) {
	g := testgw.New(t, "GATEWAY_AUTH_CONFIG__ADMIN_USERNAME=admin", "GATEWAY_AUTH_CONFIG__ADMIN_PASSWORD=correct horse")
	g.Auth = testgw.NoAuth
	adm := func(r *http.Request) { r.SetBasicAuth("admin", "correct horse") }

	declared := map[string]string{} // "METHOD path" -> permission or kind
	perms := map[string]bool{}
	for _, r := range g.Server.Routes() {
		id := r.Method + " " + r.Path
		declared[id] = r.Permission
		if r.Kind == "management" {
			perms[r.Permission] = true
		}
	}
	management := func(path string) bool {
		return path == "/api" || strings.HasPrefix(path, "/api/") || path == "/metrics" || path == "/ws"
	}
	served := map[string]bool{}
	for _, r := range g.Server.App().GetRoutes(true) {
		if !management(r.Path) || r.Method == http.MethodHead {
			continue
		}
		id := r.Method + " " + r.Path
		served[id] = true
		if _, ok := declared[id]; !ok {
			t.Errorf("%s is served but not registered through auth.Router (no permission check)", id)
		}
	}

	// One key per permission, holding all the others.
	keys := map[string]func(*http.Request){}
	all := make([]string, 0, len(perms))
	for p := range perms {
		all = append(all, p)
	}
	sort.Strings(all)
	for _, p := range all {
		others := make([]string, 0, len(all)-1)
		for _, o := range all {
			if o != p {
				others = append(others, o)
			}
		}
		r := g.Do("POST", "/api/auth/api-keys", map[string]any{"name": "all-but-" + p, "scopes": others}, adm)
		if r.Status != 201 {
			t.Fatalf("mint key without %s: %d %s", p, r.Status, r.Body)
		}
		tok := r.JSON(t)["key"].(string)
		keys[p] = func(req *http.Request) { req.Header.Set("Authorization", "Bearer "+tok) }
	}

	checked := 0
	for _, r := range g.Server.Routes() {
		id := r.Method + " " + r.Path
		if !served[id] {
			t.Errorf("%s is in the route table but not served", id)
		}
		if r.Kind != "management" {
			continue
		}
		_, op, _ := strings.Cut(r.Permission, ":")
		if write := r.Method != http.MethodGet; write == strings.EqualFold(op, "View") {
			t.Errorf("%s declares %s: reads need View, writes a write operation", id, r.Permission)
		}
		path := strings.ReplaceAll(param.ReplaceAllString(r.Path, "x"), "*", "x")
		testgw.WantEnvelope(t, g.Do(r.Method, path, nil), 401, "missing_credentials")
		m := testgw.WantEnvelope(t, g.Do(r.Method, path, nil, keys[r.Permission]), 403, "missing_permission")
		if msg := fmt.Sprint(m["error"]); !strings.Contains(msg, r.Permission) {
			t.Errorf("%s: 403 does not name %s: %s", id, r.Permission, msg)
		}
		checked++
	}
	if checked < 50 {
		t.Fatalf("only %d management routes checked", checked)
	}
	t.Logf("%d management routes checked", checked)
}
