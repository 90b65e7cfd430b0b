package inference

import (
	"context"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/providers"
)

func TestLimiterSlotsAndQueue(t *testing.T) {
	var pl providerLimits
	p := &providers.Provider{Name: "openai"}
	p.ConcurrencyAndBufferSize.Concurrency, p.ConcurrencyAndBufferSize.BufferSize = 2, 1
	l := pl.get(p)
	ctx := context.Background()
	r1, e1 := l.acquire(ctx, "openai", time.Second)
	r2, e2 := l.acquire(ctx, "openai", time.Second)
	if e1 != nil || e2 != nil || l.inFlight() != 2 {
		t.Fatalf("two free slots: %v %v, %d in flight", e1, e2, l.inFlight())
	}
	got := make(chan error, 1)
	go func() {
		r, e := l.acquire(ctx, "openai", 5*time.Second)
		if e != nil {
			got <- e.err
			return
		}
		r()
		got <- nil
	}()
	for l.waiting.Load() != 1 {
		time.Sleep(time.Millisecond)
	}
	if _, e := l.acquire(ctx, "openai", time.Second); e == nil || !e.retryable || e.err.Detail.Code != "provider_queue_full" {
		t.Fatalf("queue full: %+v", e)
	}
	r1()
	if err := <-got; err != nil {
		t.Fatalf("the waiting request: %v", err)
	}
	if _, e := l.acquire(ctx, "openai", 0); e != nil {
		t.Fatalf("slot given back by the waiter: %v", e.err)
	}
	if _, e := l.acquire(ctx, "openai", 30*time.Millisecond); e == nil || e.err.Detail.Code != "provider_busy" {
		t.Fatalf("no slot within the wait: %+v", e)
	}
	r2()
	if l.inFlight() != 1 {
		t.Fatalf("%d in flight, want 1", l.inFlight())
	}
	p.ConcurrencyAndBufferSize.Concurrency = 3
	if pl.get(p) == l {
		t.Fatal("a changed concurrency kept the old limiter")
	}
}
