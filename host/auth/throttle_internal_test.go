package auth

import (
	"strconv"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// TestThrottleTableBounded: failures from ever new client keys (an
// X-Forwarded-For spray, an IPv6 range) within one window must not grow the
// table past its bound, and each new key costs O(1) rather than a scan.
func TestThrottleTableBounded(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	th := newThrottle(3, time.Minute, clk.now)
	th.max = 100
	for i := range 10 * th.max {
		th.fail("10.0." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256))
		clk.t = clk.t.Add(time.Millisecond) // all still within the window
		if len(th.byKey) > th.max || len(th.order) > th.max {
			t.Fatalf("after %d keys: %d entries, %d in order; bound %d", i+1, len(th.byKey), len(th.order), th.max)
		}
	}
}

// TestThrottleDefaultBound: the bound applies to the real table.
func TestThrottleDefaultBound(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	th := newThrottle(3, time.Minute, clk.now)
	if th.max != maxThrottled {
		t.Fatalf("max = %d, want %d", th.max, maxThrottled)
	}
	for i := range maxThrottled + 5_000 {
		th.fail("client-" + strconv.Itoa(i))
	}
	if len(th.byKey) != maxThrottled {
		t.Fatalf("%d entries, want the bound %d", len(th.byKey), maxThrottled)
	}
}

// TestThrottleStillThrottles: under the bound a client over the limit is
// refused until its window ends, whatever other clients do meanwhile.
func TestThrottleStillThrottles(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	th := newThrottle(3, time.Minute, clk.now)
	th.max = 100
	for range 3 {
		th.fail("198.51.100.7")
	}
	for i := range th.max - 1 {
		clk.t = clk.t.Add(100 * time.Millisecond)
		th.fail("other-" + strconv.Itoa(i))
	}
	if wait := th.blocked("198.51.100.7"); wait <= 0 || wait > time.Minute {
		t.Fatalf("blocked = %v, want the rest of the window", wait)
	}
	if th.blocked("other-1") != 0 {
		t.Fatal("a client with one failure is blocked")
	}
	clk.t = clk.t.Add(time.Minute)
	if th.blocked("198.51.100.7") != 0 {
		t.Fatal("still blocked after the window")
	}
}

// TestThrottleDropsExpired: ended windows leave the table at the next
// failure, not only once it is full.
func TestThrottleDropsExpired(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	th := newThrottle(3, time.Minute, clk.now)
	for i := range 1000 {
		th.fail("other-" + strconv.Itoa(i))
	}
	clk.t = clk.t.Add(time.Minute)
	th.fail("203.0.113.9")
	if len(th.byKey) != 1 || len(th.order) != 1 {
		t.Fatalf("%d entries, %d in order after the window, want only the new one", len(th.byKey), len(th.order))
	}
}

// TestThrottleEvictsOldest: at the bound the oldest window gives way, not
// the newest, so recent offenders stay throttled.
func TestThrottleEvictsOldest(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	th := newThrottle(1, time.Minute, clk.now)
	th.max = 10
	for i := range 15 {
		clk.t = clk.t.Add(time.Second)
		th.fail("c" + strconv.Itoa(i))
	}
	for i := range 15 {
		got := th.blocked("c"+strconv.Itoa(i)) > 0
		if want := i >= 5; got != want {
			t.Errorf("c%d blocked = %v, want %v", i, got, want)
		}
	}
}
