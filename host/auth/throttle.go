package auth

import (
	"hash/maphash"
	"sync"
	"time"
)

// maxThrottled bounds the clients the throttle tracks at once. The key is
// chosen by the client more than it seems: behind a trusted proxy it is the
// X-Forwarded-For value, which the client prefixes at will, and one IPv6
// host has millions of addresses. Without a bound, failures from ever new
// keys grow the table at the request rate. At the bound the oldest window
// gives way: a client that can spray this many addresses a minute already
// gets limit guesses per address, so eviction does not weaken the throttle.
const maxThrottled = 100_000

// throttle counts failed credential checks per client in a fixed window; a
// client over the limit is refused until the window ends. It bounds password
// guessing through login, Basic and base64 bearer alike.
type throttle struct {
	limit  int
	window time.Duration
	now    func() time.Time
	max    int // maxThrottled; tests lower it
	// seed hashes keys: the table keeps a fixed-size digest rather than
	// the address, which behind a proxy is a header value of up to the
	// header limit (and a view of the request buffer, reused by the
	// connection's next request). The seed is secret, so a client cannot
	// aim a collision at another client's window.
	seed  maphash.Seed
	mu    sync.Mutex
	byKey map[uint64]*window
	// order holds the windows by start, oldest first, so expired ones are
	// dropped from the front and the oldest is evicted at the bound. An
	// element whose key now maps to another window (or none) is stale and
	// skipped.
	order []*window
}

type window struct {
	key      uint64
	start    time.Time
	failures int
}

func newThrottle(limit int, w time.Duration, now func() time.Time) *throttle {
	return &throttle{limit: limit, window: w, now: now, max: maxThrottled,
		seed: maphash.MakeSeed(), byKey: map[uint64]*window{}}
}

// blocked returns how long the client must wait, or 0.
func (t *throttle) blocked(key string) time.Duration {
	h := maphash.String(t.seed, key)
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.byKey[h]
	if !ok {
		return 0
	}
	now := t.now()
	if now.Sub(w.start) >= t.window {
		delete(t.byKey, h)
		return 0
	}
	if w.failures >= t.limit {
		return w.start.Add(t.window).Sub(now)
	}
	return 0
}

func (t *throttle) fail(key string) {
	h := maphash.String(t.seed, key)
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	w, ok := t.byKey[h]
	if !ok || now.Sub(w.start) >= t.window {
		t.dropExpired(now)
		for len(t.byKey) >= t.max && len(t.order) > 0 {
			t.popOldest()
		}
		w = &window{key: h, start: now}
		t.byKey[h] = w
		t.order = append(t.order, w)
	}
	w.failures++
}

// dropExpired removes the windows that have ended from the front of order.
// Each window is appended once and removed once, so the cost is amortized
// constant per failure, however many clients are tracked.
func (t *throttle) dropExpired(now time.Time) {
	for len(t.order) > 0 && now.Sub(t.order[0].start) >= t.window {
		t.popOldest()
	}
}

// popOldest removes the front of order and, unless it is stale, its entry.
func (t *throttle) popOldest() {
	w := t.order[0]
	t.order[0] = nil // let the collector have it
	t.order = t.order[1:]
	if t.byKey[w.key] == w {
		delete(t.byKey, w.key)
	}
}
