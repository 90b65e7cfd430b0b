package counters_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmgate/gateway/store/badgerstore"
	"github.com/wasmgate/gateway/store/counters"
)

func TestReserveIsAllOrNothingAndConcurrentSafe(t *testing.T) {
	ctx := context.Background()
	m, err := counters.OpenMemory(ctx, counters.MemoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	w := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// A refused second charge leaves the first untouched.
	if i, _ := m.Reserve(ctx, []counters.Charge{{Key: "a", Window: w, Limit: 10, Amount: 3}, {Key: "b", Window: w, Limit: 2, Amount: 3}}); i != 1 {
		t.Fatalf("refused index %d, want 1", i)
	}
	if v, _ := m.Get(ctx, "a", w); v != 0 {
		t.Fatalf("a = %d after a refused reservation", v)
	}
	var ok atomic.Int64
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i, _ := m.Reserve(ctx, []counters.Charge{{Key: "a", Window: w, Limit: 10, Amount: 1}}); i < 0 {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 10 {
		t.Fatalf("%d reservations admitted, want 10", ok.Load())
	}
	// At the limit even a zero charge is refused; a release reopens room.
	if i, _ := m.Reserve(ctx, []counters.Charge{{Key: "a", Window: w, Limit: 10}}); i != 0 {
		t.Fatal("zero charge admitted at the limit")
	}
	_ = m.Adjust(ctx, "a", w, -4)
	if v, _ := m.Get(ctx, "a", w); v != 6 {
		t.Fatalf("a = %d, want 6", v)
	}
	// A new window starts at zero; settling the old one is ignored.
	w2 := w.Add(time.Minute)
	if i, _ := m.Reserve(ctx, []counters.Charge{{Key: "a", Window: w2, Limit: 10, Amount: 10}}); i >= 0 {
		t.Fatal("new window did not reset")
	}
	_ = m.Adjust(ctx, "a", w, -5)
	if v, _ := m.Get(ctx, "a", w2); v != 10 {
		t.Fatalf("a = %d in the new window, want 10", v)
	}
}

func TestCountersSurviveReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := badgerstore.Open(badgerstore.Options{Dir: dir, SyncWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := counters.OpenMemory(ctx, counters.MemoryOptions{Store: db, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	w := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	_, _ = m.Reserve(ctx, []counters.Charge{{Key: "vk/1/budget", Window: w, Limit: 100, Amount: 42}})
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	_ = m.Adjust(ctx, "vk/1/budget", w, 8)
	if err := m.Close(); err != nil { // Close flushes the rest
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = badgerstore.Open(badgerstore.Options{Dir: dir, SyncWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m, err = counters.OpenMemory(ctx, counters.MemoryOptions{Store: db})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if v, _ := m.Get(ctx, "vk/1/budget", w); v != 50 {
		t.Fatalf("after reopen %d, want 50", v)
	}
	if err := m.Delete(ctx, "vk/1/"); err != nil {
		t.Fatal(err)
	}
	if v, _ := m.Get(ctx, "vk/1/budget", w); v != 0 {
		t.Fatalf("after delete %d", v)
	}
}
