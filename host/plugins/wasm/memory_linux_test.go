package wasm_test

import (
	"bytes"
	"context"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/wasmgate/gateway/host/plugins"
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
