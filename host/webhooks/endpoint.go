package webhooks

import (
	"fmt"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/secret"
)

// The events an endpoint can subscribe to.
const (
	EventJobCompleted = "async_job.completed"
	EventJobFailed    = "async_job.failed"
)

// knownEvents lists the subscribable events in a stable order for messages.
var knownEvents = []string{EventJobCompleted, EventJobFailed}

// Defaults from the spec's Limits table.
const (
	DefaultMaxRetries              = 4
	DefaultBackoffInitialSeconds   = 30
	DefaultBackoffMaxSeconds       = 1800
	DefaultAttemptTimeoutSeconds   = 10
	DefaultMaxResponsePayloadKBs   = 256
	DefaultMaxConcurrentDeliveries = 10
)

// tuningRange bounds one tuning field. The minimums are small on purpose so
// operators (and tests) can run tight retry schedules; the maximums keep a
// single endpoint from pinning workers or memory for hours.
type tuningRange struct {
	field    string
	def      int
	min, max int
}

var tuningRanges = []tuningRange{
	{"max_retries", DefaultMaxRetries, 0, 20},
	{"retry_backoff_initial_seconds", DefaultBackoffInitialSeconds, 1, 3600},
	{"retry_backoff_max_seconds", DefaultBackoffMaxSeconds, 1, 86400},
	{"attempt_timeout_seconds", DefaultAttemptTimeoutSeconds, 1, 120},
	{"max_response_payload_kbs", DefaultMaxResponsePayloadKBs, 1, 10240},
	{"max_concurrent_deliveries", DefaultMaxConcurrentDeliveries, 1, 100},
}

// maxHeaders caps custom headers per endpoint; deliveries are not a place
// for large header sets and each value may need resolving per attempt.
const maxHeaders = 32

// reservedHeaders are set by the delivery engine; letting an endpoint
// override them would break signatures or the transport.
var reservedHeaders = map[string]bool{
	"webhook-id": true, "webhook-timestamp": true, "webhook-signature": true,
	"content-type": true, "content-length": true, "host": true, "user-agent": true,
	// Hop-by-hop and framing headers: Go's client manages them and a custom
	// value would desynchronise the request.
	"transfer-encoding": true, "connection": true,
}

// Tuning holds the per-endpoint delivery settings (spec, Limits).
type Tuning struct {
	MaxRetries                 int `json:"max_retries"`
	RetryBackoffInitialSeconds int `json:"retry_backoff_initial_seconds"`
	RetryBackoffMaxSeconds     int `json:"retry_backoff_max_seconds"`
	AttemptTimeoutSeconds      int `json:"attempt_timeout_seconds"`
	MaxResponsePayloadKBs      int `json:"max_response_payload_kbs"`
	MaxConcurrentDeliveries    int `json:"max_concurrent_deliveries"`
}

// Endpoint is a webhook endpoint as the API shows it. Header values are
// redacted in responses; the signing secret is not part of it at all.
type Endpoint struct {
	ID                  string                  `json:"id"`
	Name                string                  `json:"name"`
	URL                 string                  `json:"url"`
	Events              []string                `json:"events"`
	Headers             map[string]secret.Value `json:"headers"`
	IncludeResponse     bool                    `json:"include_response"`
	AllowPrivateNetwork bool                    `json:"allow_private_network"`
	Disabled            bool                    `json:"disabled"`
	Tuning
	ConsecutiveFailures int        `json:"consecutive_failures"`
	LastSuccessAt       *time.Time `json:"last_success_at"`
	LastFailureAt       *time.Time `json:"last_failure_at"`
	ConfigHash          string     `json:"config_hash"`
	CreatedAt           time.Time  `json:"created_at"`
	UpdatedAt           time.Time  `json:"updated_at"`
}

// Subscribed reports whether the endpoint receives event.
func (e *Endpoint) Subscribed(event string) bool {
	for _, ev := range e.Events {
		if ev == event {
			return true
		}
	}
	return false
}

// record is the stored form: the endpoint plus its signing secret. The
// store seals the whole value when an encryption key is configured, which
// covers the secret and plain-text header values.
type record struct {
	Endpoint
	Secret secret.Value `json:"secret"`
}

// public returns the endpoint with header values redacted.
func (r *record) public() Endpoint {
	e := r.Endpoint
	e.Events = append([]string(nil), e.Events...)
	e.Headers = make(map[string]secret.Value, len(r.Headers))
	for k, v := range r.Headers {
		e.Headers[k] = v.Redacted()
	}
	return e
}

// Input is the writable part of an endpoint, shared by the create and update
// bodies and by config-file entries. Tuning fields are pointers so an absent
// field takes its default.
type Input struct {
	Name                       string                  `json:"name"`
	URL                        string                  `json:"url"`
	Events                     []string                `json:"events"`
	Headers                    map[string]secret.Value `json:"headers"`
	IncludeResponse            bool                    `json:"include_response"`
	AllowPrivateNetwork        bool                    `json:"allow_private_network"`
	Disabled                   bool                    `json:"disabled"`
	MaxRetries                 *int                    `json:"max_retries"`
	RetryBackoffInitialSeconds *int                    `json:"retry_backoff_initial_seconds"`
	RetryBackoffMaxSeconds     *int                    `json:"retry_backoff_max_seconds"`
	AttemptTimeoutSeconds      *int                    `json:"attempt_timeout_seconds"`
	MaxResponsePayloadKBs      *int                    `json:"max_response_payload_kbs"`
	MaxConcurrentDeliveries    *int                    `json:"max_concurrent_deliveries"`
}

// updateInput is the PUT body: the writable fields plus the read-only ones a
// client gets from GET, so GET-modify-PUT works. id and created_at must match
// when sent; the counters and timestamps the gateway maintains are ignored.
type updateInput struct {
	Input
	ID                  *string    `json:"id"`
	CreatedAt           *time.Time `json:"created_at"`
	ConsecutiveFailures *int       `json:"consecutive_failures"`
	LastSuccessAt       *time.Time `json:"last_success_at"`
	LastFailureAt       *time.Time `json:"last_failure_at"`
	ConfigHash          *string    `json:"config_hash"`
	UpdatedAt           *time.Time `json:"updated_at"`
}

// fieldErr names the invalid field so API callers get a 400 with param set
// and config loading can prefix it with webhooks[i].
type fieldErr struct {
	field, code, msg string
}

func (e *fieldErr) Error() string { return e.field + ": " + e.msg }

func badField(field, code, format string, a ...any) *fieldErr {
	return &fieldErr{field: field, code: code, msg: fmt.Sprintf(format, a...)}
}

func (e *fieldErr) api() *apierr.Error { return apierr.BadRequest(e.code, e.field, e.msg) }

// normalize validates in and returns the endpoint settings it describes,
// with defaults applied. It touches neither id nor stats.
func (in *Input) normalize() (Endpoint, *fieldErr) {
	var e Endpoint
	e.Name = strings.TrimSpace(in.Name)
	switch {
	case e.Name == "":
		return e, badField("name", "missing_field", "name is required")
	case len(e.Name) > 128:
		return e, badField("name", "invalid_value", "name must be at most 128 characters")
	case strings.ContainsFunc(e.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return e, badField("name", "invalid_value", "name must not contain control characters")
	}
	u, ferr := validateURL(strings.TrimSpace(in.URL), in.AllowPrivateNetwork)
	if ferr != nil {
		return e, ferr
	}
	e.URL = u
	if len(in.Events) == 0 {
		return e, badField("events", "missing_field", "events is required: a non-empty list of %s", strings.Join(knownEvents, ", "))
	}
	seen := map[string]bool{}
	for i, ev := range in.Events {
		if !isKnownEvent(ev) {
			return e, badField(fmt.Sprintf("events[%d]", i), "invalid_value", "unknown event %q (use %s)", ev, strings.Join(knownEvents, " or "))
		}
		if !seen[ev] {
			seen[ev] = true
			e.Events = append(e.Events, ev)
		}
	}
	sort.Strings(e.Events)
	if len(in.Headers) > maxHeaders {
		return e, badField("headers", "invalid_value", "at most %d custom headers are allowed", maxHeaders)
	}
	e.Headers = make(map[string]secret.Value, len(in.Headers))
	for name, v := range in.Headers {
		if ferr := validateHeader(name, v); ferr != nil {
			return e, ferr
		}
		e.Headers[name] = v
	}
	e.IncludeResponse, e.AllowPrivateNetwork, e.Disabled = in.IncludeResponse, in.AllowPrivateNetwork, in.Disabled
	vals := []*int{in.MaxRetries, in.RetryBackoffInitialSeconds, in.RetryBackoffMaxSeconds,
		in.AttemptTimeoutSeconds, in.MaxResponsePayloadKBs, in.MaxConcurrentDeliveries}
	dst := []*int{&e.MaxRetries, &e.RetryBackoffInitialSeconds, &e.RetryBackoffMaxSeconds,
		&e.AttemptTimeoutSeconds, &e.MaxResponsePayloadKBs, &e.MaxConcurrentDeliveries}
	for i, r := range tuningRanges {
		v := r.def
		if vals[i] != nil {
			v = *vals[i]
		}
		if v < r.min || v > r.max {
			return e, badField(r.field, "invalid_value", "%s must be between %d and %d (got %d)", r.field, r.min, r.max, v)
		}
		*dst[i] = v
	}
	if e.RetryBackoffMaxSeconds < e.RetryBackoffInitialSeconds {
		return e, badField("retry_backoff_max_seconds", "invalid_value",
			"retry_backoff_max_seconds (%d) must not be below retry_backoff_initial_seconds (%d)", e.RetryBackoffMaxSeconds, e.RetryBackoffInitialSeconds)
	}
	return e, nil
}

func isKnownEvent(ev string) bool {
	for _, k := range knownEvents {
		if ev == k {
			return true
		}
	}
	return false
}

// validateURL checks the delivery URL. A literal private address is refused
// here for an early, clear error; host names are checked when dialled, since
// their resolution can change (DNS rebinding).
func validateURL(raw string, allowPrivate bool) (string, *fieldErr) {
	if raw == "" {
		return "", badField("url", "missing_field", "url is required")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" {
		return "", badField("url", "invalid_value", "url must be an absolute http(s) URL")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !allowPrivate {
			return "", badField("url", "insecure_url", "url must use https unless allow_private_network is true")
		}
	default:
		return "", badField("url", "invalid_value", "url scheme must be https (or http with allow_private_network)")
	}
	if u.User != nil {
		return "", badField("url", "invalid_value", "url must not carry credentials; send them as a custom header instead")
	}
	if u.Fragment != "" {
		return "", badField("url", "invalid_value", "url must not have a fragment")
	}
	if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && !allowPrivate && blockedAddr(ip) {
		return "", badField("url", "private_network_url",
			"url points at a private or reserved address (%s); set allow_private_network to deliver there", ip)
	}
	return u.String(), nil
}

func validateHeader(name string, v secret.Value) *fieldErr {
	field := "headers." + name
	if name == "" || !isToken(name) {
		return badField(field, "invalid_value", "header name %q is not a valid HTTP header name", name)
	}
	if reservedHeaders[strings.ToLower(name)] {
		return badField(field, "reserved_header", "header %q is set by the gateway on every delivery and cannot be overridden", name)
	}
	if v.IsZero() {
		return badField(field, "invalid_value", "header %q needs a value", name)
	}
	if strings.ContainsAny(v.Value, "\r\n\x00") {
		return badField(field, "invalid_value", "header %q value must not contain CR, LF or NUL", name)
	}
	return nil
}

// isToken reports whether s is an RFC 9110 token (a header field name).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// backoff is the delay before retry n (1-based): initial doubling per retry,
// capped at max. No jitter: a per-endpoint concurrency cap already spreads a
// burst, and a deterministic schedule is easier to reason about and test.
func (t Tuning) backoff(n int) time.Duration {
	d := time.Duration(t.RetryBackoffInitialSeconds) * time.Second
	limit := time.Duration(t.RetryBackoffMaxSeconds) * time.Second
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}
