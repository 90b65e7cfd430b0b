package users_test

import (
	"bytes"
	"flag"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/auth"
	"github.com/wasmgate/gateway/host/internal/testgw"
)

var update = flag.Bool("update", false, "rewrite the permission table in docs/rbac.md")

var pathParam = regexp.MustCompile(`:[a-zA-Z_]+\??`)

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestEveryMissingPermissionIs403 walks the whole route table: for each
// management route, a management API key holding every permission but the
// route's, and a user whose custom role holds every permission but the
// route's, both get 403 naming that permission. A control user holding all
// permissions (as an explicit list, not "*") is never refused.
func TestEveryMissingPermissionIs403(t *testing.T) {
	g := authed(t)
	all := strs(g.Expect(200, "GET", "/api/permissions", nil).Map(t)["permissions"])
	role := create(t, g, "/api/roles", map[string]any{"name": "all-but-one", "permissions": all})
	roleID := fmt.Sprint(role["id"])
	create(t, g, "/api/users", map[string]any{"name": "t", "email": "t@example.com", "password": "table-password", "role_id": role["id"]})
	userTok := login(t, g, "t@example.com", "table-password")

	byPerm := map[string][]auth.RouteInfo{}
	for _, r := range g.Server.Routes() {
		if r.Kind == "management" {
			byPerm[r.Permission] = append(byPerm[r.Permission], r)
		}
	}
	if len(byPerm) != len(all) {
		t.Fatalf("%d permissions in the route table, %d listed by /api/permissions", len(byPerm), len(all))
	}
	call := func(r auth.RouteInfo, tok string) *testgw.Response {
		return g.Do(r.Method, pathParam.ReplaceAllString(r.Path, "x"), nil,
			func(q *http.Request) { q.Header.Set("Authorization", "Bearer "+tok) })
	}
	// Control: with every permission granted no permission is missing (a
	// route may still refuse the credential kind or the empty body).
	for _, rs := range byPerm {
		for _, r := range rs {
			if resp := call(r, userTok); strings.Contains(string(resp.Body), `"missing_permission"`) {
				t.Fatalf("control: %s %s refused with every permission: %d %s", r.Method, r.Path, resp.Status, resp.Body)
			}
		}
	}
	routes := 0
	for perm, rs := range byPerm {
		rest := slices.DeleteFunc(slices.Clone(all), func(p string) bool { return p == perm })
		key := create(t, g, "/api/auth/api-keys", map[string]any{"name": "all-but-" + perm, "scopes": rest})["key"].(string)
		g.Expect(200, "PUT", "/api/roles/"+roleID, map[string]any{"permissions": rest})
		for _, r := range rs {
			for who, tok := range map[string]string{"api key": key, "user": userTok} {
				m := testgw.WantEnvelope(t, call(r, tok), 403, "missing_permission")
				e := m["error"].(map[string]any)
				if e["type"] != "permission_error" || !strings.Contains(e["message"].(string), perm) {
					t.Errorf("%s %s as %s: 403 does not name %s: %v", r.Method, r.Path, who, perm, e)
				}
			}
			routes++
		}
	}
	t.Logf("%d routes, %d permissions checked", routes, len(byPerm))
}

// TestRBACDocUpToDate keeps the permission table of docs/rbac.md equal to
// the route table and the system roles' permissions. Run
// `go test ./host/users -run TestRBACDocUpToDate -update` to regenerate it.
func TestRBACDocUpToDate(t *testing.T) {
	g := testgw.New(t)
	dev := strs(g.Expect(200, "GET", "/api/roles/2", nil).Map(t)["permissions"])
	viewer := strs(g.Expect(200, "GET", "/api/roles/3", nil).Map(t)["permissions"])
	mark := func(perms []string, p string) string {
		if slices.Contains(perms, p) {
			return "yes"
		}
		return ""
	}
	var b bytes.Buffer
	b.WriteString("| method | path | permission | admin | developer | viewer |\n|---|---|---|---|---|---|\n")
	for _, r := range g.Server.Routes() {
		switch r.Kind {
		case "management":
			fmt.Fprintf(&b, "| %s | `%s` | %s | yes | %s | %s |\n", r.Method, r.Path, r.Permission, mark(dev, r.Permission), mark(viewer, r.Permission))
		default:
			fmt.Fprintf(&b, "| %s | `%s` | %s | - | - | - |\n", r.Method, r.Path, r.Kind)
		}
	}
	const begin, end = "<!-- BEGIN PERMISSION TABLE (generated) -->\n", "<!-- END PERMISSION TABLE -->"
	path := "../../docs/rbac.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("%s lacks the permission table markers", path)
	}
	cur := doc[i+len(begin) : j]
	if bytes.Equal(cur, b.Bytes()) {
		return
	}
	if *update {
		out := append(append(append([]byte{}, doc[:i+len(begin)]...), b.Bytes()...), doc[j:]...)
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("docs/rbac.md's permission table is out of date; run: go test ./host/users -run TestRBACDocUpToDate -update")
}
