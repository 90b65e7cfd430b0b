package audit_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/internal/testgw"
)

func TestMutationsAreAuditedWithSecretsRedacted(t *testing.T) {
	g := testgw.New(t, "GATEWAY_AUTH_CONFIG__ADMIN_USERNAME=admin", "GATEWAY_AUTH_CONFIG__ADMIN_PASSWORD=audit-password")
	g.Auth = func(r *http.Request) { r.SetBasicAuth("admin", "audit-password") }
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "openai"})
	g.Expect(201, "POST", "/api/providers/openai/keys", map[string]any{"name": "k", "value": "sk-audit-secret-0123456789abcdef"})
	g.Expect(400, "POST", "/api/providers", map[string]any{"name": "not-a-provider"})
	g.Expect(200, "GET", "/api/providers", nil) // reads are not audited

	r := g.Expect(200, "GET", "/api/governance/access-profiles/audit-logs?limit=10", nil)
	if strings.Contains(string(r.Body), "sk-audit-secret") || strings.Contains(string(r.Body), "audit-password") {
		t.Fatalf("audit log leaks a secret: %s", r.Body)
	}
	var out struct {
		AuditLogs []struct {
			Action     string `json:"action"`
			UserID     string `json:"user_id"`
			Outcome    string `json:"outcome"`
			StatusCode int    `json:"status_code"`
		} `json:"audit_logs"`
		TotalCount int `json:"total_count"`
	}
	r.Decode(t, &out)
	if out.TotalCount != 3 || len(out.AuditLogs) != 3 {
		t.Fatalf("want 3 records, got %d: %s", out.TotalCount, r.Body)
	}
	// Newest first.
	if out.AuditLogs[0].Outcome != "failure" || out.AuditLogs[0].StatusCode != 400 {
		t.Fatalf("newest record: %+v", out.AuditLogs[0])
	}
	if a := out.AuditLogs[1]; a.Action != "Keys.Create" || a.UserID != "admin" {
		t.Fatalf("key record: %+v", a)
	}

	// Filters and the deprecated alias.
	r = g.Expect(200, "GET", "/api/audit-logs?action=Providers.Create&user_id=admin", nil)
	if r.Header.Get("Deprecation") != "true" {
		t.Fatal("alias lacks the Deprecation header")
	}
	r.Decode(t, &out)
	if out.TotalCount != 2 {
		t.Fatalf("action filter: %d", out.TotalCount)
	}
	r = g.Expect(200, "GET", "/api/audit-logs?limit=1&offset=1", nil)
	r.Decode(t, &out)
	if len(out.AuditLogs) != 1 || out.TotalCount != 3 {
		t.Fatalf("pagination: %d of %d", len(out.AuditLogs), out.TotalCount)
	}
	for _, bad := range []string{"limit=0", "limit=x", "offset=-1", "start_time=yesterday"} {
		testgw.WantEnvelope(t, g.Do("GET", fmt.Sprintf("/api/audit-logs?%s", bad), nil), 400, "invalid_parameter")
	}
}
