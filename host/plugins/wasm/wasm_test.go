package wasm_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/host/plugins/wasm"
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

var modules = map[string]string{}

func TestMain(m *testing.M) {
	for _, name := range []string{"faulty", "noop", "wrongabi"} {
		p, err := plugintest.BuildWasmErr("../testdata/"+name, "")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		modules[name] = p
	}
	os.Exit(m.Run())
}

// logBuffer captures what the runtime logs, guest stderr included.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newEngine(t testing.TB, logs *logBuffer) *wasm.Engine {
	t.Helper()
	var w = os.Stderr
	var log *slog.Logger
	if logs != nil {
		log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	} else {
		log = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	e, err := wasm.NewEngine(wasm.Options{CacheDir: plugintest.CacheDir(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

func load(t testing.TB, e *wasm.Engine, spec plugins.Spec) *wasm.Plugin {
	t.Helper()
	bin, err := os.ReadFile(spec.Source)
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.LoadBytes(context.Background(), spec, bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func sha(t testing.TB, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestHooksRoundTrip(t *testing.T) {
	e := newEngine(t, nil)
	p := load(t, e, plugins.Spec{Name: "faulty", Runtime: plugins.RuntimeWasm, Source: modules["faulty"], Enabled: true,
		Config: []byte(`{"tag":"v1"}`), Limits: plugins.Limits{PoolSize: 2}})
	ctx := context.Background()

	m := p.Manifest()
	if m.Name != "faulty" || m.ABI != 1 || !m.Implements(pluginsdk.HookPreRequest) || !m.Implements(pluginsdk.HookStreamBatch) || m.Implements(pluginsdk.HookPostResponse) {
		t.Fatalf("manifest: %+v", m)
	}
	out, err := p.PreRequest(ctx, []byte("hello"))
	if err != nil || string(out.Body) != "v1:hello" || out.Headers["x-faulty-tag"] != "v1" || out.Status != pluginsdk.StatusOK {
		t.Fatalf("pre_request: %+v %v", out, err)
	}
	out, err = p.PreRequest(ctx, []byte("respond"))
	if err != nil || string(out.Response) != `{"id":"short","choices":[]}` {
		t.Fatalf("short-circuit: %+v %v", out, err)
	}
	_, err = p.PreRequest(ctx, []byte("reject"))
	var pe *plugins.Error
	if !errors.As(err, &pe) || pe.Kind != plugins.KindRejected || pe.Code != 403 || pe.Plugin != "faulty" || pe.Failure() {
		t.Fatalf("reject: %v", err)
	}
	// post_response is not implemented: answered without entering the guest.
	out, err = p.PostResponse(ctx, []byte("x"))
	if err != nil || out.Status != pluginsdk.StatusPassThrough {
		t.Fatalf("unimplemented hook: %+v %v", out, err)
	}
	// Stream state is kept by the host and may move between instances.
	var state []byte
	for i := 1; i <= 5; i++ {
		out, err = p.StreamBatch(ctx, pluginsdk.StreamInput{State: state, Batch: []byte(`[{"i":1}]`)})
		if err != nil || string(out.Body) != `[{"i":1}]` || string(out.State) != fmt.Sprint(i) {
			t.Fatalf("stream batch %d: %+v %v", i, out, err)
		}
		state = out.State
	}
	out, err = p.StreamBatch(ctx, pluginsdk.StreamInput{State: state})
	if err != nil || out.Status != pluginsdk.StatusNoOutput {
		t.Fatalf("drop: %+v %v", out, err)
	}
	out, err = p.StreamBatch(ctx, pluginsdk.StreamInput{State: state, End: true})
	if err != nil || string(out.Body) != "end:6" {
		t.Fatalf("end: %+v %v", out, err)
	}
	out, err = p.AdaptRequest(ctx, []byte(`{"model":"gpt-x","messages":[]}`))
	if err != nil || !bytes.Contains(out.Body, []byte(`"x-model":"gpt-x"`)) {
		t.Fatalf("adapt_request: %s %v", out.Body, err)
	}
	// Go guests run with a small GC target: their heap is linear memory,
	// which never shrinks.
	out, err = p.PreRequest(ctx, []byte("env GOGC"))
	if err != nil || string(out.Body) != "25" {
		t.Fatalf("guest GOGC = %q (%v), want 25", out.Body, err)
	}
	// Large input grows the guest buffer once and keeps working.
	big := bytes.Repeat([]byte("a"), 300<<10)
	out, err = p.PreRequest(ctx, big)
	if err != nil || len(out.Body) != len(big)+3 {
		t.Fatalf("big input: %d %v", len(out.Body), err)
	}
}

// Each failure must kill only its instance: the call gets a typed error
// naming the plugin, and the next calls succeed promptly.
func TestFailuresAreIsolated(t *testing.T) {
	cases := []struct {
		input string
		kind  plugins.ErrorKind
		text  string
	}{
		{"panic", plugins.KindPanic, "boom: asked to panic"},
		{"trap", plugins.KindTrap, "out of bounds"},
		{"loop", plugins.KindTimeout, "deadline"},
		{"oom", plugins.KindOutOfMemory, "out of memory"},
		{"exit", plugins.KindCrash, "exit_code(3)"},
	}
	logs := &logBuffer{}
	e := newEngine(t, logs)
	// Through the Manager, so the status is checked as the API shows it.
	m := plugins.NewManager(plugins.ManagerOptions{Loaders: map[plugins.Runtime]plugins.Loader{plugins.RuntimeWasm: e}})
	t.Cleanup(func() { _ = m.Close() })
	if err := m.Apply(context.Background(), plugins.Spec{Name: "faulty-guest", Runtime: plugins.RuntimeWasm, Source: modules["faulty"], Enabled: true,
		Config: []byte(`{"tag":"ok"}`), Limits: plugins.Limits{PoolSize: 2, TimeoutMS: 1500, MemoryMB: 48}}); err != nil {
		t.Fatal(err)
	}
	p, _ := m.Entry("faulty-guest")
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.input, func(t *testing.T) {
			start := time.Now()
			_, err := p.PreRequest(ctx, []byte(c.input))
			var pe *plugins.Error
			if !errors.As(err, &pe) {
				t.Fatalf("want *plugins.Error, got %v", err)
			}
			if pe.Plugin != "faulty-guest" || pe.Kind != c.kind || !pe.Failure() || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("error = %v (kind %s), want kind %s containing %q", err, pe.Kind, c.kind, c.text)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("failure took %s", d)
			}
			st, _ := m.Get("faulty-guest")
			if st.State != plugins.StateLoaded || !strings.Contains(st.Error, string(c.kind)) || !strings.Contains(st.LastError, "faulty-guest") {
				t.Fatalf("status does not show the failure: %+v", st)
			}
			// The pool keeps serving while the dead instance is replaced.
			for i := 0; i < 10; i++ {
				cs := time.Now()
				out, err := p.PreRequest(ctx, []byte("fine"))
				if err != nil || string(out.Body) != "ok:fine" {
					t.Fatalf("call %d after %s: %v", i, c.input, err)
				}
				if d := time.Since(cs); d > time.Second {
					t.Fatalf("call after %s took %s", c.input, d)
				}
			}
		})
	}
	if !strings.Contains(logs.String(), "boom: asked to panic") {
		t.Errorf("guest stderr not forwarded to the logger:\n%s", logs.String())
	}
}

func TestWrongABIRejectedBeforeItRuns(t *testing.T) {
	logs := &logBuffer{}
	e := newEngine(t, logs)
	bin, err := os.ReadFile(modules["wrongabi"])
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.LoadBytes(context.Background(), plugins.Spec{Name: "future", Runtime: plugins.RuntimeWasm, Source: "x", Enabled: true}, bin)
	if err == nil || !strings.Contains(err.Error(), "unsupported plugin ABI") || !strings.Contains(err.Error(), "wasmgate_abi_v2") {
		t.Fatalf("want ABI rejection, got %v", err)
	}
	if strings.Contains(logs.String(), "WRONGABI INIT RAN") {
		t.Fatal("module code ran before the ABI check")
	}
	_, err = e.LoadBytes(context.Background(), plugins.Spec{Name: "junk", Runtime: plugins.RuntimeWasm, Source: "x", Enabled: true}, []byte("\x00asm\x01\x00\x00\x00"))
	if err == nil || !strings.Contains(err.Error(), "not a wasmgate plugin") {
		t.Fatalf("empty module: %v", err)
	}
}

func TestTrustRequiresMatchingPin(t *testing.T) {
	e := newEngine(t, nil)
	bin, _ := os.ReadFile(modules["noop"])
	_, err := e.LoadBytes(context.Background(), plugins.Spec{Name: "n", Runtime: plugins.RuntimeWasm, Source: "x", Enabled: true, Trusted: true}, bin)
	if err == nil || !strings.Contains(err.Error(), "trusted requires sha256") {
		t.Fatalf("trusted without pin: %v", err)
	}
	_, err = e.LoadBytes(context.Background(), plugins.Spec{Name: "n", Runtime: plugins.RuntimeWasm, Source: "x", Enabled: true, Trusted: true,
		SHA256: strings.Repeat("0", 64)}, bin)
	if err == nil || !strings.Contains(err.Error(), "sha256 mismatch") {
		t.Fatalf("wrong pin: %v", err)
	}
	p := load(t, e, plugins.Spec{Name: "n", Runtime: plugins.RuntimeWasm, Source: modules["noop"], Enabled: true, Trusted: true, SHA256: sha(t, modules["noop"])})
	if !p.Trusted() {
		t.Fatal("pinned module not trusted")
	}
}

func TestInputCap(t *testing.T) {
	e := newEngine(t, nil)
	p := load(t, e, plugins.Spec{Name: "capped", Runtime: plugins.RuntimeWasm, Source: modules["faulty"], Enabled: true,
		Limits: plugins.Limits{PoolSize: 1, MaxInputBytes: 1024}})
	_, err := p.PreRequest(context.Background(), make([]byte, 2048))
	var pe *plugins.Error
	if !errors.As(err, &pe) || pe.Kind != plugins.KindInputTooLarge || pe.HTTPStatus() != 413 {
		t.Fatalf("want input_too_large, got %v", err)
	}
	if _, err := p.PreRequest(context.Background(), []byte("small")); err != nil {
		t.Fatal(err)
	}
}

func TestCompilationCacheDirIsPrivate(t *testing.T) {
	dir := t.TempDir() + "/cache"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := wasm.NewEngine(wasm.Options{CacheDir: dir}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("cache dir mode %v %v", st.Mode().Perm(), err)
	}
}

// An instance whose memory grew past 3/4 of the limit is replaced after
// its call, so a single huge request does not pin memory forever.
func TestRecycleAfterMemoryGrowth(t *testing.T) {
	e := newEngine(t, nil)
	p := load(t, e, plugins.Spec{Name: "grow", Runtime: plugins.RuntimeWasm, Source: modules["faulty"], Enabled: true,
		Limits: plugins.Limits{PoolSize: 1, MemoryMB: 40, MaxInputBytes: 16 << 20, TimeoutMS: 10000}})
	ctx := context.Background()
	out, err := p.PreRequest(ctx, bytes.Repeat([]byte("z"), 12<<20))
	if err != nil || len(out.Body) != 12<<20+1 {
		t.Fatalf("big call: %v", err)
	}
	if p.Recycled() != 1 {
		t.Fatalf("recycled = %d", p.Recycled())
	}
	if _, err := p.PreRequest(ctx, []byte("small")); err != nil {
		t.Fatal(err)
	}
	if m := p.InstanceMemoryBytes(); m > 24<<20 {
		t.Fatalf("fresh instance already holds %d bytes", m)
	}
}

// TestPoolGrowsOnDemand: a plugin starts with one instance and adds more,
// up to pool_size, only when a call finds every instance busy; a call
// arriving while the only instance is stuck is served by a new one at once
// instead of waiting for the stuck call's timeout.
func TestPoolGrowsOnDemand(t *testing.T) {
	e := newEngine(t, &logBuffer{})
	p := load(t, e, plugins.Spec{Name: "faulty", Runtime: plugins.RuntimeWasm, Source: modules["faulty"], Enabled: true,
		Config: []byte(`{"tag":"ok"}`), Limits: plugins.Limits{PoolSize: 3, TimeoutMS: 3000}})
	ctx := context.Background()
	if n := p.Instances(); n != 1 {
		t.Fatalf("instances after load = %d, want 1", n)
	}
	for i := 0; i < 20; i++ { // sequential calls reuse the one instance
		if _, err := p.PreRequest(ctx, []byte("fine")); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.Instances(); n != 1 {
		t.Fatalf("instances after sequential calls = %d, want 1", n)
	}
	stuck := make(chan error, 1)
	go func() { _, err := p.PreRequest(ctx, []byte("loop")); stuck <- err }()
	time.Sleep(200 * time.Millisecond) // the only instance is now looping
	start := time.Now()
	out, err := p.PreRequest(ctx, []byte("fine"))
	if err != nil || string(out.Body) != "ok:fine" {
		t.Fatalf("call beside a stuck one: %+v %v", out, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("call beside a stuck one waited %s: the pool did not grow", d)
	}
	if n := p.Instances(); n != 2 {
		t.Fatalf("instances with one stuck call = %d, want 2", n)
	}
	if err := <-stuck; err == nil {
		t.Fatal("the looping call succeeded")
	}
	// Many concurrent calls never take the pool past its size.
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if _, err := p.PreRequest(ctx, []byte("fine")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := p.Instances(); n < 2 || n > 3 {
		t.Fatalf("instances after concurrent calls = %d, want 2..3", n)
	}
}

// TestIdleUnloadRestartsFromTheVerifiedFile: a plugin loaded from a file
// unloads its runtime after the idle period and the next call starts it
// again, configured as before; a module file changed meanwhile is refused
// (KindUnavailable naming the file), and calls racing the unloading never
// fail.
// idleEngine is an engine that unloads plugins idle for 100 ms, and a
// copy of the faulty module in a file of its own (only plugins loaded from
// a file unload, and a test may change the file).
func idleEngine(t *testing.T, opts wasm.Options) (*wasm.Engine, string) {
	t.Helper()
	if opts.IdleUnload == 0 {
		opts.IdleUnload = 100 * time.Millisecond
	}
	e, err := wasm.NewEngine(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	path := filepath.Join(t.TempDir(), "faulty.wasm")
	bin, err := os.ReadFile(modules["faulty"])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bin, 0o600); err != nil {
		t.Fatal(err)
	}
	return e, path
}

func TestIdleUnloadRestartsFromTheVerifiedFile(t *testing.T) {
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e, path := idleEngine(t, wasm.Options{CacheDir: plugintest.CacheDir(), Logger: log})
	pl, err := e.Load(context.Background(), plugins.Spec{Name: "faulty", Runtime: plugins.RuntimeWasm, Source: path, Enabled: true,
		Config: []byte(`{"tag":"v7"}`), Limits: plugins.Limits{PoolSize: 2}})
	if err != nil {
		t.Fatal(err)
	}
	p := pl.(*wasm.Plugin)
	t.Cleanup(func() { _ = p.Close() })
	ctx := context.Background()
	call := func() error {
		out, err := p.PreRequest(ctx, []byte("x"))
		if err == nil && string(out.Body) != "v7:x" {
			return fmt.Errorf("body %q, want v7:x (config lost across a restart?)", out.Body)
		}
		return err
	}
	waitUnloaded := func() {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for p.Instances() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("still %d instances after the idle period", p.Instances())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	waitUnloaded()
	if !strings.Contains(logs.String(), "runtime unloaded") {
		t.Fatalf("no unload logged:\n%s", logs.String())
	}
	if err := call(); err != nil || p.Instances() != 1 {
		t.Fatalf("call after unload: %v, %d instances", err, p.Instances())
	}
	if p.Manifest().Name != "faulty" {
		t.Fatalf("manifest after restart: %+v", p.Manifest())
	}

	// Calls arriving around the idle deadline, some concurrent.
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 12; i++ {
				if err := call(); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Duration(60+20*g+i*7) * time.Millisecond)
			}
		}(g)
	}
	wg.Wait()

	waitUnloaded()
	bin, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(bin, 0), 0o600); err != nil {
		t.Fatal(err)
	}
	err = call()
	var pe *plugins.Error
	if !errors.As(err, &pe) || pe.Kind != plugins.KindUnavailable || !strings.Contains(err.Error(), "changed since the plugin was loaded") {
		t.Fatalf("call with a changed module file: %v", err)
	}
	if err := os.WriteFile(path, bin, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := call(); err != nil {
		t.Fatalf("call with the file restored: %v", err)
	}
}

// TestUnusedPluginUnloadsBeforeTheIdlePeriod: a plugin never called since
// it was loaded (an adapter needed only for its manifest) unloads after
// UnusedUnload; once called, it keeps the whole idle period.
func TestUnusedPluginUnloadsBeforeTheIdlePeriod(t *testing.T) {
	e, path := idleEngine(t, wasm.Options{CacheDir: plugintest.CacheDir(), IdleUnload: time.Hour, UnusedUnload: 100 * time.Millisecond})
	load := func(name string) *wasm.Plugin {
		pl, err := e.Load(context.Background(), plugins.Spec{Name: name, Runtime: plugins.RuntimeWasm, Source: path, Enabled: true})
		if err != nil {
			t.Fatal(err)
		}
		p := pl.(*wasm.Plugin)
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
	unused, used := load("unused"), load("used")
	if _, err := used.PreRequest(context.Background(), []byte("x")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for unused.Instances() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a plugin never called is still loaded (%d instances)", unused.Instances())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if used.Instances() == 0 {
		t.Fatal("a plugin that was called unloaded before its idle period")
	}
	if _, err := unused.PreRequest(context.Background(), []byte("x")); err != nil || unused.Instances() != 1 {
		t.Fatalf("first call of the unloaded plugin: %v, %d instances", err, unused.Instances())
	}
}
