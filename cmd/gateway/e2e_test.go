package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// These tests run the real gateway binary as a separate process.

var binary string

// pluginCache is the compilation cache every gateway of the run shares.
var pluginCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wasmgate-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "gateway")
	pluginCache = filepath.Join(dir, "wasm-cache")
	defaults, err := runtimeDefaults()
	if err != nil {
		fmt.Fprintf(os.Stderr, "runtime defaults: %v\n", err)
		os.Exit(1)
	}
	// Built as `make host` builds it, so the tests run the runtime settings
	// that ship.
	out, err := exec.Command("go", "build", "-ldflags", "-X runtime.godebugDefault="+defaults, "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build gateway: %v\n%s", err, out)
		os.Exit(1)
	}
	// First-party modules sit in plugins/ next to the binary, as make build
	// lays them out; the build cache keeps this cheap on repeated runs.
	if err := buildModules(filepath.Join(dir, "plugins")); err != nil {
		fmt.Fprintf(os.Stderr, "build wasm modules: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

const setupToken = "e2e-setup-token-abcdefghijkl"

type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string
	stderr *syncBuffer
	done   chan error
}

type syncBuffer struct {
	mu  chanMutex
	buf bytes.Buffer
}

type chanMutex chan struct{}

func (m chanMutex) lock()   { m <- struct{}{} }
func (m chanMutex) unlock() { <-m }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.lock()
	defer b.mu.unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.lock()
	defer b.mu.unlock()
	return b.buf.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// start runs the binary in cwd with the given data dir and environment and
// waits until /health answers.
func start(t *testing.T, cwd, dataDir string, env []string, args ...string) *proc {
	t.Helper()
	port := freePort(t)
	all := append([]string{"--port", fmt.Sprint(port)}, args...)
	if dataDir != "" {
		all = append(all, "--data-dir", dataDir)
	}
	cmd := exec.Command(binary, all...)
	cmd.Dir = cwd
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "GATEWAY_SETUP_TOKEN=" + setupToken, "GATEWAY_PLUGIN_CACHE_DIR=" + pluginCache}, env...)
	for _, e := range env {
		if e == "GATEWAY_SETUP_TOKEN=" {
			// Let the gateway generate one, as with no configuration at all.
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "GATEWAY_PLUGIN_CACHE_DIR=" + pluginCache}, env...)
		}
	}
	p := &proc{t: t, cmd: cmd, base: fmt.Sprintf("http://127.0.0.1:%d", port), stderr: &syncBuffer{mu: make(chanMutex, 1)}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.doneOrNil() })
	// Start-up compiles the configured adapters when the shared cache is
	// cold; on a loaded 2-core machine that takes a while.
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("gateway exited early: %v\n%s", err, p.stderr.String())
		default:
		}
		if r, err := http.Get(p.base + "/health"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return p
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("gateway did not become healthy:\n%s", p.stderr.String())
	return nil
}

func (p *proc) doneOrNil() chan error {
	c := make(chan error, 1)
	go func() {
		select {
		case err := <-p.done:
			p.done <- err
			c <- err
		case <-time.After(10 * time.Second):
			c <- nil
		}
	}()
	return c
}

func (p *proc) wait(timeout time.Duration) (int, bool) {
	select {
	case err := <-p.done:
		p.done <- err
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), true
		}
		return 0, true
	case <-time.After(timeout):
		return -1, false
	}
}

func (p *proc) do(method, path string, body any) (int, []byte) {
	p.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.base+path, rd)
	req.Header.Set("X-Gateway-Setup-Token", setupToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

// buildModules builds every provider adapter and first-party plugin into dir.
func buildModules(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	adapters, _ := filepath.Glob("../../providers-wasm/*")
	plugins, _ := filepath.Glob("../../plugins/*")
	for _, src := range append(adapters, plugins...) {
		if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
			continue
		}
		built, err := plugintest.BuildWasmErr(src, "")
		if err != nil {
			return err
		}
		name := filepath.Base(src) + ".wasm"
		if strings.Contains(src, "providers-wasm") {
			name = "adapter-" + name
		}
		raw, err := os.ReadFile(built)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func TestDefaultsServeHealth(t *testing.T) {
	cwd := t.TempDir()
	p := start(t, cwd, "", []string{"GATEWAY_SETUP_TOKEN="})
	code, body := p.do("GET", "/health", nil)
	if code != 200 || !strings.Contains(string(body), `"store":"ok"`) {
		t.Fatalf("health: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(cwd, "data", "store")); err != nil {
		t.Fatalf("default data dir ./data not used: %v", err)
	}
	// With no token configured one is generated into a private file.
	fi, err := os.Stat(filepath.Join(cwd, "data", "setup-token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("setup token file: %v %v", err, fi)
	}
	tok, _ := os.ReadFile(filepath.Join(cwd, "data", "setup-token"))
	req, _ := http.NewRequest("GET", p.base+"/api/config", nil)
	req.Header.Set("X-Gateway-Setup-Token", strings.TrimSpace(string(tok)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("generated setup token refused: %v %v", err, resp)
	}
	resp.Body.Close()
}

func TestInvalidConfigExitsBeforeStarting(t *testing.T) {
	cwd := t.TempDir()
	cmd := exec.Command(binary, "--data-dir", filepath.Join(cwd, "d"))
	cmd.Env = []string{"GATEWAY_PORT=99999"}
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "port: must be between 1 and 65535") {
		t.Fatalf("message does not name the key: %s", out)
	}
	if _, err := os.Stat(filepath.Join(cwd, "d")); !os.IsNotExist(err) {
		t.Fatal("data dir created by a gateway that refused its config")
	}
}

func TestSIGKILLKeepsAcknowledgedWrites(t *testing.T) {
	cwd, data := t.TempDir(), t.TempDir()
	p := start(t, cwd, data, nil)
	var ids []string
	for i := 0; i < 20; i++ {
		code, body := p.do("POST", "/api/auth/api-keys", map[string]any{"name": fmt.Sprintf("k%d", i), "scopes": []string{"*"}})
		if code != 201 {
			t.Fatalf("create: %d %s", code, body)
		}
		var m struct {
			APIKey struct{ ID string } `json:"api_key"`
		}
		_ = json.Unmarshal(body, &m)
		ids = append(ids, m.APIKey.ID)
	}
	if code, body := p.do("POST", "/api/providers", map[string]any{"name": "openai"}); code != 201 {
		t.Fatalf("create provider: %d %s", code, body)
	}
	code, body := p.do("POST", "/api/providers/openai/keys", map[string]any{"name": "main", "value": "sk-test-durable-0123456789abcdef", "weight": 2})
	if code != 201 {
		t.Fatalf("create key: %d %s", code, body)
	}
	// Kill right after the last acknowledgement: no graceful close.
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(10 * time.Second)

	p = start(t, cwd, data, nil)
	code, body = p.do("GET", "/api/providers/openai/keys", nil)
	if code != 200 || !strings.Contains(string(body), `"main"`) || !strings.Contains(string(body), `"weight":2`) {
		t.Fatalf("acknowledged provider key lost after SIGKILL: %d %s", code, body)
	}
	code, body = p.do("GET", "/api/auth/api-keys", nil)
	if code != 200 {
		t.Fatalf("list: %d %s", code, body)
	}
	for _, id := range ids {
		if !strings.Contains(string(body), id) {
			t.Fatalf("acknowledged key %s lost after SIGKILL", id)
		}
	}
}

func TestSIGTERMDrainsAndReleasesStore(t *testing.T) {
	cwd, data := t.TempDir(), t.TempDir()
	p := start(t, cwd, data, nil)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, ok := p.wait(15 * time.Second)
	if !ok || code != 0 {
		t.Fatalf("SIGTERM: exit %d (exited=%v)\n%s", code, ok, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "gateway stopped") {
		t.Fatalf("no clean stop in log:\n%s", p.stderr.String())
	}
	// The store was closed: a new process opens it at once.
	start(t, cwd, data, nil)
}

func TestEncryptedStoreNeedsItsKey(t *testing.T) {
	cwd, data := t.TempDir(), t.TempDir()
	key := "GATEWAY_ENCRYPTION_KEY=a long operator passphrase for tests"
	p := start(t, cwd, data, []string{key})
	if code, body := p.do("POST", "/api/auth/api-keys", map[string]any{"name": "x", "scopes": []string{"*"}}); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(15 * time.Second)

	for _, env := range [][]string{nil, {"GATEWAY_ENCRYPTION_KEY=the wrong passphrase, also long"}} {
		cmd := exec.Command(binary, "--data-dir", data, "--port", fmt.Sprint(freePort(t)))
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("env %v: exit %v\n%s", env, err, out)
		}
		if !strings.Contains(string(out), "GATEWAY_ENCRYPTION_KEY") {
			t.Fatalf("message does not name the key: %s", out)
		}
	}
}

// TestMemoryLimitApplied: memory_limit_mb reaches the Go runtime (seen in
// the runtime's own gauge on /metrics), and GOMEMLIMIT, when set, wins.
func TestMemoryLimitApplied(t *testing.T) {
	limit := func(env ...string) string {
		p := start(t, t.TempDir(), t.TempDir(), env)
		code, body := p.do("GET", "/metrics", nil)
		if code != 200 {
			t.Fatalf("metrics: %d %s", code, body)
		}
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, "go_gc_gomemlimit_bytes "); ok {
				return v
			}
		}
		t.Fatalf("no go_gc_gomemlimit_bytes in /metrics")
		return ""
	}
	if got := limit("GATEWAY_MEMORY_LIMIT_MB=64"); got != "6.7108864e+07" {
		t.Errorf("memory_limit_mb 64: runtime limit %s", got)
	}
	if got := limit("GATEWAY_MEMORY_LIMIT_MB=64", "GOMEMLIMIT=100MiB"); got != "1.048576e+08" {
		t.Errorf("GOMEMLIMIT should win: runtime limit %s", got)
	}
}
