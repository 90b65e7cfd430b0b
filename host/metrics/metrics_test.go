package metrics

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wasmgate/gateway/host/internal/keepalive"
)

// TestMiddlewareLabels sends requests over one keep-alive connection, so
// fasthttp reuses the request buffer the method was read into: the labels
// kept must still read what each request sent, a non-standard method
// counts as OTHER, and repeated label sets share one series.
func TestMiddlewareLabels(t *testing.T) {
	m := New()
	app := fiber.New(fiber.Config{DisableStartupMessage: true, RequestMethods: append(fiber.DefaultMethods, "PURGE")})
	app.Use(m.Middleware())
	app.All("/items/:id", func(c *fiber.Ctx) error { return c.SendStatus(204) })
	var reqs []string
	for _, method := range []string{"GET", "PURGE", "POST", "GET", "DELETE"} {
		reqs = append(reqs, fmt.Sprintf("%s /items/%d HTTP/1.1\r\nHost: x\r\n\r\n", method, len(method)))
	}
	keepalive.Send(t, app, reqs...)
	want := `
# HELP wasmgate_http_requests_total HTTP requests served, by route template, method and status.
# TYPE wasmgate_http_requests_total counter
wasmgate_http_requests_total{method="DELETE",route="/items/:id",status="204"} 1
wasmgate_http_requests_total{method="GET",route="/items/:id",status="204"} 2
wasmgate_http_requests_total{method="OTHER",route="/items/:id",status="204"} 1
wasmgate_http_requests_total{method="POST",route="/items/:id",status="204"} 1
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "wasmgate_http_requests_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(m.duration); n != 4 {
		t.Fatalf("duration series: %d, want 4", n)
	}
}

func BenchmarkSeries(b *testing.B) {
	m := New()
	k := httpKey{route: "/v1/chat/completions", method: "POST", status: 200}
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			s := m.series(k)
			s.requests.Inc()
			s.duration.Observe(0.001)
		}
	})
	b.Run("WithLabelValues", func(b *testing.B) {
		for b.Loop() {
			m.requests.WithLabelValues(k.route, strings.Clone(k.method), "200").Inc()
			m.duration.WithLabelValues(k.route, k.method).Observe(0.001)
		}
	})
}
