package mcp_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/server"
)

// mcpServer is the Go SDK test server (testdata/mcpserver), built once.
var mcpServer string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wasmgate-mcp-test")
	if err != nil {
		panic(err)
	}
	mcpServer = filepath.Join(dir, "mcpserver")
	if out, err := exec.Command("go", "build", "-o", mcpServer, "./testdata/mcpserver").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build mcpserver: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// clock is a settable clock for flow expiry.
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

func stdioClient(name string, extra map[string]any) map[string]any {
	m := map[string]any{"name": name, "connection_type": "stdio",
		"stdio_config": map[string]any{"command": mcpServer, "args": []string{"-stdio"}}}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func TestCreateValidation(t *testing.T) {
	g := testgw.New(t)
	cases := []struct {
		body  any
		param string
	}{
		{map[string]any{"connection_type": "http", "connection_string": "https://mcp.example.com/mcp"}, "name"},
		{map[string]any{"name": "a-b", "connection_type": "http", "connection_string": "https://mcp.example.com/mcp"}, "name"},
		{map[string]any{"name": "a", "connection_type": "grpc", "connection_string": "https://mcp.example.com"}, "connection_type"},
		{map[string]any{"name": "a", "connection_type": "http"}, "connection_string"},
		{map[string]any{"name": "a", "connection_type": "http", "connection_string": "ftp://mcp.example.com"}, "connection_string"},
		{map[string]any{"name": "a", "connection_type": "http", "connection_string": "https://u:p@mcp.example.com"}, "connection_string"},
		{map[string]any{"name": "a", "connection_type": "stdio"}, "stdio_config.command"},
		{map[string]any{"name": "a", "connection_type": "stdio", "auth_type": "oauth", "stdio_config": map[string]any{"command": "x"}}, "auth_type"},
		{map[string]any{"name": "a", "connection_type": "http", "connection_string": "https://mcp.example.com", "auth_type": "oauth"}, "oauth_config"},
		{map[string]any{"name": "a", "connection_type": "http", "connection_string": "https://mcp.example.com", "auth_type": "headers"}, "headers"},
		{map[string]any{"name": "a", "connection_type": "http", "connection_string": "https://mcp.example.com", "auth_type": "basic"}, "auth_type"},
		{map[string]any{"name": "a", "connection_type": "http", "connection_string": "https://mcp.example.com", "tools_to_execute": []string{""}}, "tools_to_execute[0]"},
		{map[string]any{"name": "a", "connection_type": "http", "connection_string": "https://mcp.example.com", "colour": 1}, "colour"},
		{map[string]any{"name": "a", "connection_type": "http", "connection_string": "https://mcp.example.com", "is_enabled": "yes"}, "is_enabled"},
		{map[string]any{"name": "a", "connection_type": "http", "connection_string": "https://mcp.example.com", "auth_type": "oauth",
			"oauth_config": map[string]any{"authorize_url": "https://a.example.com/auth"}}, "oauth_config.token_url"},
		{map[string]any{"name": "a", "connection_type": "http", "connection_string": "https://mcp.example.com", "auth_type": "oauth",
			"oauth_config": map[string]any{"authorize_url": "javascript:alert(1)", "token_url": "https://a.example.com/t"}}, "oauth_config.authorize_url"},
	}
	for i, c := range cases {
		m := testgw.WantEnvelope(t, g.Do("POST", "/api/mcp/client", c.body), 400, "")
		if p := m["error"].(map[string]any)["param"]; p != c.param {
			t.Errorf("case %d: param %v, want %s: %v", i, p, c.param, m)
		}
	}
	testgw.WantEnvelope(t, g.Do("POST", "/api/mcp/client", "{"), 400, "")
	testgw.WantEnvelope(t, g.Do("GET", "/api/mcp/client/nope", nil), 404, "not_found")
	testgw.WantEnvelope(t, g.Do("GET", "/api/mcp/clients?limit=501", nil), 400, "invalid_parameter")
	testgw.WantEnvelope(t, g.Do("GET", "/api/oauth/config/nope/status", nil), 404, "not_found")
	testgw.WantEnvelope(t, g.Do("POST", "/v1/mcp/tool/execute", map[string]any{"id": "1", "type": "function",
		"function": map[string]any{"name": "noseparator", "arguments": "{}"}}), 400, "invalid_value")
	testgw.WantEnvelope(t, g.Do("POST", "/v1/mcp/tool/execute", map[string]any{"id": "1", "type": "function",
		"function": map[string]any{"name": "ghost-echo", "arguments": "{}"}}), 404, "not_found")
}

// TestSSRFGuard: without mcp_client_config.allow_private_network, loopback
// MCP servers and OAuth endpoints are refused at dial time.
func TestSSRFGuard(t *testing.T) {
	g := testgw.New(t)
	r := g.Expect(201, "POST", "/api/mcp/client", map[string]any{"name": "local", "connection_type": "http",
		"connection_string": "http://127.0.0.1:9/mcp"}).Map(t)
	if r["state"] != "error" || !strings.Contains(fmt.Sprint(r["error"]), "private or reserved") {
		t.Fatalf("loopback MCP server: %v", r)
	}
	e := testgw.WantEnvelope(t, g.Do("POST", "/api/mcp/client", map[string]any{"name": "o", "connection_type": "http",
		"connection_string": "https://mcp.example.com/mcp", "auth_type": "oauth",
		"oauth_config": map[string]any{"client_id": "c", "server_url": "http://169.254.169.254"}},
		func(r *http.Request) { r.Host = "127.0.0.1:8080" }), 502, "oauth_discovery_failed")
	if !strings.Contains(fmt.Sprint(e), "private or reserved") {
		t.Fatalf("metadata address: %v", e)
	}
}

// TestOAuthFailureTransitions covers the transitions into failed that need
// no authorization server: the provider answering error on the callback,
// an expired flow, and a token exchange that cannot be made.
func TestOAuthFailureTransitions(t *testing.T) {
	clk := &clock{t: time.Now()}
	g := testgw.Start(t, testgw.Options{
		ConfigYAML:    "mcp_external_client_url: https://gw.example.com\n",
		ServerOptions: []server.Option{server.WithClock(clk.now)},
	})
	create := func(name string) (cfgID, clientID, state string) {
		r := g.Expect(201, "POST", "/api/mcp/client", map[string]any{"name": name, "connection_type": "http",
			"connection_string": "https://mcp.example.com/mcp", "auth_type": "oauth",
			"oauth_config": map[string]any{"client_id": "cid", "authorize_url": "https://auth.example.com/authorize",
				"token_url": "https://127.0.0.1:1/token"}}).Map(t)
		u, _ := url.Parse(r["authorize_url"].(string))
		if u.Query().Get("redirect_uri") != "https://gw.example.com/api/oauth/callback" || u.Query().Has("resource") {
			t.Fatalf("authorize URL %s", u)
		}
		return r["oauth_config_id"].(string), r["mcp_client_id"].(string), u.Query().Get("state")
	}
	status := func(id string) map[string]any {
		return g.Expect(200, "GET", "/api/oauth/config/"+id+"/status", nil).Map(t)
	}

	cfg, _, state := create("denied")
	testgw.WantEnvelope(t, g.Do("GET", "/api/oauth/callback?error=access_denied&state="+state, nil, testgw.NoAuth), 400, "oauth_authorization_failed")
	if st := status(cfg); st["status"] != "failed" || !strings.Contains(fmt.Sprint(st["status_reason"]), "access_denied") {
		t.Fatalf("after access_denied: %v", st)
	}

	cfg, clientID, state := create("expired")
	clk.add(16 * time.Minute) // past mcp_client_config.oauth_flow_ttl (15m)
	testgw.WantEnvelope(t, g.Do("GET", "/api/oauth/callback?code=x&state="+state, nil, testgw.NoAuth), 400, "state_expired")
	if st := status(cfg); st["status"] != "failed" {
		t.Fatalf("after expiry: %v", st)
	}
	// A failed client's tool call hands out a fresh authorize URL.
	e := testgw.WantEnvelope(t, g.Do("POST", "/v1/mcp/tool/execute", map[string]any{"id": "1", "type": "function",
		"function": map[string]any{"name": "expired-echo", "arguments": "{}"}}), 401, "mcp_auth_required")
	ar := e["extra_fields"].(map[string]any)["mcp_auth_required"].(map[string]any)
	if ar["mcp_client_id"] != clientID || !strings.HasPrefix(ar["authorize_url"].(string), "https://auth.example.com/authorize?") {
		t.Fatalf("auth required: %v", e)
	}
	u, _ := url.Parse(ar["authorize_url"].(string))
	// The token endpoint is refused by the SSRF guard: exchange fails.
	testgw.WantEnvelope(t, g.Do("GET", "/api/oauth/callback?code=x&state="+u.Query().Get("state"), nil, testgw.NoAuth), 502, "oauth_token_exchange_failed")
	if st := status(cfg); st["status"] != "failed" || !strings.Contains(fmt.Sprint(st["status_reason"]), "token exchange") {
		t.Fatalf("after exchange failure: %v", st)
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/oauth/callback?code=x", nil, testgw.NoAuth), 400, "invalid_state")
}

// TestInsecureRedirect: a plain-http redirect URI is refused unless the host
// is loopback (Authentication rule 6).
func TestInsecureRedirect(t *testing.T) {
	g := testgw.New(t)
	body := map[string]any{"name": "o", "connection_type": "http", "connection_string": "https://mcp.example.com/mcp",
		"auth_type": "oauth", "oauth_config": map[string]any{"client_id": "c", "authorize_url": "https://a.example.com/a", "token_url": "https://a.example.com/t"}}
	testgw.WantEnvelope(t, g.Do("POST", "/api/mcp/client", body, func(r *http.Request) { r.Host = "gw.example.com" }), 400, "insecure_redirect_uri")
	r := g.Do("POST", "/api/mcp/client", body, func(r *http.Request) { r.Host = "127.0.0.1:8080" })
	if r.Status != 201 || !strings.Contains(string(r.Body), url.QueryEscape("http://127.0.0.1:8080/api/oauth/callback")) {
		t.Fatalf("loopback redirect: %d %s", r.Status, r.Body)
	}
}

// TestStdioLifecycle: a stdio client from the config file, immutability,
// reconnect, tool filter, and no goroutine or process left after Close.
func TestStdioLifecycle(t *testing.T) {
	base := runtime.NumGoroutine()
	g := testgw.Start(t, testgw.Options{ConfigYAML: fmt.Sprintf(`
mcp_clients:
  - name: files
    connection_type: stdio
    stdio_config: {command: %q, args: ["-stdio"], env: {API_TOKEN: "plain-secret-value-0123456789"}}
    tools_to_execute: ["echo"]
`, mcpServer)})
	var list map[string]any
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		list = g.Expect(200, "GET", "/api/mcp/clients", nil).Map(t)
		if c := list["clients"].([]any); len(c) == 1 && c[0].(map[string]any)["state"] == "connected" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	c := list["clients"].([]any)[0].(map[string]any)
	if c["state"] != "connected" || strings.Contains(fmt.Sprint(c), "plain-secret-value-0123456789") {
		t.Fatalf("config client: %v", c)
	}
	id := c["id"].(string)
	testgw.WantEnvelope(t, g.Do("PUT", "/api/mcp/client/"+id, map[string]any{"connection_type": "http"}), 400, "immutable_field")
	testgw.WantEnvelope(t, g.Do("PUT", "/api/mcp/client/"+id, map[string]any{"auth_type": "headers"}), 400, "immutable_field")
	// GET then PUT back: the redacted env value keeps the stored secret.
	back := g.Expect(200, "GET", "/api/mcp/client/"+id, nil).Map(t)
	for _, k := range []string{"state", "tools", "error"} {
		delete(back, k)
	}
	g.Expect(200, "PUT", "/api/mcp/client/"+id, back)
	r := g.Expect(200, "POST", "/api/mcp/client/"+id+"/reconnect", nil).Map(t)
	if r["state"] != "connected" {
		t.Fatalf("reconnect: %v", r)
	}
	out := g.Expect(200, "POST", "/v1/mcp/tool/execute", map[string]any{"id": "c1", "type": "function",
		"function": map[string]any{"name": "files-echo", "arguments": `{"text":"x"}`}}).Map(t)
	if out["content"] != "echo: x" {
		t.Fatalf("execute: %v", out)
	}
	testgw.WantEnvelope(t, g.Do("POST", "/v1/mcp/tool/execute", map[string]any{"id": "c1", "type": "function",
		"function": map[string]any{"name": "files-add", "arguments": `{}`}}), 403, "tool_not_allowed")
	testgw.WantEnvelope(t, g.Do("POST", "/v1/mcp/tool/execute", map[string]any{"id": "c1", "type": "function",
		"function": map[string]any{"name": "files-echo", "arguments": `[1]`}}), 400, "invalid_arguments")
	tools, err := g.Server.MCP().Tools(t.Context())
	if err != nil || len(tools) != 1 || tools[0].Client != "files" || tools[0].Name != "echo" || !strings.Contains(string(tools[0].InputSchema), "text") {
		t.Fatalf("Tools: %v %+v", err, tools)
	}
	g.Close()
	deadline = time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base+2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base+2 {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines: %d before, %d after Close\n%s", base, n, buf[:runtime.Stack(buf, true)])
	}
}

// TestConfigRejectsOAuth: OAuth clients cannot come from the config file.
func TestConfigRejectsOAuth(t *testing.T) {
	_, err := testgw.TryStart(t, testgw.Options{ConfigYAML: `
mcp_clients:
  - name: o
    connection_type: http
    connection_string: https://mcp.example.com/mcp
    auth_type: oauth
    oauth_config: {client_id: c}
`})
	if err == nil || !strings.Contains(err.Error(), "mcp_clients[0].auth_type") {
		t.Fatalf("start: %v", err)
	}
}

// TestAuditRedactsMCPSecrets: headers, stdio env and OAuth client secrets
// never reach the audit log in clear.
func TestAuditRedactsMCPSecrets(t *testing.T) {
	g := testgw.New(t)
	g.Expect(201, "POST", "/api/mcp/client", stdioClient("audited", map[string]any{
		"stdio_config": map[string]any{"command": mcpServer, "args": []string{"-stdio"}, "env": map[string]any{"GITHUB_PAT": "ghp_env-secret-0123456789"}},
	}))
	g.Do("POST", "/api/mcp/client", map[string]any{"name": "o", "connection_type": "http", "connection_string": "https://mcp.example.com/mcp",
		"auth_type": "oauth", "oauth_config": map[string]any{"client_id": "c", "client_secret": "oauth-secret-0123456789",
			"authorize_url": "https://a.example.com/a", "token_url": "https://a.example.com/t"}},
		func(r *http.Request) { r.Host = "127.0.0.1:8080" })
	body := string(g.Expect(200, "GET", "/api/governance/access-profiles/audit-logs", nil).Body)
	if !strings.Contains(body, "audited") {
		t.Fatalf("no audit record: %s", body)
	}
	for _, s := range []string{"ghp_env-secret-0123456789", "oauth-secret-0123456789"} {
		if strings.Contains(body, s) {
			t.Fatalf("%s in the audit log: %s", s, body)
		}
	}
}

// TestOAuthCredentialRotation: client_id and client_secret rotate under the
// same MCP client id; the other oauth_config fields are immutable.
func TestOAuthCredentialRotation(t *testing.T) {
	g := testgw.Start(t, testgw.Options{ConfigYAML: "mcp_external_client_url: https://gw.example.com\n"})
	r := g.Expect(201, "POST", "/api/mcp/client", map[string]any{"name": "rot", "connection_type": "http",
		"connection_string": "https://mcp.example.com/mcp", "auth_type": "oauth",
		"oauth_config": map[string]any{"client_id": "old-id", "client_secret": "old-secret-0123456789abcdef",
			"authorize_url": "https://auth.example.com/authorize", "token_url": "https://auth.example.com/token"}}).Map(t)
	id, cfg := r["mcp_client_id"].(string), r["oauth_config_id"].(string)
	e := testgw.WantEnvelope(t, g.Do("PUT", "/api/mcp/client/"+id, map[string]any{"oauth_config": map[string]any{"token_url": "https://evil.example.com/token"}}), 400, "immutable_field")
	if e["error"].(map[string]any)["param"] != "oauth_config.token_url" {
		t.Fatalf("immutable token_url: %v", e)
	}
	v := g.Expect(200, "PUT", "/api/mcp/client/"+id, map[string]any{"oauth_config": map[string]any{
		"client_id": "new-id", "client_secret": "new-secret-0123456789abcdef"}}).Map(t)
	oc := v["oauth_config"].(map[string]any)
	if v["id"] != id || oc["id"] != cfg || oc["client_id"] != "new-id" || oc["status"] != "pending" ||
		!strings.Contains(fmt.Sprint(oc["pending_authorize_url"]), "client_id=new-id") || strings.Contains(fmt.Sprint(v), "new-secret-0123456789abcdef") {
		t.Fatalf("after rotation: %v", v)
	}
	// The flow started before the rotation is void.
	old, _ := url.Parse(r["authorize_url"].(string))
	testgw.WantEnvelope(t, g.Do("GET", "/api/oauth/callback?code=x&state="+old.Query().Get("state"), nil, testgw.NoAuth), 400, "invalid_state")
}

// TestStdioNeedsSettingsUpdate: MCP:Create alone cannot start a command on
// the gateway host.
func TestStdioNeedsSettingsUpdate(t *testing.T) {
	g := testgw.New(t)
	g.EnableAuth()
	mcpOnly, withSettings := g.APIKey("MCP:*"), g.APIKey("MCP:*", "Settings:Update")
	testgw.WantEnvelope(t, g.Do("POST", "/api/mcp/client", stdioClient("s1", nil), mcpOnly), 403, "missing_permission")
	if r := g.Do("POST", "/api/mcp/client", stdioClient("s2", nil), withSettings); r.Status != 201 {
		t.Fatalf("with Settings:Update: %d %s", r.Status, r.Body)
	}
	testgw.WantEnvelope(t, g.Do("PUT", "/api/mcp/client/s2", map[string]any{"is_enabled": false}, mcpOnly), 403, "missing_permission")
}
