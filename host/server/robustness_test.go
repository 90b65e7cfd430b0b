package server_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/internal/testgw"
)

var param = regexp.MustCompile(`:[a-zA-Z_]+\??`)

// TestEveryRouteRejectsBadBodies feeds every registered /api route that
// takes a body malformed JSON, wrong types and an oversized body: each must
// answer a 4xx envelope, never a 5xx or a panic.
func TestEveryRouteRejectsBadBodies(t *testing.T) {
	g := testgw.New(t, "GATEWAY_SERVER__MANAGEMENT_MAX_BODY_BYTES=4096", "GATEWAY_SERVER__PLUGIN_UPLOAD_MAX_BYTES=4096")
	bodies := []string{
		`{"name":`, `[]`, `"just a string"`, `12`, `null`, `{"name": 123, "value": {}, "enabled": "yes"}`,
		`{"unknown_field_xyz": true}`, "\x00\xff\xfe", `{"a":` + strings.Repeat("[", 10000),
	}
	oversized := `{"name":"` + strings.Repeat("x", 5000) + `"}`
	checked := 0
	for _, r := range g.Server.Routes() {
		if r.Method != "POST" && r.Method != "PUT" && r.Method != "PATCH" {
			continue
		}
		path := param.ReplaceAllString(r.Path, "x")
		for _, b := range append(bodies, oversized) {
			resp := g.Do(r.Method, path, b)
			if resp.Status < 400 || resp.Status >= 500 {
				// A few routes legitimately take no body (logout, setup):
				// they may succeed, but must never fail with 5xx.
				if resp.Status < 400 && bodyless(r.Path) {
					continue
				}
				t.Errorf("%s %s with %.30q: status %d: %s", r.Method, path, b, resp.Status, resp.Body)
				continue
			}
			testgw.WantEnvelope(t, resp, resp.Status, "")
		}
		resp := g.Do(r.Method, path, oversized)
		if resp.Status != 413 && !bodyless(r.Path) {
			t.Errorf("%s %s oversized: %d", r.Method, path, resp.Status)
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("only %d routes with bodies checked", checked)
	}
	t.Logf("%d routes checked", checked)
}

func bodyless(path string) bool {
	for _, p := range []string{"/logout", "/setup", "/reload", "/enable", "/disable", "/rotate-secret", "/reconnect", "/complete-oauth", "/redeliver", "/test"} {
		if strings.HasSuffix(path, p) {
			return true
		}
	}
	return false
}

// TestEveryRouteDeclaresAPermission checks the route table: every /api route
// has a permission or is explicitly public.
func TestEveryRouteDeclaresAPermission(t *testing.T) {
	g := testgw.New(t)
	public := map[string]bool{
		"GET /api/version": true, "GET /api/session/is-auth-enabled": true, "POST /api/session/login": true,
		"POST /api/session/logout": true, "POST /api/session/setup": true, "GET /api/oauth/callback": true,
	}
	// Routes that authenticate a virtual key themselves instead of
	// management credentials; each was reviewed like a public one.
	virtualKey := map[string]bool{"GET /api/governance/virtual-keys/quota": true}
	for _, r := range g.Server.Routes() {
		id := fmt.Sprintf("%s %s", r.Method, r.Path)
		switch {
		case r.Permission == "":
			t.Errorf("%s has no permission", id)
		case r.Permission == "public" && !public[id]:
			t.Errorf("%s is public but not in the reviewed public list", id)
		case r.Kind == "virtual_key" && !virtualKey[id]:
			t.Errorf("%s takes virtual keys but is not in the reviewed list", id)
		case r.Kind != "virtual_key" && virtualKey[id]:
			t.Errorf("%s is in the virtual-key list but registered as %s", id, r.Kind)
		}
	}
	// Unknown /api routes get the envelope, not Fiber's plain text.
	testgw.WantEnvelope(t, g.Do("GET", "/api/does-not-exist", nil), 404, "route_not_found")
}
