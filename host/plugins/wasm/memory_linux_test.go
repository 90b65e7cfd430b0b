package wasm_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/host/plugins/wasm"
)

// heapObjects is the Go heap's live object bytes after a full collection.
func heapObjects() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestGuestMemoryLivesOutsideTheGoHeap: a guest's linear memory is its own
// mapping, so the tens of MiB a Go guest grows to do not raise the host
// collector's heap goal (which would double them in the resident set).
// With wazero's default Go-heap memories the heap grows by at least the
// guest's memory and this fails.
func TestGuestMemoryLivesOutsideTheGoHeap(t *testing.T) {
	e := newEngine(t, nil)
	p := load(t, e, plugins.Spec{Name: "mapped", Runtime: plugins.RuntimeWasm, Source: modules["faulty"], Enabled: true,
		Limits: plugins.Limits{PoolSize: 1, MemoryMB: 64, MaxInputBytes: 16 << 20, TimeoutMS: 10000}})
	ctx := context.Background()
	before := heapObjects()
	big := bytes.Repeat([]byte("z"), 12<<20)
	out, err := p.PreRequest(ctx, big)
	if err != nil || len(out.Body) != 12<<20+1 || out.Body[12<<20] != 'z' {
		t.Fatalf("big call: %v", err)
	}
	big, out.Body = nil, nil
	grown := p.InstanceMemoryBytes()
	if grown < 24<<20 || p.Recycled() != 0 {
		t.Fatalf("guest memory %d bytes, recycled %d: the call should have grown the kept instance past 24 MiB", grown, p.Recycled())
	}
	after := heapObjects()
	if after > before+8<<20 {
		t.Fatalf("Go heap grew from %d to %d bytes with a %d-byte guest memory: guest memory is in the Go heap", before, after, grown)
	}
	// The grown memory still works: later calls see their own input.
	out, err = p.PreRequest(ctx, []byte("after"))
	if err != nil || string(out.Body) != ":after" {
		t.Fatalf("call after growth: %q %v", out.Body, err)
	}
	runtime.KeepAlive(big)
}

// TestCompileKeepsTheHeapTight: compiling a module holds all its machine
// code in the Go heap until the end, so the engine compiles with GOGC 25
// and returns the freed pages afterwards. At the default GOGC the heap
// goal during a cold compile is twice the live heap and the freed pages
// stay resident, and this fails.
func TestCompileKeepsTheHeapTight(t *testing.T) {
	e, err := wasm.NewEngine(wasm.Options{}) // no disk cache: a cold compile
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	defer debug.SetGCPercent(debug.SetGCPercent(100))

	samples := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}}
	var maxGoal, maxLive uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			metrics.Read(samples)
			maxGoal = max(maxGoal, samples[0].Value.Uint64())
			maxLive = max(maxLive, samples[1].Value.Uint64())
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	before := heapObjects()
	p := load(t, e, plugins.Spec{Name: "cold", Runtime: plugins.RuntimeWasm, Source: modules["faulty"], Enabled: true})
	close(stop)
	<-done
	if maxLive < before+8<<20 {
		t.Fatalf("live heap peaked at %d bytes from %d: the compile should have held its code in the heap", maxLive, before)
	}
	if limit := maxLive + maxLive/2; maxGoal > limit {
		t.Fatalf("heap goal reached %d bytes with at most %d live: the compile ran with a loose GOGC", maxGoal, maxLive)
	}
	if prev := debug.SetGCPercent(100); prev != 100 {
		t.Fatalf("GOGC after the compile = %d, want the previous 100", prev)
	}
	free := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(free)
	if f := free[0].Value.Uint64(); f > 4<<20 {
		t.Fatalf("%d bytes of freed heap still resident after the compile", f)
	}
	if _, err := p.PreRequest(context.Background(), []byte("ok")); err != nil {
		t.Fatal(err)
	}
}

// execMapped sums the anonymous executable mappings of this process:
// wazero's compiled machine code.
func execMapped(t *testing.T) uint64 {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) != 5 || !strings.Contains(f[1], "x") { // 5 fields: no path
			continue
		}
		var lo, hi uint64
		if _, err := fmt.Sscanf(f[0], "%x-%x", &lo, &hi); err == nil {
			total += hi - lo
		}
	}
	return total
}

// TestIdleUnloadReleasesTheMachineCode: the compiled module lives in the
// engine the compilation cache shares, so unloading must close it too or
// the plugin's machine code stays mapped (it did, through every idle
// unload and hot reload, until 2026-11-25). The restart then compiles
// from the on-disk cache.
func TestIdleUnloadReleasesTheMachineCode(t *testing.T) {
	e, path := idleEngine(t, wasm.Options{CacheDir: t.TempDir()})
	pl, err := e.Load(context.Background(), plugins.Spec{Name: "faulty", Runtime: plugins.RuntimeWasm, Source: path, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	p := pl.(*wasm.Plugin)
	t.Cleanup(func() { _ = p.Close() })
	// The faulty module's machine code is ~12 MiB; earlier tests' modules
	// may still be waiting for their finalizers, so compare differences.
	const code = 6 << 20
	loaded := execMapped(t)
	// Unmapping happens when the collector finalizes the compiled module.
	deadline := time.Now().Add(5 * time.Second)
	var unloaded uint64
	for {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
		if unloaded = execMapped(t); p.Instances() == 0 && unloaded+code <= loaded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the idle unload: %d instances, executable mappings %d bytes (%d loaded)", p.Instances(), unloaded, loaded)
		}
	}
	restartAt := time.Now()
	out, err := p.PreRequest(context.Background(), []byte("again"))
	t.Logf("call restarting the runtime from the disk cache: %s", time.Since(restartAt))
	if err != nil || string(out.Body) != ":again" {
		t.Fatalf("call after unload: %q %v", out.Body, err)
	}
	if got := execMapped(t); got < unloaded+code {
		t.Fatalf("executable mappings %d bytes after the restart (%d unloaded): the code should be mapped again", got, unloaded)
	}
}
