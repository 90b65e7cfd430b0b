package plugins_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/host/plugins/wasm"
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

var faultyWasm string

func TestMain(m *testing.M) {
	p, err := plugintest.BuildWasmErr("testdata/faulty", "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	faultyWasm = p
	os.Exit(m.Run())
}

func newManager(t *testing.T) *plugins.Manager {
	t.Helper()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	eng, err := wasm.NewEngine(wasm.Options{CacheDir: plugintest.CacheDir(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	m := plugins.NewManager(plugins.ManagerOptions{Loaders: map[plugins.Runtime]plugins.Loader{plugins.RuntimeWasm: eng}, Logger: log})
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func spec(name, tag string) plugins.Spec {
	return plugins.Spec{Name: name, Runtime: plugins.RuntimeWasm, Source: faultyWasm, Enabled: true,
		Config: []byte(`{"tag":"` + tag + `"}`), Limits: plugins.Limits{PoolSize: 2, TimeoutMS: 500}}
}

// Concurrent calls keep succeeding while the plugin is reconfigured and
// reloaded repeatedly; each answer comes from exactly one generation.
func TestHotReloadUnderLoad(t *testing.T) {
	m := newManager(t)
	ctx := context.Background()
	if err := m.Apply(ctx, spec("hot", "g0")); err != nil {
		t.Fatal(err)
	}
	e, ok := m.Entry("hot")
	if !ok {
		t.Fatal("entry missing")
	}
	var stop atomic.Bool
	var calls, failures atomic.Int64
	seen := sync.Map{}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				out, err := e.PreRequest(ctx, []byte("x"))
				calls.Add(1)
				if err != nil {
					failures.Add(1)
					t.Errorf("call failed during reload: %v", err)
					return
				}
				tag, _, _ := strings.Cut(string(out.Body), ":")
				seen.Store(tag, true)
			}
		}()
	}
	for i := 1; i <= 5; i++ {
		time.Sleep(30 * time.Millisecond)
		if err := m.Configure(ctx, "hot", []byte(fmt.Sprintf(`{"tag":"g%d"}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(30 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if failures.Load() > 0 || calls.Load() < 20 {
		t.Fatalf("calls=%d failures=%d", calls.Load(), failures.Load())
	}
	out, err := e.PreRequest(ctx, []byte("x"))
	if err != nil || string(out.Body) != "g5:x" {
		t.Fatalf("after reloads: %s %v", out.Body, err)
	}
	n := 0
	seen.Range(func(any, any) bool { n++; return true })
	if n < 3 {
		t.Errorf("only %d generations answered", n)
	}
	st, _ := m.Get("hot")
	if st.State != plugins.StateLoaded || st.Calls < uint64(calls.Load()) || st.P50 <= 0 || st.Kind != "transform" {
		t.Fatalf("status %+v", st)
	}
}

func TestStatusFailOpenAndDisable(t *testing.T) {
	m := newManager(t)
	ctx := context.Background()
	s := spec("strict", "s")
	s.Order = 2
	if err := m.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	lenient := spec("lenient", "l")
	lenient.FailOpen, lenient.Order = true, 1
	if err := m.Apply(ctx, lenient); err != nil {
		t.Fatal(err)
	}
	chain := m.Chain(pluginsdk.HookPreRequest)
	if len(chain) != 2 || chain[0].Name() != "lenient" || chain[1].Name() != "strict" {
		t.Fatalf("chain order wrong: %v", chain)
	}
	// fail_open: the panic is counted and logged but the call passes.
	out, err := chain[0].PreRequest(ctx, []byte("panic"))
	if err != nil || out.Status != pluginsdk.StatusPassThrough {
		t.Fatalf("fail_open: %+v %v", out, err)
	}
	_, err = chain[1].PreRequest(ctx, []byte("panic"))
	if !plugins.IsFailure(err) || !strings.Contains(err.Error(), `"strict"`) {
		t.Fatalf("fail closed: %v", err)
	}
	for _, name := range []string{"lenient", "strict"} {
		st, _ := m.Get(name)
		if st.Errors != 1 || !strings.Contains(st.LastError, "panic") || st.State != plugins.StateLoaded {
			t.Fatalf("%s status %+v", name, st)
		}
	}
	// A bad reload keeps the old generation serving and reports the error.
	bad := spec("strict", "s2")
	bad.Config = []byte(`{"fail_configure":true}`)
	if err := m.Apply(ctx, bad); err == nil {
		t.Fatal("bad config accepted")
	}
	st, _ := m.Get("strict")
	if st.State != plugins.StateError || !strings.Contains(st.Error, "config rejected on purpose") || !strings.Contains(st.Error, "still serving") {
		t.Fatalf("status after bad reload %+v", st)
	}
	if out, err := chain[1].PreRequest(ctx, []byte("x")); err != nil || string(out.Body) != "s:x" {
		t.Fatalf("old generation not serving: %v", err)
	}
	s.Enabled = false
	if err := m.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	st, _ = m.Get("strict")
	if st.State != plugins.StateDisabled || len(m.Chain(pluginsdk.HookPreRequest)) != 1 {
		t.Fatalf("disable: %+v", st)
	}
	if len(m.List()) != 2 {
		t.Fatal("disabled plugin should stay listed")
	}
	if err := m.Apply(ctx, plugins.Spec{Name: "x", Runtime: plugins.RuntimeWasm, Source: "/nope.wasm", Enabled: true}); err == nil {
		t.Fatal("missing file accepted")
	}
	st, _ = m.Get("x")
	if st.State != plugins.StateError || !strings.Contains(st.Error, "nope.wasm") {
		t.Fatalf("load error status %+v", st)
	}
}
