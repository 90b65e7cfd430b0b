package inference

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/providers"
)

// providerLimits enforces each provider's concurrency_and_buffer_size: at
// most Concurrency upstream exchanges in flight (a stream counts until it
// ends), at most BufferSize more waiting for one to finish. A request
// beyond both is refused at once, and one that waits longer than the
// provider's answer timeout gives up; both failures are retryable, so the
// next key's attempt or the next target of the plan is tried.
type providerLimits struct {
	mu sync.Mutex
	m  map[string]*limiter
}

// limiter is one provider's slots. A settings change replaces it; requests
// holding a slot of the old one give it back there.
type limiter struct {
	concurrency, buffer int
	slots               chan struct{}
	waiting             atomic.Int64
}

func (pl *providerLimits) get(p *providers.Provider) *limiter {
	c, b := p.ConcurrencyAndBufferSize.Concurrency, p.ConcurrencyAndBufferSize.BufferSize
	if c <= 0 {
		return nil
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if l, ok := pl.m[p.Name]; ok && l.concurrency == c && l.buffer == b {
		return l
	}
	if pl.m == nil {
		pl.m = map[string]*limiter{}
	}
	l := &limiter{concurrency: c, buffer: b, slots: make(chan struct{}, c)}
	pl.m[p.Name] = l
	return l
}

// acquire takes a slot, waiting at most wait (or until ctx ends) when all
// are taken and the queue has room. The returned func gives it back; it
// must be called exactly once.
func (l *limiter) acquire(ctx context.Context, provider string, wait time.Duration) (func(), *attemptError) {
	if l == nil {
		return func() {}, nil
	}
	select {
	case l.slots <- struct{}{}:
		return l.release, nil
	default:
	}
	if l.waiting.Add(1) > int64(l.buffer) {
		l.waiting.Add(-1)
		return nil, &attemptError{retryable: true, err: apierr.New(http.StatusServiceUnavailable, apierr.TypeUpstream, "provider_queue_full",
			fmt.Sprintf("provider %q has %d requests in flight and %d waiting (concurrency_and_buffer_size)", provider, l.concurrency, l.buffer))}
	}
	defer l.waiting.Add(-1)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case l.slots <- struct{}{}:
		return l.release, nil
	case <-t.C:
		return nil, &attemptError{retryable: true, err: apierr.New(http.StatusServiceUnavailable, apierr.TypeUpstream, "provider_busy",
			fmt.Sprintf("provider %q had no free slot within %s (concurrency %d)", provider, wait, l.concurrency))}
	case <-ctx.Done():
		return nil, &attemptError{err: apierr.New(http.StatusServiceUnavailable, apierr.TypeUpstream, "provider_busy",
			fmt.Sprintf("gave up waiting for a free slot of provider %q: %v", provider, ctx.Err()))}
	}
}

func (l *limiter) release() { <-l.slots }

// inFlight is how many slots are taken.
func (l *limiter) inFlight() int { return len(l.slots) }

// InFlight reports, per provider with a concurrency limit
// (concurrency_and_buffer_size), how many upstream exchanges hold one of
// its slots now: from an attempt's request until its answer is read (a
// stream until it ends). Providers without a limit are absent, and so
// are slots of a limit a settings change replaced. Every
// exchange gives its slot back however it ends, so an idle gateway reports
// 0 everywhere; the leak tests check exactly that.
func (s *Service) InFlight() map[string]int {
	s.limits.mu.Lock()
	defer s.limits.mu.Unlock()
	out := make(map[string]int, len(s.limits.m))
	for name, l := range s.limits.m {
		out[name] = l.inFlight()
	}
	return out
}
