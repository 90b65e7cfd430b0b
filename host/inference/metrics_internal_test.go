package inference

import (
	"fmt"
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
	m.Record(&Outcome{Provider: "groq", Model: aliased, RequestType: "chat.completion", StatusCode: 201, Latency: time.Millisecond})
	for _, c := range []struct {
		got  float64
		want float64
		what string
	}{
		{testutil.ToFloat64(m.requests.WithLabelValues("openai", "openai/gpt-4o-mini", "chat.completion", "200")), 3, "openai requests"},
		{testutil.ToFloat64(m.requests.WithLabelValues("groq", "groq/llama-3.1-8bi", "chat.completion", "201")), 1, "groq requests"},
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

// TestMetricsModelLabelsAreBounded: client-chosen provider and model
// names only get labels of their own once a request for them succeeded,
// and at most MaxModelLabels pairs do; a stream of made-up models adds no
// series.
func TestMetricsModelLabelsAreBounded(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	m.MaxModelLabels = 2
	rec := func(provider, model string, status int) {
		m.Record(&Outcome{Provider: provider, Model: model, RequestType: "chat.completion", StatusCode: status, Latency: time.Millisecond})
	}
	count := func(provider, model, status string) float64 {
		return testutil.ToFloat64(m.requests.WithLabelValues(provider, model, "chat.completion", status))
	}
	rec("openai", "openai/gpt-4o", 404) // never succeeded: not labelled
	rec("openai", "openai/gpt-4o", 200) // now it has
	rec("openai", "openai/gpt-4o", 500) // and keeps its labels on failure
	rec("openai", "openai/made-up", 404)
	rec("nope", "nope/x", 400)
	rec("groq", "groq/llama", 200)
	rec("mistral", "mistral/large", 200) // past the cap of two pairs
	rec("groq", "groq/other-model", 200) // past the cap, provider known
	for _, c := range []struct {
		provider, model, status string
		want                    float64
	}{
		{"other", "other", "404", 1}, // openai/gpt-4o before its first success
		{"openai", "openai/gpt-4o", "200", 1},
		{"openai", "openai/gpt-4o", "500", 1},
		{"openai", "other", "404", 1},
		{"other", "other", "400", 1},
		{"groq", "groq/llama", "200", 1},
		{"other", "other", "200", 1},
		{"groq", "other", "200", 1},
	} {
		if got := count(c.provider, c.model, c.status); got != c.want {
			t.Errorf("%s %s %s: %v, want %v", c.provider, c.model, c.status, got, c.want)
		}
	}
	before := testutil.CollectAndCount(m.requests) + testutil.CollectAndCount(m.latency)
	for i := range 1000 {
		rec("openai", fmt.Sprintf("openai/made-up-%d", i), 404)
		rec(fmt.Sprintf("p%d", i), "x", 400)
	}
	if after := testutil.CollectAndCount(m.requests) + testutil.CollectAndCount(m.latency); after != before {
		t.Fatalf("2,000 made-up names grew the series from %d to %d", before, after)
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
