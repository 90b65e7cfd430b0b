package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// MCP end-to-end tests: the real gateway binary, a real MCP server built
// with the official Go SDK (host/mcp/testdata/mcpserver) and npm
// oidc-provider as the authorization server (host/mcp/testdata/oidc),
// whose login and consent pages are driven over HTTP with a cookie jar.

var (
	mcpServerOnce sync.Once
	mcpServerBin  string
	mcpServerErr  error
)

// mcpServerBinary builds the test MCP server once per run.
func mcpServerBinary(t *testing.T) string {
	t.Helper()
	mcpServerOnce.Do(func() {
		mcpServerBin = filepath.Join(filepath.Dir(binary), "mcpserver")
		out, err := exec.Command("go", "build", "-o", mcpServerBin, "../../host/mcp/testdata/mcpserver").CombinedOutput()
		if err != nil {
			mcpServerErr = fmt.Errorf("build mcpserver: %v\n%s", err, out)
		}
	})
	if mcpServerErr != nil {
		t.Fatal(mcpServerErr)
	}
	return mcpServerBin
}

// startLine runs cmd and waits for a line starting with "LISTEN ".
func startLine(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{mu: make(chanMutex, 1)}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "LISTEN ") {
				ready <- true
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("%s exited before listening:\n%s", cmd.Path, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start:\n%s", cmd.Path, stderr.String())
	}
}

// oauthWorld is an authorization server and a bearer-protected MCP server.
type oauthWorld struct {
	issuer   string
	mcpBase  string // resource identifier and origin of the MCP server
	redirect string
}

// startOAuthWorld starts oidc-provider (static confidential client allowed
// to redirect to gw's callback) and the MCP server requiring its tokens.
func startOAuthWorld(t *testing.T, gw *proc, accessTTL, refreshTTL int) *oauthWorld {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	dir, _ := filepath.Abs("../../host/mcp/testdata/oidc")
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		t.Fatalf("oidc-provider not installed: run `npm ci --prefix host/mcp/testdata/oidc` (make test-deps does)")
	}
	w := &oauthWorld{redirect: gw.base + "/api/oauth/callback"}
	oidcPort, mcpPort := freePort(t), freePort(t)
	w.issuer = fmt.Sprintf("http://127.0.0.1:%d", oidcPort)
	w.mcpBase = fmt.Sprintf("http://127.0.0.1:%d", mcpPort)
	node := exec.Command("node", "server.mjs")
	node.Dir = dir
	node.Env = append(os.Environ(), fmt.Sprintf("OIDC_PORT=%d", oidcPort), "MCP_RESOURCE="+w.mcpBase,
		"REDIRECT_URIS="+w.redirect, fmt.Sprintf("ACCESS_TOKEN_TTL=%d", accessTTL), fmt.Sprintf("REFRESH_TOKEN_TTL=%d", refreshTTL))
	startLine(t, node)
	srv := exec.Command(mcpServerBinary(t), "-addr", fmt.Sprintf("127.0.0.1:%d", mcpPort), "-issuer", w.issuer, "-resource", w.mcpBase)
	startLine(t, srv)
	return w
}

// authorize plays the user in a browser: it opens the authorize URL, signs
// in and consents on oidc-provider's pages, and returns the gateway
// callback URL the provider redirects to (not yet followed).
func authorize(t *testing.T, authURL string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasSuffix(req.URL.Path, "/api/oauth/callback") {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := c.Get(authURL)
	for step := 0; step < 6; step++ {
		if err != nil {
			t.Fatalf("authorize: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode/100 == 3 && strings.Contains(loc, "/api/oauth/callback") {
			return loc
		}
		if resp.StatusCode != 200 {
			t.Fatalf("authorize: %s answered %d: %s", resp.Request.URL, resp.StatusCode, body)
		}
		form := url.Values{}
		switch {
		case strings.Contains(string(body), `name="prompt" value="login"`):
			form.Set("prompt", "login")
			form.Set("login", "alice")
			form.Set("password", "irrelevant")
		case strings.Contains(string(body), `name="prompt" value="consent"`):
			form.Set("prompt", "consent")
		default:
			t.Fatalf("authorize: unexpected page %s:\n%s", resp.Request.URL, body)
		}
		resp, err = c.PostForm(resp.Request.URL.String(), form)
	}
	t.Fatal("authorize: no redirect to the gateway callback")
	return ""
}

// getJSON is a GET without credentials (the public callback).
func getPublic(t *testing.T, u string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, raw)
	}
	return resp.StatusCode, m
}

func (p *proc) json(method, path string, body any, want int) map[string]any {
	p.t.Helper()
	code, raw := p.do(method, path, body)
	if code != want {
		p.t.Fatalf("%s %s: %d, want %d: %s", method, path, code, want, raw)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		p.t.Fatalf("%s %s: %s", method, path, raw)
	}
	return m
}

func execTool(p *proc, name, args string, want int) map[string]any {
	p.t.Helper()
	return p.json("POST", "/v1/mcp/tool/execute", map[string]any{"id": "call_1", "type": "function",
		"function": map[string]any{"name": name, "arguments": args}}, want)
}

func oauthStatus(p *proc, id string) map[string]any {
	p.t.Helper()
	return p.json("GET", "/api/oauth/config/"+id+"/status", nil, 200)
}

func parseTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %v: %v", v, err)
	}
	return tm
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

var mcpEnv = []string{
	"GATEWAY_MCP_CLIENT_CONFIG__ALLOW_PRIVATE_NETWORK=true",
	"GATEWAY_MCP_CLIENT_CONFIG__REFRESH_INTERVAL=500ms",
	"GATEWAY_ENCRYPTION_KEY=mcp-e2e-passphrase-0123456789",
}

// TestMCPOAuthConfidentialClient: discovery through the MCP server's 401,
// a pre-registered confidential client, the resource indicator, the full
// authorize -> callback -> complete-oauth -> tools flow, background and
// inline refresh, kill -9 durability, revocation and re-authorization.
func TestMCPOAuthConfidentialClient(t *testing.T) {
	dataDir := t.TempDir()
	env := append([]string{"GATEWAY_MCP_CLIENT_CONFIG__REFRESH_BEFORE=4s"}, mcpEnv...)
	gw := start(t, t.TempDir(), dataDir, env)
	w := startOAuthWorld(t, gw, 8, 3600)

	created := gw.json("POST", "/api/mcp/client", map[string]any{
		"name": "secure", "connection_type": "http", "connection_string": w.mcpBase + "/mcp", "auth_type": "oauth",
		"oauth_config": map[string]any{"client_id": "static-client", "client_secret": "static-secret-0123456789abcdef",
			"resource": w.mcpBase, "scopes": []string{"mcp:tools"}},
	}, 201)
	if created["status"] != "pending_oauth" || created["mcp_client_id"] == "" || created["oauth_config_id"] == "" || created["expires_at"] == "" {
		t.Fatalf("flow initiation: %v", created)
	}
	cfgID, clientID := created["oauth_config_id"].(string), created["mcp_client_id"].(string)
	authURL := created["authorize_url"].(string)
	au, _ := url.Parse(authURL)
	q := au.Query()
	// Discovered through the MCP server's protected-resource metadata.
	if !strings.HasPrefix(authURL, w.issuer+"/") || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
		q.Get("resource") != w.mcpBase || q.Get("redirect_uri") != w.redirect || q.Get("state") == "" {
		t.Fatalf("authorize URL %s", authURL)
	}
	if st := oauthStatus(gw, cfgID); st["status"] != "pending" {
		t.Fatalf("status before authorization: %v", st)
	}
	// Tool calls before authorization need auth.
	execTool(gw, "secure-echo", `{"text":"x"}`, 401)

	// A forged state is rejected and changes nothing.
	code, body := getPublic(t, gw.base+"/api/oauth/callback?code=abc&state=forged")
	if code != 400 || body["error"].(map[string]any)["code"] != "invalid_state" {
		t.Fatalf("forged state: %d %v", code, body)
	}
	cb := authorize(t, authURL)
	code, body = getPublic(t, cb)
	if code != 200 || body["status"] != "authorized" {
		t.Fatalf("callback: %d %v", code, body)
	}
	// The state is single use.
	code, body = getPublic(t, cb)
	if code != 400 || body["error"].(map[string]any)["code"] != "invalid_state" {
		t.Fatalf("replayed state: %d %v", code, body)
	}
	st := oauthStatus(gw, cfgID)
	if st["status"] != "authorized" || st["token_id"] == "" || st["token_expires_at"] == nil {
		t.Fatalf("status after callback: %v", st)
	}
	firstExpiry := parseTime(t, st["token_expires_at"])

	gw.json("POST", "/api/mcp/client/"+clientID+"/complete-oauth", nil, 200)
	cl := gw.json("GET", "/api/mcp/client/"+clientID, nil, 200)
	if cl["state"] != "connected" || len(cl["tools"].([]any)) != 3 {
		t.Fatalf("client after complete-oauth: %v", cl)
	}
	if oc := cl["oauth_config"].(map[string]any); strings.Contains(fmt.Sprint(oc["client_secret"]), "static-secret") {
		t.Fatalf("client secret not redacted: %v", oc)
	}
	tools := gw.json("GET", "/v1/mcp/tools", nil, 200)
	if !strings.Contains(fmt.Sprint(tools["data"]), "secure-echo") {
		t.Fatalf("tools: %v", tools)
	}
	out := execTool(gw, "secure-echo", `{"text":"hello"}`, 200)
	if out["role"] != "tool" || out["tool_call_id"] != "call_1" || out["content"] != "echo: hello" {
		t.Fatalf("execute: %v", out)
	}

	// Background refresh: the 8s token is refreshed ~4s before it expires,
	// with no call in between.
	waitFor(t, "background refresh", 20*time.Second, func() bool {
		st := oauthStatus(gw, cfgID)
		return st["token_refresh_trigger"] == "background" && parseTime(t, st["token_expires_at"]).After(firstExpiry)
	})
	execTool(gw, "secure-echo", `{"text":"after background refresh"}`, 200)

	// Inline refresh: disabled, the token is left to expire; the first use
	// after re-enabling refreshes it.
	gw.json("PUT", "/api/mcp/client/"+clientID, map[string]any{"is_enabled": false}, 200)
	execTool(gw, "secure-echo", `{"text":"x"}`, 503)
	exp := parseTime(t, oauthStatus(gw, cfgID)["token_expires_at"])
	time.Sleep(time.Until(exp) + time.Second)
	if st := oauthStatus(gw, cfgID); st["token_refresh_trigger"] != "background" || !parseTime(t, st["token_expires_at"]).Equal(exp) {
		t.Fatalf("a disabled client's token was refreshed in the background: %v", st)
	}
	gw.json("PUT", "/api/mcp/client/"+clientID, map[string]any{"is_enabled": true}, 200)
	out = execTool(gw, "secure-add", `{"a":2,"b":3}`, 200)
	if out["content"] != "5" {
		t.Fatalf("add: %v", out)
	}
	if st := oauthStatus(gw, cfgID); st["token_refresh_trigger"] != "inline" || !parseTime(t, st["token_expires_at"]).After(time.Now()) {
		t.Fatalf("after re-enable: %v", st)
	}

	// Tokens are sealed at rest: no secret appears in the store files.
	for _, needle := range []string{"static-secret-0123456789abcdef", "refresh_token"} {
		if path := grepDir(t, filepath.Join(dataDir, "store"), needle); path != "" {
			t.Fatalf("%q found in clear in %s", needle, path)
		}
	}

	// Revoke: token deleted, row kept, calls need re-authorization.
	gw.json("DELETE", "/api/oauth/config/"+cfgID, nil, 200)
	if st := oauthStatus(gw, cfgID); st["status"] != "revoked" || st["token_id"] != nil && st["token_id"] != "" {
		t.Fatalf("after revoke: %v", st)
	}
	e := execTool(gw, "secure-echo", `{"text":"x"}`, 401)
	ar, _ := e["extra_fields"].(map[string]any)["mcp_auth_required"].(map[string]any)
	if ar == nil || ar["mcp_client_id"] != clientID || !strings.HasPrefix(fmt.Sprint(ar["authorize_url"]), w.issuer) {
		t.Fatalf("revoked call: %v", e)
	}
	// Re-authorizing through that URL brings the client back on first use.
	code, body = getPublic(t, authorize(t, ar["authorize_url"].(string)))
	if code != 200 {
		t.Fatalf("re-authorize callback: %d %v", code, body)
	}
	execTool(gw, "secure-echo", `{"text":"again"}`, 200)

	// Immutable fields.
	e = gw.json("PUT", "/api/mcp/client/"+clientID, map[string]any{"connection_string": w.mcpBase + "/sse"}, 400)
	if e["error"].(map[string]any)["param"] != "connection_string" {
		t.Fatalf("immutable: %v", e)
	}
	// Secret rotation keeps the client id and the authorization.
	gw.json("PUT", "/api/mcp/client/"+clientID, map[string]any{"oauth_config": map[string]any{"client_secret": "static-secret-0123456789abcdef"}}, 200)
	if st := oauthStatus(gw, cfgID); st["status"] != "authorized" {
		t.Fatalf("after secret rotation: %v", st)
	}
	// kill -9 and restart: the acknowledged authorization survives and the
	// client reconnects with the stored token.
	_ = gw.cmd.Process.Kill()
	gw.wait(10 * time.Second)
	gw = start(t, t.TempDir(), dataDir, env)
	out = execTool(gw, "secure-echo", `{"text":"after restart"}`, 200)
	if out["content"] != "echo: after restart" {
		t.Fatalf("after restart: %v", out)
	}

	// Tool calls are in the request logs.
	waitFor(t, "mcp_tool log records", 10*time.Second, func() bool {
		logs := gw.json("GET", "/api/logs?objects=mcp_tool", nil, 200)
		return strings.Contains(fmt.Sprint(logs["logs"]), "echo")
	})
}

// TestMCPOAuthPublicClientDCR: discovery at server_url, dynamic client
// registration of a public client, PKCE, no resource sent when none is
// configured, the SSE transport, and an idle refresh token expiring while
// the client is disabled (-> failed, re-authorization required).
func TestMCPOAuthPublicClientDCR(t *testing.T) {
	env := append([]string{"GATEWAY_MCP_CLIENT_CONFIG__REFRESH_BEFORE=1ms"}, mcpEnv...)
	gw := start(t, t.TempDir(), t.TempDir(), env)
	w := startOAuthWorld(t, gw, 3, 6)

	created := gw.json("POST", "/api/mcp/client", map[string]any{
		"name": "public_sse", "connection_type": "sse", "connection_string": w.mcpBase + "/sse", "auth_type": "oauth",
		"oauth_config": map[string]any{"server_url": w.issuer, "scopes": []string{"mcp:tools"}},
	}, 201)
	cfgID, clientID := created["oauth_config_id"].(string), created["mcp_client_id"].(string)
	au, _ := url.Parse(created["authorize_url"].(string))
	if q := au.Query(); q.Has("resource") || q.Get("code_challenge_method") != "S256" || q.Get("client_id") == "" {
		t.Fatalf("authorize URL %s", au)
	}
	cl := gw.json("GET", "/api/mcp/client/"+clientID, nil, 200)
	oc := cl["oauth_config"].(map[string]any)
	if oc["registered"] != true || !strings.HasPrefix(fmt.Sprint(oc["registration_url"]), w.issuer) || cl["state"] != "pending_oauth" {
		t.Fatalf("registered client: %v", cl)
	}
	// complete-oauth before the user authorized is refused.
	gw.json("POST", "/api/mcp/client/"+clientID+"/complete-oauth", nil, 409)

	code, body := getPublic(t, authorize(t, au.String()))
	if code != 200 {
		t.Fatalf("callback: %d %v", code, body)
	}
	gw.json("POST", "/api/mcp/client/"+clientID+"/complete-oauth", nil, 200)
	if out := execTool(gw, "public_sse-add", `{"a":40,"b":2}`, 200); out["content"] != "42" {
		t.Fatalf("add over SSE: %v", out)
	}
	// Idle past the refresh token's lifetime while disabled.
	gw.json("PUT", "/api/mcp/client/"+clientID, map[string]any{"is_enabled": false}, 200)
	time.Sleep(8 * time.Second)
	gw.json("PUT", "/api/mcp/client/"+clientID, map[string]any{"is_enabled": true}, 200)
	e := execTool(gw, "public_sse-echo", `{"text":"x"}`, 401)
	if ar := e["extra_fields"].(map[string]any)["mcp_auth_required"].(map[string]any); ar["authorize_url"] == "" {
		t.Fatalf("expired refresh token: %v", e)
	}
	st := oauthStatus(gw, cfgID)
	if st["status"] != "failed" || !strings.Contains(fmt.Sprint(st["status_reason"]), "invalid_grant") {
		t.Fatalf("status after refresh rejection: %v", st)
	}
}

// TestMCPStdioAndHeaders: a stdio MCP server run as a subprocess, a
// header-authenticated HTTP server, tool filters and secret redaction.
func TestMCPStdioAndHeaders(t *testing.T) {
	bin := mcpServerBinary(t)
	gw := start(t, t.TempDir(), t.TempDir(), mcpEnv)
	cl := gw.json("POST", "/api/mcp/client", map[string]any{
		"name": "local", "connection_type": "stdio",
		"stdio_config":     map[string]any{"command": bin, "args": []string{"-stdio"}, "env": map[string]any{"TOKEN": "stdio-secret-value-0123456789"}},
		"tools_to_execute": []string{"pid", "echo"},
	}, 201)
	if cl["state"] != "connected" || strings.Contains(fmt.Sprint(cl), "stdio-secret-value-0123456789") {
		t.Fatalf("stdio client: %v", cl)
	}
	out := execTool(gw, "local-pid", "", 200)
	var pid int
	if _, err := fmt.Sscan(fmt.Sprint(out["content"]), &pid); err != nil || pid <= 0 {
		t.Fatalf("pid: %v", out)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		t.Fatalf("stdio server process %d not running: %v", pid, err)
	}
	// Not in tools_to_execute.
	execTool(gw, "local-add", `{"a":1,"b":2}`, 403)
	// Deleting the client stops its process.
	gw.json("DELETE", "/api/mcp/client/"+cl["id"].(string), nil, 200)
	waitFor(t, "stdio server exit", 10*time.Second, func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err != nil || strings.Contains(string(b), ") Z ")
	})

	// A header-protected Streamable HTTP server.
	port := freePort(t)
	srv := exec.Command(bin, "-addr", fmt.Sprintf("127.0.0.1:%d", port), "-header", "X-Test-Key=header-secret-0123456789abcdef")
	startLine(t, srv)
	base := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	good := gw.json("POST", "/api/mcp/client", map[string]any{"name": "hdr", "connection_type": "http", "connection_string": base,
		"auth_type": "headers", "headers": map[string]any{"X-Test-Key": "header-secret-0123456789abcdef"}}, 201)
	if good["state"] != "connected" || strings.Contains(fmt.Sprint(good), "header-secret-0123456789abcdef") {
		t.Fatalf("headers client: %v", good)
	}
	bad := gw.json("POST", "/api/mcp/client", map[string]any{"name": "hdr_wrong", "connection_type": "http", "connection_string": base,
		"auth_type": "headers", "headers": map[string]any{"X-Test-Key": "wrong"}}, 201)
	if bad["state"] != "error" || bad["error"] == "" {
		t.Fatalf("wrong header client: %v", bad)
	}
	if out := execTool(gw, "hdr-echo", `{"text":"h"}`, 200); out["content"] != "echo: h" {
		t.Fatalf("headers echo: %v", out)
	}
	list := gw.json("GET", "/api/mcp/clients?limit=1", nil, 200)
	if list["count"].(float64) != 1 || list["total_count"].(float64) != 2 {
		t.Fatalf("list: %v", list)
	}
}

// grepDir returns a file under dir containing needle, or "".
func grepDir(t *testing.T, dir, needle string) string {
	t.Helper()
	found := ""
	_ = filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || found != "" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), needle) {
			found = path
		}
		return nil
	})
	return found
}
