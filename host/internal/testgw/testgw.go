// Package testgw starts a real gateway (server.New on a temporary data
// directory with Badger) for capability tests and drives its management API
// through the setup lock.
package testgw

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
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
}

// Gateway is a running test gateway.
type Gateway struct {
	T      testing.TB
	Dir    string
	Config *config.Config
	Server *server.Server
	opts   Options
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
	args := []string{"--data-dir", o.Dir}
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
	srv, err := server.New(context.Background(), cfg, log)
	if err != nil {
		return nil, err
	}
	g := &Gateway{T: t, Dir: o.Dir, Config: cfg, Server: srv, opts: o}
	t.Cleanup(func() { _ = g.Server.Shutdown(context.Background()) })
	return g, nil
}

// Close shuts the gateway down (idempotent); Restart starts it again on the
// same data directory and options.
func (g *Gateway) Close() {
	g.T.Helper()
	if err := g.Server.Shutdown(context.Background()); err != nil {
		g.T.Fatalf("shutdown: %v", err)
	}
}

// Restart closes the gateway and starts a new one on the same directory,
// with config replaced by cfgYAML when it is not empty.
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

// Response is a management API answer.
type Response struct {
	Status int
	Body   []byte
}

// Decode unmarshals the body into v, failing the test on error.
func (r Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Map decodes an object body.
func (r Response) Map(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.Decode(t, &m)
	return m
}

// Do sends a management request with the setup token. body may be nil, a
// string or []byte (sent as is) or any value (JSON-encoded).
func (g *Gateway) Do(method, path string, body any) Response {
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
	req.Header.Set(auth.SetupTokenHeader, SetupToken)
	resp, err := g.Server.App().Test(req, -1)
	if err != nil {
		g.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		g.T.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return Response{Status: resp.StatusCode, Body: raw}
}

// Expect sends a request and fails the test unless the status is want.
func (g *Gateway) Expect(want int, method, path string, body any) Response {
	g.T.Helper()
	r := g.Do(method, path, body)
	if r.Status != want {
		g.T.Fatalf("%s %s: status %d, want %d; body %s", method, path, r.Status, want, r.Body)
	}
	return r
}
