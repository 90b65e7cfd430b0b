package routing

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// RetryPolicy is a provider's retry configuration.
type RetryPolicy struct {
	MaxRetries int
	Initial    time.Duration
	Max        time.Duration
}

// Retryable reports whether an upstream status is worth another attempt on
// the same target: rate limits, overload and server errors. Other 4xx are
// the request's fault and go straight to the fallback decision.
func Retryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusRequestTimeout, http.StatusConflict,
		http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable,
		http.StatusGatewayTimeout, 529:
		return true
	}
	return false
}

// FallbackWorthy reports whether a failed target should give way to the
// next one. Auth, not-found and overload errors of one provider say nothing
// about another; only a malformed request (400, 413, 422) fails everywhere.
func FallbackWorthy(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return false
	}
	return true
}

// Backoff returns the wait before retry number attempt (1-based):
// exponential from Initial, capped at Max, with full jitter in the upper
// half so synchronized clients spread out. retryAfter, when the upstream
// sent one, wins if it is longer.
func (p RetryPolicy) Backoff(attempt int, retryAfter time.Duration, rnd *rand.Rand) time.Duration {
	initial, maxD := p.Initial, p.Max
	if initial <= 0 {
		initial = 250 * time.Millisecond
	}
	if maxD <= 0 {
		maxD = 10 * time.Second
	}
	d := initial
	for i := 1; i < attempt && d < maxD; i++ {
		d *= 2
	}
	d = min(d, maxD)
	half := d / 2
	var j float64
	if rnd != nil {
		j = rnd.Float64()
	} else {
		j = rand.Float64()
	}
	d = half + time.Duration(j*float64(d-half))
	if retryAfter > d {
		return retryAfter
	}
	return d
}

// ParseRetryAfter reads a Retry-After header (seconds or HTTP date) and the
// non-standard retry-after-ms some providers send.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if ms := h.Get("retry-after-ms"); ms != "" {
		if v, err := strconv.ParseFloat(ms, 64); err == nil && v >= 0 {
			return time.Duration(v * float64(time.Millisecond))
		}
	}
	ra := h.Get("Retry-After")
	if ra == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(ra, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(ra); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
