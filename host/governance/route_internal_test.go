package governance

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/wasmgate/gateway/host/inference"
	"github.com/wasmgate/gateway/host/routing"
)

func entryWith(pcs ...ProviderConfig) *entry {
	return &entry{vk: &VirtualKey{Name: "k", ProviderConfigs: pcs}, routes: buildRoutes(pcs)}
}

func bare(model string, fallbacks ...routing.Target) []routing.Target {
	return append([]routing.Target{{Model: model}}, fallbacks...)
}

// TestRouteBareDistribution draws many times from a seeded source: shares
// follow the weights, a provider that does not allow the model is never
// chosen, and a standby (weight 0) only when nothing weighs more.
func TestRouteBareDistribution(t *testing.T) {
	e := entryWith(
		ProviderConfig{Provider: "openai", Weight: 3},
		ProviderConfig{Provider: "groq", Weight: 1, AllowedModels: []string{"groq/llama-3"}},
		ProviderConfig{Provider: "mistral", Weight: 100, AllowedModels: []string{"mistral-large"}},
		ProviderConfig{Provider: "standby", Weight: 0},
	)
	rnd := rand.New(rand.NewPCG(7, 11))
	const draws = 100000
	counts := map[string]int{}
	for range draws {
		plan, aerr := e.routeBare(bare("llama-3"), rnd.Float64)
		if aerr != nil {
			t.Fatal(aerr)
		}
		counts[plan[0].Provider]++
	}
	if counts["mistral"]+counts["standby"] != 0 {
		t.Fatalf("ineligible or standby provider chosen: %v", counts)
	}
	// Expected 75000:25000; the binomial sd is ~137, so 1% is > 7 sd.
	if share := float64(counts["openai"]) / draws; share < 0.74 || share > 0.76 {
		t.Fatalf("openai share %.4f, want 0.75 (%v)", share, counts)
	}
	// A model only a standby serves goes to the first listed standby.
	e2 := entryWith(ProviderConfig{Provider: "a", Weight: 2, AllowedModels: []string{"x"}},
		ProviderConfig{Provider: "b", Weight: 0}, ProviderConfig{Provider: "c", Weight: 0})
	for range 100 {
		plan, aerr := e2.routeBare(bare("y"), rnd.Float64)
		if aerr != nil || !slices.Equal(plan, []routing.Target{{Provider: "b", Model: "y"}, {Provider: "c", Model: "y"}}) {
			t.Fatalf("standby plan %v %v", plan, aerr)
		}
	}
}

// TestRouteBarePlanOrder: chosen first, then the request's fallbacks, then
// the other eligible providers by descending weight (standbys last, ties
// in listing order), without duplicates.
func TestRouteBarePlanOrder(t *testing.T) {
	e := entryWith(
		ProviderConfig{Provider: "light", Weight: 1},
		ProviderConfig{Provider: "standby", Weight: 0},
		ProviderConfig{Provider: "heavy", Weight: 5},
		ProviderConfig{Provider: "mid", Weight: 3},
		ProviderConfig{Provider: "mid2", Weight: 3},
		ProviderConfig{Provider: "other", Weight: 9, AllowedModels: []string{"z"}},
	)
	t0 := func(p string) routing.Target { return routing.Target{Provider: p, Model: "m"} }
	// rnd 0 picks the heaviest eligible provider.
	plan, aerr := e.routeBare(bare("m"), func() float64 { return 0 })
	if want := []routing.Target{t0("heavy"), t0("mid"), t0("mid2"), t0("light"), t0("standby")}; aerr != nil || !slices.Equal(plan, want) {
		t.Fatalf("plan %v %v, want %v", plan, aerr, want)
	}
	// Just under 1 picks the lightest weighted one; the request's fallbacks
	// come right after it, and a provider they name is not repeated.
	reqFB := []routing.Target{{Provider: "anthropic", Model: "claude"}, t0("mid2")}
	plan, aerr = e.routeBare(bare("m", reqFB...), func() float64 { return 0.9999 })
	want := []routing.Target{t0("light"), {Provider: "anthropic", Model: "claude"}, t0("mid2"), t0("heavy"), t0("mid"), t0("standby")}
	if aerr != nil || !slices.Equal(plan, want) {
		t.Fatalf("plan %v %v, want %v", plan, aerr, want)
	}
	// No eligible provider, or no provider configs at all: 400 naming the model.
	if _, aerr := entryWith(ProviderConfig{Provider: "a", Weight: 1, AllowedModels: []string{"x"}}).routeBare(bare("m"), rand.Float64); aerr == nil ||
		aerr.StatusCode != 400 || aerr.Detail.Code != "no_provider_for_model" {
		t.Fatalf("no eligible provider: %v", aerr)
	}
	if _, aerr := entryWith().routeBare(bare("m"), rand.Float64); aerr == nil || aerr.StatusCode != 400 || aerr.Detail.Code != "invalid_model" {
		t.Fatalf("no provider configs: %v", aerr)
	}
}

// TestProviderConfigWeightDefault: an absent weight is 1, an explicit 0
// stays 0, and unknown fields are still refused.
func TestProviderConfigWeightDefault(t *testing.T) {
	var pcs []ProviderConfig
	if err := json.Unmarshal([]byte(`[{"provider":"a"},{"provider":"b","weight":0},{"provider":"c","weight":2.5}]`), &pcs); err != nil {
		t.Fatal(err)
	}
	if pcs[0].Weight != 1 || pcs[1].Weight != 0 || pcs[2].Weight != 2.5 {
		t.Fatalf("weights %+v", pcs)
	}
	if err := json.Unmarshal([]byte(`[{"provider":"a","wieght":3}]`), &pcs); err == nil {
		t.Fatal("unknown field accepted")
	}
}

// BenchmarkAdmitBareModel is BenchmarkAdmit's virtual-key case with a bare
// model routed over three providers: the routing costs one allocation
// (the plan).
func BenchmarkAdmitBareModel(b *testing.B) {
	s := newService(b)
	vk := putKey(b, s)
	sn := s.snap.Load()
	for _, e := range sn.byHash {
		e.vk.ProviderConfigs = []ProviderConfig{{Provider: "openai", Weight: 3}, {Provider: "groq", Weight: 1}, {Provider: "mistral", Weight: 0}}
		e.providers = nil
		e.routes = buildRoutes(e.vk.ProviderConfigs)
	}
	out := &inference.Outcome{Provider: "openai", Model: "gpt-4o-mini", ResolvedModel: "gpt-4o-mini", Usage: inference.Usage{PromptTokens: 12, CompletionTokens: 30, TotalTokens: 42}}
	targets := bare("gpt-4o-mini")
	a := admission(vk)
	b.ReportAllocs()
	for b.Loop() {
		a.Targets = targets
		t, aerr := s.Admit(context.Background(), a)
		if aerr != nil {
			b.Fatal(aerr)
		}
		t.Settle(out)
	}
}
