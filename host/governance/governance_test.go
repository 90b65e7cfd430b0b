package governance_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/fakeupstream"
	"github.com/wasmgate/gateway/host/inference"
	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/server"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// openAIWire is a Go adapter for the OpenAI wire (bytes pass through).
type openAIWire struct{}

func (openAIWire) Name() string         { return "test-openai" }
func (openAIWire) Passthrough() bool    { return true }
func (openAIWire) Supports(string) bool { return true }
func (openAIWire) AdaptRequest(_ context.Context, in *inference.AdaptRequestInput) (*inference.UpstreamRequest, error) {
	body, _ := jsonx.SetStringField(in.Body, "model", in.Model)
	return &inference.UpstreamRequest{Method: http.MethodPost, Path: "/chat/completions", Body: body, Stream: in.Stream}, nil
}
func (openAIWire) AdaptResponse(_ context.Context, in *inference.AdaptResponseInput) ([]byte, error) {
	return in.Body, nil
}
func (openAIWire) AdaptStream(_ context.Context, state []byte, events []inference.UpstreamEvent, _ bool) ([]json.RawMessage, []byte, error) {
	var out []json.RawMessage
	for _, ev := range events {
		if !bytes.HasPrefix(ev.Data, []byte(`"`)) {
			out = append(out, ev.Data)
		}
	}
	return out, state, nil
}

// flatPricer charges a fixed price per request with any usage, so the
// estimate equals the settlement and exactly budget/price requests fit.
type flatPricer struct{ usd float64 }

func (p flatPricer) Cost(string, string, inference.Usage) (float64, bool) { return p.usd, true }

// clock is an injectable clock that only moves when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time             { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration)    { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func newClock(t time.Time) *clock           { return &clock{t: t} }
func hdr(k, v string) func(*http.Request)   { return func(r *http.Request) { r.Header.Set(k, v) } }
func bearer(tok string) func(*http.Request) { return hdr("Authorization", "Bearer "+tok) }

type env struct {
	g   *testgw.Gateway
	up  *fakeupstream.Server
	clk *clock
}

// start runs a gateway with an openai provider on a fake upstream, a flat
// price of $0.01 per request and a frozen clock.
func start(t testing.TB, cfg string) *env {
	t.Helper()
	up := fakeupstream.Start(t, fakeupstream.OpenAI, fakeupstream.Options{APIKey: "sk-up"})
	clk := newClock(time.Date(2026, 3, 10, 12, 0, 30, 0, time.UTC))
	src := inference.AdapterFunc(func(family string) (inference.Adapter, bool) {
		if family == "openai" {
			return openAIWire{}, true
		}
		return nil, false
	})
	g := testgw.Start(t, testgw.Options{ConfigYAML: cfg, ServerOptions: []server.Option{server.WithAdapters(src),
		server.WithClock(clk.Now), server.WithGovernancePricer(flatPricer{0.01})}})
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "openai",
		"network_config": map[string]any{"base_url": up.URL + "/v1", "max_retries": 0}})
	g.Expect(201, "POST", "/api/providers/openai/keys", map[string]any{"name": "k", "value": "sk-up"})
	return &env{g: g, up: up, clk: clk}
}

const chat = `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`

// createKey creates a virtual key and returns its id and value.
func (e *env) createKey(t testing.TB, body map[string]any) (id, value string) {
	t.Helper()
	r := e.g.Expect(201, "POST", "/api/governance/virtual-keys", body)
	var m struct {
		VirtualKey map[string]any `json:"virtual_key"`
	}
	r.Decode(t, &m)
	id, _ = m.VirtualKey["id"].(string)
	value, _ = m.VirtualKey["value"].(string)
	if !strings.HasPrefix(value, "sk-gw-") || id == "" {
		t.Fatalf("create answer: %s", r.Body)
	}
	return id, value
}

func (e *env) create(t testing.TB, path string, body map[string]any, field string) string {
	t.Helper()
	m := e.g.Expect(201, "POST", path, body).Map(t)
	obj, _ := m[field].(map[string]any)
	id, _ := obj["id"].(string)
	if id == "" {
		t.Fatalf("no id in %v", m)
	}
	return id
}

func TestVirtualKeyLifecycleAndHeaders(t *testing.T) {
	e := start(t, "")
	id, value := e.createKey(t, map[string]any{"name": "ci", "description": "for CI"})
	// The value is shown once: get and list show a masked prefix, never the value or hash.
	got := e.g.Expect(200, "GET", "/api/governance/virtual-keys/"+id, nil)
	list := e.g.Expect(200, "GET", "/api/governance/virtual-keys", nil)
	for _, r := range []*testgw.Response{got, list} {
		if bytes.Contains(r.Body, []byte(value)) || bytes.Contains(r.Body, []byte(`"hash"`)) || !bytes.Contains(r.Body, []byte(value[:10]+"...")) {
			t.Fatalf("secret leaked or prefix missing: %s", r.Body)
		}
	}
	// Audit records redact the value shown at creation.
	audit := e.g.Expect(200, "GET", "/api/governance/access-profiles/audit-logs", nil)
	if bytes.Contains(audit.Body, []byte(value)) {
		t.Fatal("audit log holds the virtual key value")
	}
	// Each of the three headers authenticates; the log carries the key id.
	for _, mod := range []func(*http.Request){bearer(value), hdr("x-api-key", value), hdr("x-gw-vk", value)} {
		if r := e.g.Do("POST", "/v1/chat/completions", chat, testgw.NoAuth, mod); r.Status != 200 {
			t.Fatalf("inference with vk: %d %s", r.Status, r.Body)
		}
	}
	// Unknown, disabled and expired keys are 401 envelopes.
	testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions", chat, bearer("sk-gw-nope")), 401, "invalid_virtual_key")
	testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions", chat, hdr("x-gw-vk", "not-even-prefixed")), 401, "invalid_virtual_key")
	e.g.Expect(200, "PUT", "/api/governance/virtual-keys/"+id, map[string]any{"is_active": false})
	testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions", chat, bearer(value)), 401, "virtual_key_disabled")
	e.g.Expect(200, "PUT", "/api/governance/virtual-keys/"+id, map[string]any{"is_active": true,
		"expires_at": e.clk.Now().Add(time.Minute).Format(time.RFC3339)})
	if r := e.g.Do("POST", "/v1/chat/completions", chat, bearer(value)); r.Status != 200 {
		t.Fatalf("before expiry: %d %s", r.Status, r.Body)
	}
	e.clk.advance(2 * time.Minute)
	testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions", chat, bearer(value)), 401, "virtual_key_expired")
	// A provider key (not sk-gw-) is not a virtual key: behaviour unchanged.
	if r := e.g.Do("POST", "/v1/chat/completions", chat, bearer("sk-some-provider-key")); r.Status != 200 {
		t.Fatalf("non-vk credential: %d %s", r.Status, r.Body)
	}
	// Delete: the key stops working.
	e.g.Expect(200, "DELETE", "/api/governance/virtual-keys/"+id, nil)
	testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions", chat, bearer(value)), 401, "invalid_virtual_key")
	testgw.WantEnvelope(t, e.g.Do("GET", "/api/governance/virtual-keys/"+id, nil), 404, "not_found")
}

func TestRequestLogsCarryTheVirtualKey(t *testing.T) {
	e := start(t, "")
	id, value := e.createKey(t, map[string]any{"name": "logged"})
	e.g.Expect(200, "POST", "/v1/chat/completions", chat) // no virtual key
	if r := e.g.Do("POST", "/v1/chat/completions", chat, testgw.NoAuth, hdr("x-gw-vk", value)); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions", `{"model":"openai/x","messages":[]}`, testgw.NoAuth, bearer("sk-gw-bad")), 401, "invalid_virtual_key")
	if err := e.g.Server.Logs().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := e.g.Expect(200, "GET", "/api/logs?virtual_key_ids="+id, nil).Map(t)
	if m["total_count"] != 1.0 {
		t.Fatalf("logs of the virtual key: %v", m)
	}
	if bytes.Contains(e.g.Expect(200, "GET", "/api/logs", nil).Body, []byte(value)) {
		t.Fatal("request log holds the virtual key value")
	}
}

func TestBadInputNamesTheField(t *testing.T) {
	e := start(t, "")
	cases := []struct {
		body  string
		param string
	}{
		{`{}`, "name"},
		{`{"name":"x","budget":{"max_limit":-1}}`, "budget.max_limit"},
		{`{"name":"x","budget":{"max_limit":1,"reset_period":"fortnight"}}`, "budget.reset_period"},
		{`{"name":"x","rate_limit":{"request_max_limit":-3}}`, "rate_limit.request_max_limit"},
		{`{"name":"x","provider_configs":[{"provider":""}]}`, "provider_configs[0].provider"},
		{`{"name":"x","team_id":"t","customer_id":"c"}`, "customer_id"},
		{`{"name":"x","team_id":"missing"}`, "team_id"},
		{`{"name":"x","colour":"red"}`, "colour"},
		{`{"name":"x","is_active":"yes"}`, "is_active"},
	}
	for _, c := range cases {
		r := e.g.Do("POST", "/api/governance/virtual-keys", c.body)
		m := testgw.WantEnvelope(t, r, 400, "")
		if p := m["error"].(map[string]any)["param"]; p != c.param {
			t.Errorf("%s: param %v, want %s (%s)", c.body, p, c.param, r.Body)
		}
	}
	testgw.WantEnvelope(t, e.g.Do("GET", "/api/governance/virtual-keys?limit=501", nil), 400, "invalid_parameter")
	testgw.WantEnvelope(t, e.g.Do("PUT", "/api/governance/virtual-keys/nope", `{"name":"y"}`), 404, "not_found")
	testgw.WantEnvelope(t, e.g.Do("POST", "/api/governance/customers", `{"name":"c","rate_limit":{"token_max_limit":5,"token_reset_period":"year"}}`), 400, "invalid_field")
}

func TestAllowedProvidersModelsAndKeys(t *testing.T) {
	e := start(t, "")
	e.g.Expect(201, "POST", "/api/providers/openai/keys", map[string]any{"name": "k2", "value": "sk-up"})
	keys := e.g.Expect(200, "GET", "/api/providers/openai/keys", nil)
	var ks []struct{ ID, Name string }
	if err := json.Unmarshal(keys.Body, &ks); err != nil {
		var wrapped struct{ Keys []struct{ ID, Name string } }
		keys.Decode(t, &wrapped)
		ks = wrapped.Keys
	}
	var k2 string
	for _, k := range ks {
		if k.Name == "k2" {
			k2 = k.ID
		}
	}
	if k2 == "" {
		t.Fatalf("no k2 in %s", keys.Body)
	}
	_, value := e.createKey(t, map[string]any{"name": "restricted", "provider_configs": []map[string]any{
		{"provider": "openai", "weight": 1, "allowed_models": []string{"gpt-4o-mini"}, "key_ids": []string{k2}}}})
	for range 5 {
		r := e.g.Do("POST", "/v1/chat/completions", chat, bearer(value))
		if r.Status != 200 {
			t.Fatalf("allowed model: %d %s", r.Status, r.Body)
		}
		if !bytes.Contains(r.Body, []byte(`"key":"`+k2+`"`)) {
			t.Fatalf("restricted key not used: %s", r.Body)
		}
	}
	m := testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions", `{"model":"openai/gpt-4o","messages":[]}`, bearer(value)), 403, "model_not_allowed")
	if msg := m["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "openai/gpt-4o") {
		t.Fatalf("message does not name the model: %s", msg)
	}
	testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions", `{"model":"anthropic/claude-3","messages":[]}`, bearer(value)), 403, "provider_not_allowed")
	// A fallback the key does not allow is refused too.
	testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions",
		`{"model":"openai/gpt-4o-mini","fallbacks":["openai/gpt-4o"],"messages":[]}`, bearer(value)), 403, "model_not_allowed")
}

func TestRequireVirtualKey(t *testing.T) {
	e := start(t, "governance:\n  require_virtual_key: true\n")
	testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions", chat, bearer("sk-provider")), 401, "virtual_key_required")
	_, value := e.createKey(t, map[string]any{"name": "must"})
	if r := e.g.Do("POST", "/v1/chat/completions", chat, bearer(value)); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}

// concurrent fires n requests at once and counts answers by status.
func concurrent(t *testing.T, g *testgw.Gateway, n int, mod func(*http.Request)) map[int]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	startGun := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-startGun
			r := g.Do("POST", "/v1/chat/completions", chat, mod)
			mu.Lock()
			counts[r.Status]++
			mu.Unlock()
			if r.Status == 402 || r.Status == 429 {
				var m map[string]any
				_ = json.Unmarshal(r.Body, &m)
				x, _ := m["extra_fields"].(map[string]any)
				if ms, _ := x["retry_after_ms"].(float64); ms <= 0 || r.Header.Get("Retry-After") == "" {
					t.Errorf("refusal without retry_after_ms / Retry-After: %v %s", r.Header, r.Body)
				}
			}
		}()
	}
	close(startGun)
	wg.Wait()
	return counts
}

func TestConcurrentBudgetNeverOverspends(t *testing.T) {
	e := start(t, "")
	e.up.SetChunkDelay(0)
	// $0.10 a month at $0.01 a request admits exactly 10.
	_, value := e.createKey(t, map[string]any{"name": "b", "budget": map[string]any{"max_limit": 0.10, "reset_period": "month"}})
	counts := concurrent(t, e.g, 100, bearer(value))
	if counts[200] != 10 || counts[402] != 90 {
		t.Fatalf("answers %v, want 10x200 and 90x402", counts)
	}
	if n := e.up.Count(); n != 10 {
		t.Fatalf("upstream saw %d requests, want 10", n)
	}
	m := e.g.Do("GET", "/api/governance/virtual-keys/quota", nil, testgw.NoAuth, bearer(value)).Map(t)
	b := m["virtual_key"].(map[string]any)["budget"].(map[string]any)
	if b["remaining"].(float64) > 1e-9 || b["current_usage"].(float64) < 0.0999 {
		t.Fatalf("quota after spending: %v", b)
	}
}

func TestConcurrentRequestLimit(t *testing.T) {
	e := start(t, "")
	_, value := e.createKey(t, map[string]any{"name": "r", "rate_limit": map[string]any{"request_max_limit": 10, "request_reset_period": "minute"}})
	counts := concurrent(t, e.g, 100, hdr("x-api-key", value))
	if counts[200] != 10 || counts[429] != 90 {
		t.Fatalf("answers %v, want 10x200 and 90x429", counts)
	}
}

func TestHierarchyEveryLevelMustAdmit(t *testing.T) {
	e := start(t, "")
	cust := e.create(t, "/api/governance/customers", map[string]any{"name": "acme",
		"budget": map[string]any{"max_limit": 0.03, "reset_period": "day"}}, "customer")
	team := e.create(t, "/api/governance/teams", map[string]any{"name": "ml", "customer_id": cust,
		"rate_limit": map[string]any{"request_max_limit": 5, "request_reset_period": "hour"}}, "team")
	_, v1 := e.createKey(t, map[string]any{"name": "a", "team_id": team})
	_, v2 := e.createKey(t, map[string]any{"name": "b", "team_id": team})
	// Customer budget: 3 requests across both keys, then 402 naming the customer.
	for i, v := range []string{v1, v2, v1} {
		if r := e.g.Do("POST", "/v1/chat/completions", chat, bearer(v)); r.Status != 200 {
			t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
		}
	}
	m := testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions", chat, bearer(v2)), 402, "budget_exceeded")
	if m["type"] != "budget_exceeded_error" || !strings.Contains(m["error"].(map[string]any)["message"].(string), "customer") {
		t.Fatalf("refusal: %v", m)
	}
	// Quota shows every level.
	q := e.g.Do("GET", "/api/governance/virtual-keys/quota", nil, testgw.NoAuth, hdr("x-gw-vk", v1)).Map(t)
	if q["team"] == nil || q["customer"] == nil {
		t.Fatalf("quota lacks levels: %v", q)
	}
	if rl := q["team"].(map[string]any)["request_limit"].(map[string]any); rl["used"].(float64) != 3 || rl["remaining"].(float64) != 2 {
		t.Fatalf("team request limit: %v", rl)
	}
	// Raising the customer budget lets the team's own limit bite next.
	e.g.Expect(200, "PUT", "/api/governance/customers/"+cust, map[string]any{"budget": map[string]any{"max_limit": 100, "reset_period": "day"}})
	for i := 0; i < 2; i++ {
		if r := e.g.Do("POST", "/v1/chat/completions", chat, bearer(v2)); r.Status != 200 {
			t.Fatalf("after raise %d: %d %s", i, r.Status, r.Body)
		}
	}
	m = testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions", chat, bearer(v1)), 429, "rate_limit_exceeded")
	if !strings.Contains(m["error"].(map[string]any)["message"].(string), "team") {
		t.Fatalf("refusal does not name the team: %v", m)
	}
	// A parent in use cannot be deleted.
	testgw.WantEnvelope(t, e.g.Do("DELETE", "/api/governance/customers/"+cust, nil), 409, "customer_in_use")
	testgw.WantEnvelope(t, e.g.Do("DELETE", "/api/governance/teams/"+team, nil), 409, "team_in_use")
}

func TestBudgetResetsWithTheClock(t *testing.T) {
	e := start(t, "")
	_, value := e.createKey(t, map[string]any{"name": "hourly",
		"budget":     map[string]any{"max_limit": 0.02, "reset_period": "hour"},
		"rate_limit": map[string]any{"token_max_limit": 1000000, "token_reset_period": "day"}})
	for range 2 {
		if r := e.g.Do("POST", "/v1/chat/completions", chat, bearer(value)); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	m := testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions", chat, bearer(value)), 402, "budget_exceeded")
	// The clock is at 12:00:30: the hour window ends in 59m30s.
	if ms := m["extra_fields"].(map[string]any)["retry_after_ms"].(float64); ms != float64((59*time.Minute + 30*time.Second).Milliseconds()) {
		t.Fatalf("retry_after_ms %v", ms)
	}
	e.clk.advance(59*time.Minute + 29*time.Second)
	testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions", chat, bearer(value)), 402, "budget_exceeded")
	e.clk.advance(time.Second) // 13:00:00, a new calendar hour
	if r := e.g.Do("POST", "/v1/chat/completions", chat, bearer(value)); r.Status != 200 {
		t.Fatalf("after reset: %d %s", r.Status, r.Body)
	}
	q := e.g.Do("GET", "/api/governance/virtual-keys/quota", nil, testgw.NoAuth, bearer(value)).Map(t)
	vk := q["virtual_key"].(map[string]any)
	if b := vk["budget"].(map[string]any); b["resets_at"] != "2026-03-10T14:00:00Z" || b["current_usage"].(float64) != 0.01 {
		t.Fatalf("budget after reset: %v", b)
	}
	// Tokens settle to the real usage reported upstream, not the estimate.
	if tk := vk["token_limit"].(map[string]any); tk["used"].(float64) <= 0 || tk["used"].(float64) > 100 {
		t.Fatalf("token usage not settled to real usage: %v", tk)
	}
}

func TestFailedRequestReleasesItsReservation(t *testing.T) {
	e := start(t, "")
	_, value := e.createKey(t, map[string]any{"name": "f", "budget": map[string]any{"max_limit": 0.01, "reset_period": "day"}})
	e.up.FailNext(1, 500, "")
	if r := e.g.Do("POST", "/v1/chat/completions", chat, bearer(value)); r.Status < 500 {
		t.Fatalf("want upstream failure, got %d %s", r.Status, r.Body)
	}
	if r := e.g.Do("POST", "/v1/chat/completions", chat, bearer(value)); r.Status != 200 {
		t.Fatalf("budget not released by the failed request: %d %s", r.Status, r.Body)
	}
	testgw.WantEnvelope(t, e.g.Do("POST", "/v1/chat/completions", chat, bearer(value)), 402, "budget_exceeded")
}

func TestStreamSettlesAtTheEnd(t *testing.T) {
	e := start(t, "")
	_, value := e.createKey(t, map[string]any{"name": "s",
		"rate_limit": map[string]any{"token_max_limit": 100000, "token_reset_period": "day"}})
	body := `{"model":"openai/gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"max_tokens":50000,"messages":[{"role":"user","content":"hi"}]}`
	r := e.g.Do("POST", "/v1/chat/completions", body, bearer(value))
	if r.Status != 200 || !bytes.Contains(r.Body, []byte("[DONE]")) {
		t.Fatalf("stream: %d %s", r.Status, r.Body)
	}
	q := e.g.Do("GET", "/api/governance/virtual-keys/quota", nil, testgw.NoAuth, bearer(value)).Map(t)
	used := q["virtual_key"].(map[string]any)["token_limit"].(map[string]any)["used"].(float64)
	if used <= 0 || used >= 50000 {
		t.Fatalf("stream tokens not settled to the real usage: %v", used)
	}
}

func TestQuotaAcceptsVirtualKeysOnly(t *testing.T) {
	e := start(t, "")
	_, value := e.createKey(t, map[string]any{"name": "q", "budget": map[string]any{"max_limit": 5}})
	// Management credentials (the setup token here) are refused.
	testgw.WantEnvelope(t, e.g.Do("GET", "/api/governance/virtual-keys/quota", nil), 401, "virtual_key_required")
	testgw.WantEnvelope(t, e.g.Do("GET", "/api/governance/virtual-keys/quota", nil, testgw.NoAuth,
		hdr("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("admin:pw")))), 401, "virtual_key_required")
	testgw.WantEnvelope(t, e.g.Do("GET", "/api/governance/virtual-keys/quota", nil, testgw.NoAuth, bearer("sk-gw-unknown")), 401, "invalid_virtual_key")
	q := e.g.Do("GET", "/api/governance/virtual-keys/quota", nil, testgw.NoAuth, hdr("x-api-key", value)).Map(t)
	b := q["virtual_key"].(map[string]any)["budget"].(map[string]any)
	if b["max_limit"] != 5.0 || b["remaining"] != 5.0 || b["reset_period"] != "month" || b["resets_at"] != "2026-04-01T00:00:00Z" {
		t.Fatalf("quota: %v", q)
	}
	// The route is in the route table as a virtual-key route.
	found := false
	for _, rt := range e.g.Server.Routes() {
		if rt.Path == "/api/governance/virtual-keys/quota" {
			found = rt.Kind == "virtual_key"
		}
	}
	if !found {
		t.Fatal("quota route not registered as a virtual_key route")
	}
}

func TestCustomersAndTeamsCRUD(t *testing.T) {
	e := start(t, "")
	cust := e.create(t, "/api/governance/customers", map[string]any{"name": "acme"}, "customer")
	team := e.create(t, "/api/governance/teams", map[string]any{"name": "ml", "customer_id": cust}, "team")
	if m := e.g.Expect(200, "GET", "/api/governance/teams/"+team, nil).Map(t); m["team"].(map[string]any)["customer_id"] != cust {
		t.Fatalf("team: %v", m)
	}
	l := e.g.Expect(200, "GET", "/api/governance/customers?limit=1", nil).Map(t)
	if l["total_count"] != 1.0 || l["limit"] != 1.0 {
		t.Fatalf("list: %v", l)
	}
	testgw.WantEnvelope(t, e.g.Do("POST", "/api/governance/teams", map[string]any{"name": "x", "customer_id": "nope"}), 400, "unknown_customer")
	name, ok, err := e.g.Server.Governance().TeamName(context.Background(), team)
	if err != nil || !ok || name != "ml" {
		t.Fatalf("TeamName: %q %v %v", name, ok, err)
	}
	if _, ok, _ := e.g.Server.Governance().TeamName(context.Background(), "nope"); ok {
		t.Fatal("TeamName of an unknown team")
	}
	id, _ := e.createKey(t, map[string]any{"name": "k"})
	if ok, err := e.g.Server.Governance().VirtualKeyExists(context.Background(), id); !ok || err != nil {
		t.Fatal("VirtualKeyExists false for an existing key")
	}
	if ok, _ := e.g.Server.Governance().VirtualKeyExists(context.Background(), "nope"); ok {
		t.Fatal("VirtualKeyExists true for an unknown key")
	}
	e.g.Expect(200, "DELETE", "/api/governance/teams/"+team, nil)
	e.g.Expect(200, "DELETE", "/api/governance/customers/"+cust, nil)
	testgw.WantEnvelope(t, e.g.Do("GET", "/api/governance/customers/"+cust, nil), 404, "not_found")
}

// enableAuth turns dashboard auth on and returns a management API key and
// the admin's Basic header.
func enableAuth(t *testing.T, g *testgw.Gateway) (apiKey string, basic func(*http.Request)) {
	t.Helper()
	g.Expect(200, "PUT", "/api/config/auth", map[string]any{"enabled": true, "admin_username": "admin", "admin_password": "s3cret-pass"})
	basic = hdr("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("admin:s3cret-pass")))
	g.Auth = basic
	m := g.Expect(201, "POST", "/api/auth/api-keys", map[string]any{"name": "ops", "scopes": []string{"*"}}).Map(t)
	apiKey, _ = m["key"].(string)
	if apiKey == "" {
		t.Fatalf("no api key: %v", m)
	}
	return apiKey, basic
}

func TestTeamUpdateRules(t *testing.T) {
	e := start(t, "")
	parent := e.create(t, "/api/governance/customers", map[string]any{"name": "parent"}, "customer")
	c1 := e.create(t, "/api/governance/customers", map[string]any{"name": "c1"}, "customer")
	c2 := e.create(t, "/api/governance/customers", map[string]any{"name": "c2"}, "customer")
	c3 := e.create(t, "/api/governance/customers", map[string]any{"name": "c3"}, "customer")
	team := e.create(t, "/api/governance/teams", map[string]any{"name": "ml", "customer_id": parent}, "team")
	apiKey, basic := enableAuth(t, e.g)
	path := "/api/governance/teams/" + team
	put := func(body any, mods ...func(*http.Request)) *testgw.Response {
		if len(mods) == 0 {
			mods = []func(*http.Request){bearer(apiKey)}
		}
		return e.g.Do("PUT", path, body, append([]func(*http.Request){noAuthz}, mods...)...)
	}

	t.Run("only a management API key", func(t *testing.T) {
		testgw.WantEnvelope(t, put(`{}`, basic), 401, "management_api_key_required")
		m := e.g.Do("POST", "/api/session/login", map[string]any{"username": "admin", "password": "s3cret-pass"}, testgw.NoAuth).Map(t)
		tok, _ := m["token"].(string)
		if tok == "" {
			t.Fatalf("login: %v", m)
		}
		testgw.WantEnvelope(t, put(`{}`, bearer(tok)), 401, "management_api_key_required")
		testgw.WantEnvelope(t, put(`{}`, hdr("x-api-key", apiKey)), 401, "")
		testgw.WantEnvelope(t, put(`{}`, hdr("Authorization", "Bearer "+base64.StdEncoding.EncodeToString([]byte("admin:s3cret-pass")))), 401, "management_api_key_required")
	})
	t.Run("1 name cannot change", func(t *testing.T) {
		m := testgw.WantEnvelope(t, put(map[string]any{"name": "other"}), 400, "immutable_field")
		if m["error"].(map[string]any)["param"] != "name" {
			t.Fatalf("param: %v", m)
		}
		if r := put(map[string]any{"name": "ml"}); r.Status != 200 {
			t.Fatalf("same name: %d %s", r.Status, r.Body)
		}
	})
	t.Run("2 additive and merged, re-send is a no-op", func(t *testing.T) {
		m := put(map[string]any{"customer_id": c1, "customer_ids": []string{c2}}).Map(t)
		if fmt.Sprint(m["attached_customer_ids"]) != fmt.Sprint(sorted(c1, c2)) {
			t.Fatalf("merge: %v", m)
		}
		m = put(map[string]any{"customer_ids": []string{c3}}).Map(t)
		if fmt.Sprint(m["attached_customer_ids"]) != fmt.Sprint(sorted(c1, c2, c3)) {
			t.Fatalf("additive: %v", m)
		}
		m = put(map[string]any{"customer_id": c1}).Map(t)
		if fmt.Sprint(m["attached_customer_ids"]) != fmt.Sprint(sorted(c1, c2, c3)) {
			t.Fatalf("re-send: %v", m)
		}
		testgw.WantEnvelope(t, put(map[string]any{"customer_ids": []string{"nope"}}), 400, "unknown_customer")
	})
	t.Run("3 association is not the budget parent", func(t *testing.T) {
		m := put(map[string]any{"customer_id": c2}).Map(t)
		if m["team"].(map[string]any)["customer_id"] != parent {
			t.Fatalf("budget parent changed: %v", m)
		}
		g := e.g.Do("GET", path, nil, testgw.NoAuth, basic).Map(t)["team"].(map[string]any)
		if g["customer_id"] != parent || len(g["customer_ids"].([]any)) != 3 {
			t.Fatalf("team after association: %v", g)
		}
	})
	t.Run("4 attached_customer_ids only when sent", func(t *testing.T) {
		r := put(map[string]any{"description": "d"})
		if r.Status != 200 || bytes.Contains(r.Body, []byte("attached_customer_ids")) || bytes.Contains(r.Body, []byte(`"warning"`)) {
			t.Fatalf("without input: %d %s", r.Status, r.Body)
		}
		if m := put(map[string]any{"customer_ids": []string{}}).Map(t); m["attached_customer_ids"] == nil {
			t.Fatalf("with an empty input: %v", m)
		}
	})
	t.Run("detach", func(t *testing.T) {
		e.g.Auth = basic
		e.g.Expect(200, "DELETE", "/api/teams/"+team+"/customers/"+c3, nil)
		testgw.WantEnvelope(t, e.g.Do("DELETE", "/api/teams/"+team+"/customers/"+c3, nil), 404, "customer_not_attached")
		m := put(map[string]any{"customer_ids": []string{}}).Map(t)
		if fmt.Sprint(m["attached_customer_ids"]) != fmt.Sprint(sorted(c1, c2)) {
			t.Fatalf("after detach: %v", m)
		}
	})
	// Rule 5 (warning) needs a failing cache refresh: see internal_test.go.
}

// noAuthz drops the Authorization header g.Auth set.
func noAuthz(r *http.Request) { r.Header.Del("Authorization") }

func sorted(xs ...string) []string {
	out := append([]string(nil), xs...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestMissingPermissionIs403(t *testing.T) {
	e := start(t, "")
	enableAuth(t, e.g)
	m := e.g.Expect(201, "POST", "/api/auth/api-keys", map[string]any{"name": "viewer", "scopes": []string{"VirtualKeys:View"}}).Map(t)
	view := m["key"].(string)
	e.g.Auth = bearer(view)
	e.g.Expect(200, "GET", "/api/governance/virtual-keys", nil)
	for _, rt := range [][2]string{{"POST", "/api/governance/virtual-keys"}, {"GET", "/api/governance/teams"},
		{"POST", "/api/governance/customers"}, {"DELETE", "/api/teams/x/customers/y"}} {
		testgw.WantEnvelope(t, e.g.Do(rt[0], rt[1], `{"name":"x"}`), 403, "missing_permission")
	}
}

func TestAsyncSubmitChecksTheVirtualKey(t *testing.T) {
	e := start(t, "")
	id, value := e.createKey(t, map[string]any{"name": "async"})
	testgw.WantEnvelope(t, e.g.Do("POST", "/v1/async/chat/completions", chat, hdr("x-gw-vk", "sk-gw-unknown")), 401, "invalid_virtual_key")
	r := e.g.Do("POST", "/v1/async/chat/completions", chat, hdr("x-gw-vk", value))
	if r.Status != 202 {
		t.Fatalf("submit: %d %s", r.Status, r.Body)
	}
	url, _ := r.Map(t)["result_url"].(string)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		m := e.g.Do("GET", url, nil, hdr("x-gw-vk", value)).Map(t)
		if m["status"] == "completed" {
			break
		}
		if m["status"] == "failed" || time.Now().After(deadline) {
			t.Fatalf("job: %v", m)
		}
	}
	if err := e.g.Server.Logs().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m := e.g.Expect(200, "GET", "/api/logs?virtual_key_ids="+id, nil).Map(t); m["total_count"] != 1.0 {
		t.Fatalf("the job did not run under the virtual key: %v", m)
	}
	e.g.Expect(200, "PUT", "/api/governance/virtual-keys/"+id, map[string]any{"is_active": false})
	testgw.WantEnvelope(t, e.g.Do("POST", "/v1/async/chat/completions", chat, bearer(value)), 401, "virtual_key_disabled")
}

// TestUsersListingsSeeGovernance checks the wiring of host/users' directory
// to governance: its team-member and virtual-key-user listings know the
// teams and keys created here.
func TestUsersListingsSeeGovernance(t *testing.T) {
	e := start(t, "")
	team := e.create(t, "/api/governance/teams", map[string]any{"name": "ml"}, "team")
	id, _ := e.createKey(t, map[string]any{"name": "k"})
	if m := e.g.Expect(200, "GET", "/api/governance/teams/"+team+"/members", nil).Map(t); m["members"] == nil {
		t.Fatalf("members: %v", m)
	}
	if m := e.g.Expect(200, "GET", "/api/governance/virtual-keys/"+id+"/users", nil).Map(t); m["count"] != 0.0 {
		t.Fatalf("users: %v", m)
	}
	if r := e.g.Do("GET", "/api/governance/teams/nope/members", nil); r.Status != 404 {
		t.Fatalf("unknown team members: %d %s", r.Status, r.Body)
	}
	if r := e.g.Do("GET", "/api/governance/virtual-keys/nope/users", nil); r.Status != 404 {
		t.Fatalf("unknown key users: %d %s", r.Status, r.Body)
	}
}

// TestDeletingRemovesMemberships: deleting a team or a virtual key removes
// the users' memberships and attachments that name it, in the same
// transaction, leaving their other memberships alone.
func TestDeletingRemovesMemberships(t *testing.T) {
	e := start(t, "")
	gone := e.create(t, "/api/governance/teams", map[string]any{"name": "gone"}, "team")
	kept := e.create(t, "/api/governance/teams", map[string]any{"name": "kept"}, "team")
	vkGone, _ := e.createKey(t, map[string]any{"name": "gone"})
	vkKept, _ := e.createKey(t, map[string]any{"name": "kept"})
	type user struct {
		ID    string
		Teams []struct {
			ID, Name string
		}
		VirtualKeyIDs []string `json:"virtual_key_ids"`
	}
	var u user
	e.g.Expect(201, "POST", "/api/users", map[string]any{"name": "Ada", "email": "ada@example.com",
		"team_ids": []string{gone, kept}, "virtual_key_ids": []string{vkGone, vkKept}}).Decode(t, &u)
	if len(u.Teams) != 2 || len(u.VirtualKeyIDs) != 2 {
		t.Fatalf("user before: %+v", u)
	}
	if m := e.g.Expect(200, "GET", "/api/governance/teams/"+gone+"/members", nil).Map(t); m["total_count"] != 1.0 {
		t.Fatalf("members before: %v", m)
	}

	e.g.Expect(200, "DELETE", "/api/governance/teams/"+gone, nil)
	e.g.Expect(200, "DELETE", "/api/governance/virtual-keys/"+vkGone, nil)
	e.g.Expect(200, "GET", "/api/users/"+u.ID, nil).Decode(t, &u)
	if len(u.Teams) != 1 || u.Teams[0].ID != kept || u.Teams[0].Name != "kept" || len(u.VirtualKeyIDs) != 1 || u.VirtualKeyIDs[0] != vkKept {
		t.Fatalf("user after the deletes still names them (or lost the others): %+v", u)
	}
	if m := e.g.Expect(200, "GET", "/api/governance/teams/"+kept+"/members", nil).Map(t); m["total_count"] != 1.0 {
		t.Fatalf("members of the kept team: %v", m)
	}
	if m := e.g.Expect(200, "GET", "/api/governance/virtual-keys/"+vkKept+"/users", nil).Map(t); m["total_count"] != 1.0 {
		t.Fatalf("users of the kept key: %v", m)
	}
	// A team and key created afterwards start with no members.
	again := e.create(t, "/api/governance/teams", map[string]any{"name": "gone"}, "team")
	vkAgain, _ := e.createKey(t, map[string]any{"name": "gone"})
	if m := e.g.Expect(200, "GET", "/api/governance/teams/"+again+"/members", nil).Map(t); m["total_count"] != 0.0 {
		t.Fatalf("members of the recreated team: %v", m)
	}
	if m := e.g.Expect(200, "GET", "/api/governance/virtual-keys/"+vkAgain+"/users", nil).Map(t); m["total_count"] != 0.0 {
		t.Fatalf("users of the recreated key: %v", m)
	}
	// The records themselves no longer hold the ids (not just the views).
	body := e.g.Expect(200, "GET", "/api/users", nil).Body
	if bytes.Contains(body, []byte(gone)) || bytes.Contains(body, []byte(vkGone)) {
		t.Fatalf("users listing still names the deleted team or key: %s", body)
	}
}
