package inference

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics records inference outcomes as Prometheus series. Labels are the
// provider, the requested model and the status, which stay bounded by the
// configured providers and the models clients use.
type Metrics struct {
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	ttft      *prometheus.HistogramVec
	tokens    *prometheus.CounterVec
	upstream  *prometheus.CounterVec
	retries   *prometheus.CounterVec
	fallbacks *prometheus.CounterVec
	routes    *prometheus.CounterVec
}

// NewMetrics registers the inference collectors on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	buckets := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	m := &Metrics{
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
	status := strconv.Itoa(o.StatusCode)
	m.requests.WithLabelValues(o.Provider, o.Model, o.RequestType, status).Inc()
	m.latency.WithLabelValues(o.Provider, o.Model, o.RequestType, status).Observe(o.Latency.Seconds())
	if o.RoutePattern != "" {
		m.routes.WithLabelValues(o.RoutePattern, status).Inc()
	}
	if o.TTFT > 0 {
		m.ttft.WithLabelValues(o.Provider, o.Model).Observe(o.TTFT.Seconds())
	}
	u := o.Usage
	for kind, n := range map[string]int64{"prompt": u.PromptTokens, "completion": u.CompletionTokens,
		"cached_read": u.CachedReadTokens, "reasoning": u.ReasoningTokens} {
		if n > 0 {
			m.tokens.WithLabelValues(o.Provider, o.Model, kind).Add(float64(n))
		}
	}
	if o.Err != nil && !o.Err.IsGatewayError {
		m.upstream.WithLabelValues(o.Provider, status).Inc()
	}
	if o.Retries > 0 {
		m.retries.WithLabelValues(o.Provider).Add(float64(o.Retries))
	}
	if o.IsFallback {
		m.fallbacks.WithLabelValues(o.Provider).Inc()
	}
}

// Recorders fans an outcome out to several recorders.
type Recorders []Recorder

// Record implements Recorder.
func (rs Recorders) Record(o *Outcome) {
	for _, r := range rs {
		r.Record(o)
	}
}
