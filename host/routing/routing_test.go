package routing_test

import (
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/routing"
)

func TestParseModelAndPlan(t *testing.T) {
	tg, err := routing.ParseModel("openrouter/anthropic/claude-3.5-sonnet")
	if err != nil || tg.Provider != "openrouter" || tg.Model != "anthropic/claude-3.5-sonnet" {
		t.Fatalf("%v %v", tg, err)
	}
	for _, bad := range []string{"gpt-4o", "/gpt", "openai/", ""} {
		if _, err := routing.ParseModel(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	p, err := routing.NewPlan("openai/gpt-4o", []string{"anthropic/claude", "openai/gpt-4o", "anthropic/claude"})
	if err != nil || len(p.Targets) != 2 || p.Targets[1].String() != "anthropic/claude" {
		t.Fatalf("plan %+v %v", p, err)
	}
	if _, err := routing.NewPlan("openai/x", []string{"bad"}); err == nil || err.Error()[:12] != "fallbacks[0]" {
		t.Fatalf("fallback error: %v", err)
	}
	// A primary without "/" is bare: kept without a provider for a router.
	p, err = routing.NewPlan("gpt-4o", []string{"openai/gpt-4o"})
	if err != nil || !p.Targets[0].Bare() || p.Targets[0].String() != "gpt-4o" || len(p.Targets) != 2 || p.Targets[1].Bare() {
		t.Fatalf("bare plan %+v %v", p, err)
	}
	for _, bad := range []string{"", "/gpt", "openai/"} {
		if _, err := routing.NewPlan(bad, nil); err == nil {
			t.Errorf("primary %q accepted", bad)
		}
	}
	if _, err := routing.NewPlan("openai/x", []string{"gpt-4o"}); err == nil {
		t.Error("a bare fallback was accepted")
	}
}

func TestSelectKeyWeightsAndFilters(t *testing.T) {
	keys := []routing.Key{
		{ID: "a", Weight: 3, Enabled: true},
		{ID: "b", Weight: 1, Enabled: true},
		{ID: "off", Weight: 100, Enabled: false},
		{ID: "deny", Weight: 100, Enabled: true, BlacklistedModels: []string{"m"}},
		{ID: "other", Weight: 100, Enabled: true, Models: []string{"x"}},
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	counts := map[string]int{}
	for i := 0; i < 4000; i++ {
		k, err := routing.SelectKey(keys, "m", nil, rnd)
		if err != nil {
			t.Fatal(err)
		}
		counts[k.ID]++
	}
	if counts["off"]+counts["deny"]+counts["other"] != 0 {
		t.Fatalf("ineligible keys chosen: %v", counts)
	}
	if r := float64(counts["a"]) / float64(counts["b"]); r < 2.5 || r > 3.6 {
		t.Fatalf("weights not honoured: %v", counts)
	}
	k, err := routing.SelectKey(keys, "m", map[string]bool{"a": true}, rnd)
	if err != nil || k.ID != "b" {
		t.Fatalf("exclude: %v %v", k, err)
	}
	if _, err := routing.SelectKey(keys, "m", map[string]bool{"a": true, "b": true}, rnd); err != routing.ErrNoKey {
		t.Fatalf("exhausted: %v", err)
	}
	alias := []routing.Key{{ID: "az", Weight: 1, Enabled: true, Models: []string{"gpt-4o"}, Aliases: map[string]string{"gpt-4o-mini": "my-deployment"}}}
	k, err = routing.SelectKey(alias, "gpt-4o-mini", nil, rnd)
	if err != nil || k.Resolve("gpt-4o-mini") != "my-deployment" {
		t.Fatalf("alias: %v %v", k, err)
	}
}

func TestBackoffAndRetryAfter(t *testing.T) {
	p := routing.RetryPolicy{MaxRetries: 3, Initial: 100 * time.Millisecond, Max: 300 * time.Millisecond}
	rnd := rand.New(rand.NewPCG(3, 4))
	for attempt, lim := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 300 * time.Millisecond, 6: 300 * time.Millisecond} {
		d := p.Backoff(attempt, 0, rnd)
		if d < lim/2 || d > lim {
			t.Errorf("attempt %d: %v not in [%v,%v]", attempt, d, lim/2, lim)
		}
	}
	if d := p.Backoff(1, 2*time.Second, rnd); d != 2*time.Second {
		t.Errorf("Retry-After not honoured: %v", d)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := http.Header{}
	h.Set("Retry-After", "2")
	if d := routing.ParseRetryAfter(h, now); d != 2*time.Second {
		t.Errorf("seconds: %v", d)
	}
	h.Set("Retry-After", now.Add(5*time.Second).Format(http.TimeFormat))
	if d := routing.ParseRetryAfter(h, now); d != 5*time.Second {
		t.Errorf("date: %v", d)
	}
	h.Set("retry-after-ms", "1500")
	if d := routing.ParseRetryAfter(h, now); d != 1500*time.Millisecond {
		t.Errorf("ms: %v", d)
	}
	if !routing.Retryable(429) || routing.Retryable(400) || routing.FallbackWorthy(400) || !routing.FallbackWorthy(401) {
		t.Error("status classes")
	}
}
