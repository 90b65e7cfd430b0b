package inference

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics records inference outcomes as Prometheus series, labelled by
// provider, requested model and status.
//
// The provider and model come from the client, so they are bounded: a
// (provider, model) pair gets its own labels once a request for it
// succeeded, for at most MaxModelLabels pairs; until then, and past the
// cap, it is counted under provider and model "other" (a provider keeps
// its name once any of its models succeeded). Otherwise every made-up
// model name a client sends, each answered 404 by its provider, would add
// a score of series that live as long as the process: a memory leak any
// caller can drive.
type Metrics struct {
	// MaxModelLabels caps the (provider, model) pairs with labels of
	// their own (DefaultMaxModelLabels when NewMetrics made it).
	MaxModelLabels int
	labelled       sync.Map // modelPair -> struct{}
	providers      sync.Map // provider -> struct{}
	nLabelled      atomic.Int64

	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	ttft      *prometheus.HistogramVec
	tokens    *prometheus.CounterVec
	upstream  *prometheus.CounterVec
	retries   *prometheus.CounterVec
	fallbacks *prometheus.CounterVec
	routes    *prometheus.CounterVec
	// series caches the children a request updates, per label set:
	// resolving one through a Vec hashes and validates every label value,
	// which for the six a plain request touches was a measurable share of
	// a passthrough request's CPU.
	series sync.Map // seriesKey -> *seriesSet
}

// DefaultMaxModelLabels is the (provider, model) pairs labelled by name.
const DefaultMaxModelLabels = 2000

// otherLabel stands for a provider or model without labels of its own.
const otherLabel = "other"

type modelPair struct{ provider, model string }

// labels returns the provider and model labels of an outcome (see Metrics).
func (m *Metrics) labels(o *Outcome) (provider, model string) {
	k := modelPair{o.Provider, o.Model}
	if _, ok := m.labelled.Load(k); ok {
		return o.Provider, o.Model
	}
	if o.StatusCode >= 200 && o.StatusCode < 300 && o.Provider != "" {
		if m.nLabelled.Add(1) <= int64(m.MaxModelLabels) {
			k = modelPair{strings.Clone(k.provider), strings.Clone(k.model)}
			if _, loaded := m.labelled.LoadOrStore(k, struct{}{}); loaded {
				m.nLabelled.Add(-1)
			}
			m.providers.LoadOrStore(k.provider, struct{}{})
			return o.Provider, o.Model
		}
		m.nLabelled.Add(-1)
	}
	if _, ok := m.providers.Load(o.Provider); ok {
		return o.Provider, otherLabel
	}
	return otherLabel, otherLabel
}

// seriesKey is the labels of one request's series.
type seriesKey struct {
	provider, model, requestType, status, route string
}

// seriesSet is the children of one seriesKey.
type seriesSet struct {
	requests prometheus.Counter
	latency  prometheus.Observer
	route    prometheus.Counter // nil without a route
	// tokens by kind, in tokenKinds order, each made on its first count
	// so that kinds never seen export no series.
	tokens [len(tokenKinds)]struct {
		once sync.Once
		c    prometheus.Counter
	}
	key seriesKey
}

var tokenKinds = [...]string{"prompt", "completion", "cached_read", "reasoning"}

// set returns the children for k, resolving them on first use. k's
// strings may alias request buffers: the cached key owns copies.
func (m *Metrics) set(k seriesKey) *seriesSet {
	if v, ok := m.series.Load(k); ok {
		return v.(*seriesSet)
	}
	k = seriesKey{strings.Clone(k.provider), strings.Clone(k.model), strings.Clone(k.requestType), strings.Clone(k.status), strings.Clone(k.route)}
	s := &seriesSet{
		requests: m.requests.WithLabelValues(k.provider, k.model, k.requestType, k.status),
		latency:  m.latency.WithLabelValues(k.provider, k.model, k.requestType, k.status),
	}
	if k.route != "" {
		s.route = m.routes.WithLabelValues(k.route, k.status)
	}
	s.key = k
	v, _ := m.series.LoadOrStore(k, s)
	return v.(*seriesSet)
}

// NewMetrics registers the inference collectors on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	buckets := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	m := &Metrics{
		MaxModelLabels: DefaultMaxModelLabels,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wasmgate_inference_requests_total",
			Help: "Inference requests by provider, model, request type and HTTP status."}, []string{"provider", "model", "request_type", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "wasmgate_inference_request_duration_seconds",
			Help: "End-to-end inference latency.", Buckets: buckets}, []string{"provider", "model", "request_type", "status"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "wasmgate_inference_time_to_first_token_seconds",
			Help: "Time to the first streamed token.", Buckets: buckets}, []string{"provider", "model"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wasmgate_inference_tokens_total",
			Help: "Tokens by provider, model and kind (prompt, completion, cached_read, reasoning)."}, []string{"provider", "model", "kind"}),
		upstream: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wasmgate_upstream_errors_total",
			Help: "Failed requests whose last error came from the upstream, by provider and status."}, []string{"provider", "status"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wasmgate_inference_retries_total",
			Help: "Retried upstream attempts by provider."}, []string{"provider"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wasmgate_inference_fallbacks_total",
			Help: "Requests served by a fallback target, by the provider that served."}, []string{"provider"}),
		routes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wasmgate_inference_route_requests_total",
			Help: "Inference requests by ingress route pattern (/v1/..., drop-in and framework prefixes) and HTTP status."}, []string{"route", "status"}),
	}
	reg.MustRegister(m.requests, m.latency, m.ttft, m.tokens, m.upstream, m.retries, m.fallbacks, m.routes)
	return m
}

// Record implements Recorder.
func (m *Metrics) Record(o *Outcome) {
	status := statusLabel(o.StatusCode)
	provider, model := m.labels(o)
	set := m.set(seriesKey{provider, model, o.RequestType, status, o.RoutePattern})
	set.requests.Inc()
	set.latency.Observe(o.Latency.Seconds())
	if set.route != nil {
		set.route.Inc()
	}
	if o.TTFT > 0 {
		m.ttft.WithLabelValues(provider, model).Observe(o.TTFT.Seconds())
	}
	u := o.Usage
	for i, n := range [len(tokenKinds)]int64{u.PromptTokens, u.CompletionTokens, u.CachedReadTokens, u.ReasoningTokens} {
		if n > 0 {
			t := &set.tokens[i]
			t.once.Do(func() { t.c = m.tokens.WithLabelValues(set.key.provider, set.key.model, tokenKinds[i]) })
			t.c.Add(float64(n))
		}
	}
	if o.Err != nil && !o.Err.IsGatewayError {
		m.upstream.WithLabelValues(provider, status).Inc()
	}
	if o.Retries > 0 {
		m.retries.WithLabelValues(provider).Add(float64(o.Retries))
	}
	if o.IsFallback {
		m.fallbacks.WithLabelValues(provider).Inc()
	}
}

// statusLabel is strconv.Itoa without an allocation for the usual codes.
func statusLabel(code int) string {
	switch code {
	case 200:
		return "200"
	case 400:
		return "400"
	case 429:
		return "429"
	case 500:
		return "500"
	case 502:
		return "502"
	}
	return strconv.Itoa(code)
}

// Recorders fans an outcome out to several recorders.
type Recorders []Recorder

// Record implements Recorder.
func (rs Recorders) Record(o *Outcome) {
	for _, r := range rs {
		r.Record(o)
	}
}
