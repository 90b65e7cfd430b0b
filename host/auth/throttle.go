package auth

import (
	"strings"
	"sync"
	"time"
)

// throttle counts failed credential checks per client in a fixed window; a
// client over the limit is refused until the window ends. It bounds password
// guessing through login, Basic and base64 bearer alike.
type throttle struct {
	limit  int
	window time.Duration
	now    func() time.Time
	mu     sync.Mutex
	byKey  map[string]*window
}

type window struct {
	start    time.Time
	failures int
}

func newThrottle(limit int, w time.Duration, now func() time.Time) *throttle {
	return &throttle{limit: limit, window: w, now: now, byKey: map[string]*window{}}
}

// blocked returns how long the client must wait, or 0.
func (t *throttle) blocked(key string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.byKey[key]
	if !ok {
		return 0
	}
	now := t.now()
	if now.Sub(w.start) >= t.window {
		delete(t.byKey, key)
		return 0
	}
	if w.failures >= t.limit {
		return w.start.Add(t.window).Sub(now)
	}
	return 0
}

func (t *throttle) fail(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	w, ok := t.byKey[key]
	if !ok || now.Sub(w.start) >= t.window {
		if len(t.byKey) > 100_000 {
			// Bound memory under a spray of addresses: drop expired windows.
			for k, v := range t.byKey {
				if now.Sub(v.start) >= t.window {
					delete(t.byKey, k)
				}
			}
		}
		w = &window{start: now}
		// key is the client address, which behind a trusted proxy is the
		// X-Forwarded-For value: a view of the request buffer that the
		// connection's next request overwrites. The table keeps a copy.
		t.byKey[strings.Clone(key)] = w
	}
	w.failures++
}
