package governance_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/fakeupstream"
	"github.com/wasmgate/gateway/host/inference"
	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/server"
)

// routedEnv is a gateway with three OpenAI-wire providers (openai, groq,
// mistral), each on its own fake upstream, and a governance random source
// the test controls.
type routedEnv struct {
	g   *testgw.Gateway
	ups map[string]*fakeupstream.Server
}

// lockedRand makes a seeded source safe for the gateway's goroutines.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) Float64() float64 { l.mu.Lock(); defer l.mu.Unlock(); return l.r.Float64() }

func startRouted(t *testing.T, rnd func() float64) *routedEnv {
	t.Helper()
	src := inference.AdapterFunc(func(family string) (inference.Adapter, bool) {
		if family == "openai" {
			return openAIWire{}, true
		}
		return nil, false
	})
	clk := newClock(time.Date(2026, 3, 10, 12, 0, 30, 0, time.UTC))
	g := testgw.Start(t, testgw.Options{ServerOptions: []server.Option{server.WithAdapters(src),
		server.WithClock(clk.Now), server.WithGovernancePricer(flatPricer{0.01}), server.WithGovernanceRand(rnd)}})
	e := &routedEnv{g: g, ups: map[string]*fakeupstream.Server{}}
	for _, name := range []string{"openai", "groq", "mistral"} {
		up := fakeupstream.Start(t, fakeupstream.OpenAI, fakeupstream.Options{APIKey: "sk-" + name})
		e.ups[name] = up
		g.Expect(201, "POST", "/api/providers", map[string]any{"name": name,
			"network_config": map[string]any{"base_url": up.URL + "/v1", "max_retries": 0}})
		g.Expect(201, "POST", "/api/providers/"+name+"/keys", map[string]any{"name": "k", "value": "sk-" + name})
	}
	return e
}

func (e *routedEnv) counts() map[string]int64 {
	out := map[string]int64{}
	for n, up := range e.ups {
		out[n] = up.Count()
	}
	return out
}

func (e *routedEnv) key(t *testing.T, pcs ...map[string]any) string {
	t.Helper()
	body := map[string]any{"name": "router", "provider_configs": pcs}
	var m struct {
		VirtualKey struct{ Value string } `json:"virtual_key"`
	}
	e.g.Expect(201, "POST", "/api/governance/virtual-keys", body).Decode(t, &m)
	return m.VirtualKey.Value
}

type routingInfo struct {
	Provider          string `json:"provider"`
	IsFallback        bool   `json:"is_fallback"`
	PrimaryProvider   string `json:"primary_provider"`
	RequestedProvider string `json:"requested_provider"`
	RequestedModel    string `json:"requested_model"`
}

func routingOf(t *testing.T, r *testgw.Response) routingInfo {
	t.Helper()
	var m struct {
		ExtraFields struct {
			RoutingInfo routingInfo `json:"routing_info"`
		} `json:"extra_fields"`
	}
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	r.Decode(t, &m)
	return m.ExtraFields.RoutingInfo
}

const bareChat = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`

// TestBareModelRoutesByWeight: with a seeded source, 400 bare-model
// requests split 3:1 between the two providers that allow the model (the
// heavier provider that does not allow it gets none), routing_info names
// the chosen provider, and every OpenAI-shaped /v1 route is routed.
func TestBareModelRoutesByWeight(t *testing.T) {
	e := startRouted(t, (&lockedRand{r: rand.New(rand.NewPCG(42, 1))}).Float64)
	vk := e.key(t, map[string]any{"provider": "openai", "weight": 3}, map[string]any{"provider": "groq", "weight": 1},
		map[string]any{"provider": "mistral", "weight": 50, "allowed_models": []string{"mistral-large"}})
	const n = 400
	for i := range n {
		r := e.g.Do("POST", "/v1/chat/completions", bareChat, bearer(vk))
		ri := routingOf(t, r)
		if got := e.ups[ri.Provider]; got == nil || ri.PrimaryProvider != ri.Provider || ri.IsFallback ||
			ri.RequestedProvider != "" || ri.RequestedModel != "gpt-4o-mini" {
			t.Fatalf("request %d: routing_info %+v", i, ri)
		}
		if i == 0 {
			// The upstream sees the bare model name, not a prefixed one.
			var sent struct{ Model string }
			_ = json.Unmarshal(e.ups[ri.Provider].LastRequest().Body, &sent)
			if sent.Model != "gpt-4o-mini" {
				t.Fatalf("upstream model %q", sent.Model)
			}
		}
	}
	c := e.counts()
	// Expected 300:100 (binomial sd ~8.7); 30 either way is > 3 sd.
	if c["mistral"] != 0 || c["openai"]+c["groq"] != n || c["openai"] < 270 || c["openai"] > 330 {
		t.Fatalf("upstream counts %v, want about 300 openai and 100 groq", c)
	}
	for _, rt := range []struct{ path, body string }{
		{"/v1/completions", `{"model":"gpt-4o-mini","prompt":"hi"}`},
		{"/v1/responses", `{"model":"gpt-4o-mini","input":"hi"}`},
		{"/v1/embeddings", `{"model":"gpt-4o-mini","input":"hi"}`},
	} {
		if ri := routingOf(t, e.g.Do("POST", rt.path, rt.body, bearer(vk))); ri.Provider != "openai" && ri.Provider != "groq" {
			t.Fatalf("%s routed to %+v", rt.path, ri)
		}
	}
	if after := e.counts(); after["openai"]+after["groq"] != n+3 || after["mistral"] != 0 {
		t.Fatalf("counts after the other routes: %v", after)
	}
}

// TestBareModelFallbackOrder: the chosen provider failing hands over to
// the request's own fallbacks first, then to the key's other providers by
// descending weight.
func TestBareModelFallbackOrder(t *testing.T) {
	// 0 always picks the heaviest eligible provider.
	e := startRouted(t, func() float64 { return 0 })
	vk := e.key(t, map[string]any{"provider": "mistral", "weight": 1}, map[string]any{"provider": "openai", "weight": 5},
		map[string]any{"provider": "groq", "weight": 3})

	e.ups["openai"].FailNext(1, 503, "")
	ri := routingOf(t, e.g.Do("POST", "/v1/chat/completions", bareChat, bearer(vk)))
	if ri.Provider != "groq" || !ri.IsFallback || ri.PrimaryProvider != "openai" {
		t.Fatalf("after openai failed: %+v (want groq, the next heaviest)", ri)
	}
	e.ups["openai"].FailNext(1, 503, "")
	e.ups["groq"].FailNext(1, 503, "")
	if ri := routingOf(t, e.g.Do("POST", "/v1/chat/completions", bareChat, bearer(vk))); ri.Provider != "mistral" {
		t.Fatalf("after openai and groq failed: %+v", ri)
	}
	// The request's fallback (mistral) comes before the key's groq.
	before := e.counts()
	e.ups["openai"].FailNext(1, 503, "")
	withFB := `{"model":"gpt-4o-mini","fallbacks":["mistral/gpt-4o-mini"],"messages":[{"role":"user","content":"hi"}]}`
	if ri := routingOf(t, e.g.Do("POST", "/v1/chat/completions", withFB, bearer(vk))); ri.Provider != "mistral" {
		t.Fatalf("request fallback not tried before the key's providers: %+v", ri)
	}
	if after := e.counts(); after["groq"] != before["groq"] || after["openai"] != before["openai"]+1 {
		t.Fatalf("attempts %v -> %v", before, after)
	}
	// The request's fallbacks must still be allowed by the key.
	testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions",
		`{"model":"gpt-4o-mini","fallbacks":["anthropic/claude-3"],"messages":[]}`, bearer(vk)), 403, "provider_not_allowed")
}

// TestBareModelRefusals: a bare model without a virtual key, or with one
// that cannot route it, is a 400 naming the model; "<provider>/<model>"
// keeps its 403 for a model the key does not allow.
func TestBareModelRefusals(t *testing.T) {
	e := startRouted(t, nil)
	m := testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions", bareChat), 400, "invalid_model")
	if msg := m["error"].(map[string]any)["message"].(string); !strings.Contains(msg, `"gpt-4o-mini"`) || m["error"].(map[string]any)["param"] != "model" {
		t.Fatalf("no-key refusal: %v", m)
	}
	narrow := e.key(t, map[string]any{"provider": "openai", "allowed_models": []string{"gpt-4o"}})
	m = testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions", bareChat, bearer(narrow)), 400, "no_provider_for_model")
	if msg := m["error"].(map[string]any)["message"].(string); !strings.Contains(msg, `"gpt-4o-mini"`) {
		t.Fatalf("message does not name the model: %v", m)
	}
	testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions", `{"model":"openai/gpt-4o-mini","messages":[]}`, bearer(narrow)), 403, "model_not_allowed")
	open := e.key(t)
	testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions", bareChat, bearer(open)), 400, "invalid_model")
	if c := e.counts(); c["openai"]+c["groq"]+c["mistral"] != 0 {
		t.Fatalf("a refused request reached an upstream: %v", c)
	}
	// Weights: absent is 1, 0 is kept, negative is refused naming the field.
	var v struct {
		VirtualKey struct {
			ProviderConfigs []struct{ Weight float64 } `json:"provider_configs"`
		} `json:"virtual_key"`
	}
	e.g.Expect(201, "POST", "/api/governance/virtual-keys", map[string]any{"name": "w",
		"provider_configs": []map[string]any{{"provider": "openai"}, {"provider": "groq", "weight": 0}}}).Decode(t, &v)
	if pc := v.VirtualKey.ProviderConfigs; len(pc) != 2 || pc[0].Weight != 1 || pc[1].Weight != 0 {
		t.Fatalf("weights %+v", pc)
	}
	m = testgw.WantEnvelope(t, e.g.Do("POST", "/api/governance/virtual-keys",
		`{"name":"x","provider_configs":[{"provider":"openai","weight":-1}]}`), 400, "invalid_field")
	if m["error"].(map[string]any)["param"] != "provider_configs[0].weight" {
		t.Fatalf("negative weight: %v", m)
	}
}
