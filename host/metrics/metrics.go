// Package metrics owns the gateway's Prometheus registry and the /metrics
// endpoint. Each capability registers its own collectors on the Registry it
// is handed; nothing uses the global default registry.
package metrics

import (
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is the gateway's registry plus the HTTP-level collectors.
type Metrics struct {
	Registry *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// New builds a registry with Go runtime and process collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		Registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmgate_http_requests_total", Help: "HTTP requests served, by route template, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "wasmgate_http_request_duration_seconds", Help: "HTTP request handling time, by route template and method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route", "method"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// Middleware records every request. Labels use the route template, not the
// raw path, so cardinality stays bounded.
func (m *Metrics) Middleware() fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := time.Now()
		err := c.Next()
		status := c.Response().StatusCode()
		if err != nil {
			if fe, ok := err.(*fiber.Error); ok {
				status = fe.Code
			} else if sc, ok := err.(interface{ HTTPStatus() int }); ok {
				status = sc.HTTPStatus()
			}
		}
		route := "unmatched"
		if r := c.Route(); r != nil && r.Path != "/" {
			route = r.Path
		}
		// c.Method() aliases fasthttp's request buffer, which is reused for
		// the next request on the connection: a label kept by Prometheus
		// must own its bytes, or it later reads "GETT" and the registry
		// fails to gather (duplicate series).
		method := strings.Clone(c.Method())
		m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
		m.duration.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
		return err
	}
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() fiber.Handler {
	return adaptor.HTTPHandler(promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{ErrorLog: nil}))
}
