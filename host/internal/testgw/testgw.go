// Package testgw starts a real gateway (server.New on a temporary data
// directory with Badger, the real Fiber app) for capability tests and drives
// its API, by default through the setup lock.
package testgw

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/auth"
	"github.com/wasmgate/gateway/host/config"
	"github.com/wasmgate/gateway/host/server"
)

// SetupToken is the setup token every test gateway is started with.
const SetupToken = "testgw-setup-token-0123456789"

// Options tune a test gateway.
type Options struct {
	// Dir is the data directory; a fresh t.TempDir() when empty.
	Dir string
	// ConfigYAML, when set, is written to Dir/config.yaml and loaded.
	ConfigYAML string
	// Env holds extra GATEWAY_* variables (e.g. GATEWAY_ENCRYPTION_KEY=...).
	Env []string
	// Args are extra command-line flags.
	Args []string
	// ServerOptions are passed to server.New (e.g. server.WithAdapters).
	ServerOptions []server.Option
}

// Gateway is a running test gateway.
type Gateway struct {
	T      testing.TB
	Dir    string
	Config *config.Config
	Server *server.Server
	// Auth is applied to every request made with Do (SetupAuth by default).
	Auth func(*http.Request)
	opts Options
}

// New starts a gateway on a fresh directory with extra environment entries.
func New(t testing.TB, env ...string) *Gateway {
	t.Helper()
	return Start(t, Options{Env: env})
}

// Start provisions a gateway and closes it when the test ends.
func Start(t testing.TB, o Options) *Gateway {
	t.Helper()
	g, err := TryStart(t, o)
	if err != nil {
		t.Fatalf("start gateway: %v", err)
	}
	return g
}

// TryStart is Start for tests that expect start-up to fail.
func TryStart(t testing.TB, o Options) (*Gateway, error) {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	args := append([]string{"--data-dir", o.Dir}, o.Args...)
	if o.ConfigYAML != "" {
		path := filepath.Join(o.Dir, "config.yaml")
		if err := os.WriteFile(path, []byte(o.ConfigYAML), 0o600); err != nil {
			t.Fatalf("write config: %v", err)
		}
		args = append(args, "--config", path)
	}
	env := append([]string{"GATEWAY_SETUP_TOKEN=" + SetupToken}, o.Env...)
	cfg, err := config.Load(args, env)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.Default()
	}
	srv, err := server.New(context.Background(), cfg, log, o.ServerOptions...)
	if err != nil {
		return nil, err
	}
	g := &Gateway{T: t, Dir: o.Dir, Config: cfg, Server: srv, Auth: SetupAuth, opts: o}
	t.Cleanup(g.Close)
	return g, nil
}

// Close shuts the gateway down; it is idempotent.
func (g *Gateway) Close() {
	g.T.Helper()
	if g.Server == nil {
		return
	}
	srv := g.Server
	g.Server = nil
	if err := srv.Shutdown(context.Background()); err != nil {
		g.T.Errorf("shutdown: %v", err)
	}
}

// Restart closes the gateway and starts a new one on the same directory,
// with the config replaced by cfgYAML when it is not empty.
func (g *Gateway) Restart(cfgYAML string) *Gateway {
	g.T.Helper()
	g.Close()
	o := g.opts
	o.Dir = g.Dir
	if cfgYAML != "" {
		o.ConfigYAML = cfgYAML
	}
	return Start(g.T, o)
}

// SetupAuth sends the setup-lock header.
func SetupAuth(r *http.Request) { r.Header.Set(auth.SetupTokenHeader, SetupToken) }

// NoAuth sends no credentials.
func NoAuth(*http.Request) {}

// Response is a completed request.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Decode unmarshals the body into v, failing the test on error.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode (%d) %s: %v", r.Status, r.Body, err)
	}
}

// Map decodes an object body.
func (r *Response) Map(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.Decode(t, &m)
	return m
}

// JSON is Map.
func (r *Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	return r.Map(t)
}

// Do sends a request through the Fiber app. body may be nil, a string or
// []byte (sent as is) or any value (JSON-encoded); mods adjust the request
// after g.Auth.
func (g *Gateway) Do(method, path string, body any, mods ...func(*http.Request)) *Response {
	g.T.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			g.T.Fatalf("encode body: %v", err)
		}
		rd = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(method, path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if g.Auth != nil {
		g.Auth(req)
	}
	for _, m := range mods {
		m(req)
	}
	resp, err := g.Server.App().Test(req, -1)
	if err != nil {
		g.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		g.T.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

// Expect sends a request and fails the test unless the status is want.
func (g *Gateway) Expect(want int, method, path string, body any) *Response {
	g.T.Helper()
	r := g.Do(method, path, body)
	if r.Status != want {
		g.T.Fatalf("%s %s: status %d, want %d; body %s", method, path, r.Status, want, r.Body)
	}
	return r
}

// Listen serves g on a loopback listener, as the binary does, and returns
// its base URL: tests of keep-alive connections and client addresses need
// a real connection.
func (g *Gateway) Listen() string {
	g.T.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		g.T.Fatal(err)
	}
	go func() { _ = g.Server.Serve(ln) }()
	return "http://" + ln.Addr().String()
}

// AdminUser and AdminPassword are the admin account EnableAuth creates.
const (
	AdminUser     = "admin"
	AdminPassword = "admin-password-123"
)

// EnableAuth turns dashboard auth on with the AdminUser account and makes
// its Basic credentials the default for g's requests: management API keys
// and roles are only checked once auth is on.
func (g *Gateway) EnableAuth() {
	g.T.Helper()
	g.Expect(200, "PUT", "/api/config/auth", map[string]any{"enabled": true, "admin_username": AdminUser, "admin_password": AdminPassword})
	g.Auth = func(r *http.Request) { r.SetBasicAuth(AdminUser, AdminPassword) }
}

// APIKey creates a management API key holding scopes (with g's current
// credentials) and returns the request option that presents it.
func (g *Gateway) APIKey(scopes ...string) func(*http.Request) {
	g.T.Helper()
	r := g.Expect(201, "POST", "/api/auth/api-keys", map[string]any{"name": strings.Join(scopes, ","), "scopes": scopes}).Map(g.T)
	tok, _ := r["key"].(string)
	if tok == "" {
		g.T.Fatalf("api key answer without a key: %v", r)
	}
	return func(req *http.Request) { req.Header.Set("Authorization", "Bearer "+tok) }
}

// WantEnvelope asserts r is an error envelope with the status (and code when given).
func WantEnvelope(t testing.TB, r *Response, status int, code string) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	m := r.Map(t)
	e, ok := m["error"].(map[string]any)
	sc, _ := m["status_code"].(float64)
	if !ok || m["event_id"] == "" || int(sc) != status {
		t.Fatalf("not an error envelope: %s", r.Body)
	}
	if code != "" && e["code"] != code {
		t.Fatalf("error code %v, want %s: %s", e["code"], code, r.Body)
	}
	return m
}

// Config loads a configuration for dir with the test setup token, extra
// environment entries and flags, for tests that build the server themselves.
func Config(t testing.TB, dir string, env []string, args ...string) *config.Config {
	t.Helper()
	cfg, err := config.Load(append([]string{"--data-dir", dir}, args...),
		append([]string{"GATEWAY_SETUP_TOKEN=" + SetupToken}, env...))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}
