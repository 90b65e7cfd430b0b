package plugins

import (
	"slices"
	"sync"
	"time"
)

// statsWindow is how many recent call latencies percentiles are computed
// over: enough for stable p99 yet a fixed 8 KiB per plugin.
const statsWindow = 1024

// Stats counts calls of one plugin. Latencies live in a ring buffer so
// percentiles reflect recent behaviour rather than all history.
type Stats struct {
	mu        sync.Mutex
	calls     uint64
	errors    uint64
	lastError string
	lastErrAt time.Time
	total     time.Duration
	ring      [statsWindow]time.Duration
	n         int
	next      int
}

// Record adds one call.
func (s *Stats) Record(d time.Duration, err error) {
	s.mu.Lock()
	s.calls++
	s.total += d
	if err != nil {
		s.errors++
		s.lastError = err.Error()
		s.lastErrAt = time.Now()
	}
	s.ring[s.next] = d
	s.next = (s.next + 1) % statsWindow
	if s.n < statsWindow {
		s.n++
	}
	s.mu.Unlock()
}

// StatsSnapshot is a point-in-time copy of Stats.
type StatsSnapshot struct {
	Calls       uint64    `json:"calls"`
	Errors      uint64    `json:"errors"`
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// Total is the time spent in all calls, the sum a Prometheus summary
	// carries (its rate over the rate of Calls is the mean call time).
	Total time.Duration `json:"total_ns"`
	P50   time.Duration `json:"p50_ns"`
	P95   time.Duration `json:"p95_ns"`
	P99   time.Duration `json:"p99_ns"`
}

// Snapshot copies the counters and computes percentiles off the hot path.
func (s *Stats) Snapshot() StatsSnapshot {
	s.mu.Lock()
	snap := StatsSnapshot{Calls: s.calls, Errors: s.errors, LastError: s.lastError, LastErrorAt: s.lastErrAt, Total: s.total}
	lat := make([]time.Duration, s.n)
	copy(lat, s.ring[:s.n])
	s.mu.Unlock()
	if len(lat) == 0 {
		return snap
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	snap.P50, snap.P95, snap.P99 = pct(0.50), pct(0.95), pct(0.99)
	return snap
}
