// Package testgw starts a real gateway (real Fiber app, real Badger
// directory) for tests and offers small helpers to call it.
package testgw

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/wasmgate/gateway/host/config"
	"github.com/wasmgate/gateway/host/server"
)

// SetupToken is the setup token every test gateway is configured with.
const SetupToken = "test-setup-token-0123456789"

// Gateway is a provisioned server under test.
type Gateway struct {
	T      testing.TB
	Cfg    *config.Config
	Server *server.Server
	// Auth is applied to every request made with Do unless overridden.
	Auth func(*http.Request)
}

// Config returns a valid config on dir with the test setup token; extra
// environment entries (GATEWAY_*) and args are applied on top.
func Config(t testing.TB, dir string, env []string, args ...string) *config.Config {
	t.Helper()
	env = append([]string{"GATEWAY_SETUP_TOKEN=" + SetupToken}, env...)
	cfg, err := config.Load(append([]string{"--data-dir", dir}, args...), env)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// Start provisions a server from cfg and closes it when the test ends.
func Start(t testing.TB, cfg *config.Config) *Gateway {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.Default()
	}
	srv, err := server.New(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	g := &Gateway{T: t, Cfg: cfg, Server: srv, Auth: SetupAuth}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// New is Config + Start on a fresh temp dir.
func New(t testing.TB, env ...string) *Gateway {
	t.Helper()
	return Start(t, Config(t, t.TempDir(), env))
}

// Close shuts the server down (idempotent).
func (g *Gateway) Close() error {
	if g.Server == nil {
		return nil
	}
	err := g.Server.Shutdown(context.Background())
	g.Server = nil
	return err
}

// SetupAuth sends the setup-lock header.
func SetupAuth(r *http.Request) { r.Header.Set("X-Gateway-Setup-Token", SetupToken) }

// NoAuth sends no credentials.
func NoAuth(*http.Request) {}

// Response is a completed test request.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic map.
func (r *Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response is not a JSON object (%d): %s", r.Status, r.Body)
	}
	return m
}

// Do sends a request through the Fiber app. body may be nil, []byte, string
// or any value encoded as JSON.
func (g *Gateway) Do(method, path string, body any, mods ...func(*http.Request)) *Response {
	g.T.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			g.T.Fatalf("encode body: %v", err)
		}
		rd = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
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
	raw, _ := io.ReadAll(resp.Body)
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

// WantEnvelope asserts r is an error envelope with the status (and code when given).
func WantEnvelope(t testing.TB, r *Response, status int, code string) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	m := r.JSON(t)
	e, ok := m["error"].(map[string]any)
	if !ok || m["event_id"] == "" || int(m["status_code"].(float64)) != status {
		t.Fatalf("not an error envelope: %s", r.Body)
	}
	if code != "" && e["code"] != code {
		t.Fatalf("error code %v, want %s: %s", e["code"], code, r.Body)
	}
	return m
}
