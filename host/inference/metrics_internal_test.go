package inference

import (
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetricsSeriesCache: outcomes land in the series of their labels,
// through the cache too, even when the label strings alias a buffer that
// is reused afterwards (as fasthttp's request buffers are).
func TestMetricsSeriesCache(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	buf := []byte("openai/gpt-4o-mini")
	aliased := unsafe.String(unsafe.SliceData(buf), len(buf))
	for range 3 {
		m.Record(&Outcome{Provider: "openai", Model: aliased, RequestType: "chat.completion", StatusCode: 200,
			RoutePattern: "/v1/chat/completions", Latency: time.Millisecond, Usage: Usage{PromptTokens: 10, CompletionTokens: 2}})
	}
	copy(buf, "groq/llama-3.1-8b") // the buffer now holds another request
	m.Record(&Outcome{Provider: "groq", Model: aliased, RequestType: "chat.completion", StatusCode: 429, Latency: time.Millisecond})
	for _, c := range []struct {
		got  float64
		want float64
		what string
	}{
		{testutil.ToFloat64(m.requests.WithLabelValues("openai", "openai/gpt-4o-mini", "chat.completion", "200")), 3, "openai requests"},
		{testutil.ToFloat64(m.requests.WithLabelValues("groq", "groq/llama-3.1-8bi", "chat.completion", "429")), 1, "groq requests"},
		{testutil.ToFloat64(m.routes.WithLabelValues("/v1/chat/completions", "200")), 3, "route"},
		{testutil.ToFloat64(m.tokens.WithLabelValues("openai", "openai/gpt-4o-mini", "prompt")), 30, "prompt tokens"},
		{testutil.ToFloat64(m.tokens.WithLabelValues("openai", "openai/gpt-4o-mini", "completion")), 6, "completion tokens"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.tokens); n != 2 {
		t.Errorf("%d token series, want 2 (kinds never counted export none)", n)
	}
	if n := testutil.CollectAndCount(m.requests); n != 2 {
		t.Errorf("%d request series, want 2", n)
	}
}

func BenchmarkMetricsRecord(b *testing.B) {
	m := NewMetrics(prometheus.NewRegistry())
	o := &Outcome{Provider: "openai", Model: "openai/gpt-4o-mini", RequestType: "chat.completion", StatusCode: 200,
		RoutePattern: "/v1/chat/completions", Latency: time.Millisecond, Usage: Usage{PromptTokens: 10, CompletionTokens: 2}}
	b.ReportAllocs()
	for b.Loop() {
		m.Record(o)
	}
}
