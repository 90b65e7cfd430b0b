package pricing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"testing"

	"github.com/wasmgate/gateway/host/fakeupstream"
	"github.com/wasmgate/gateway/host/inference"
	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/server"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// openAIWire is a minimal OpenAI-wire passthrough adapter: the gateway's
// own usage parsing and pricing are what these tests exercise.
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

func start(t *testing.T, dir string) (*testgw.Gateway, *fakeupstream.Server) {
	t.Helper()
	up := fakeupstream.Start(t, fakeupstream.OpenAI, fakeupstream.Options{APIKey: "sk-up", CachedTokens: 3})
	src := inference.AdapterFunc(func(family string) (inference.Adapter, bool) {
		return openAIWire{}, family == "openai"
	})
	g := testgw.Start(t, testgw.Options{Dir: dir, ServerOptions: []server.Option{server.WithAdapters(src)}})
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "openai",
		"network_config": map[string]any{"base_url": up.URL + "/v1", "max_retries": 0}})
	g.Expect(201, "POST", "/api/providers/openai/keys", map[string]any{"name": "k", "value": "sk-up"})
	return g, up
}

type billed struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		TextTokens       int64 `json:"text_tokens"`
		CachedReadTokens int64 `json:"cached_read_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		TextTokens      int64 `json:"text_tokens"`
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	Cost *struct {
		Input     float64 `json:"input_tokens_cost"`
		Output    float64 `json:"output_tokens_cost"`
		Reasoning float64 `json:"reasoning_tokens_cost"`
		Total     float64 `json:"total_cost"`
	} `json:"cost"`
}

func chatBilled(t *testing.T, g *testgw.Gateway, model string) billed {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"reasoning_effort":"low","messages":[{"role":"user","content":"how much is this?"}]}`, model)
	var resp struct {
		ExtraFields struct {
			BilledUsage billed `json:"billed_usage"`
		} `json:"extra_fields"`
	}
	g.Expect(200, "POST", "/v1/chat/completions", body).Decode(t, &resp)
	return resp.ExtraFields.BilledUsage
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestBilledUsageCost prices a real response from a fake OpenAI upstream
// with cached and reasoning tokens, then with an override, and checks the
// request log carries the cost into /api/logs/stats.
func TestBilledUsageCost(t *testing.T) {
	g, _ := start(t, "")
	b := chatBilled(t, g, "openai/gpt-4o-mini-2024-07-18")
	if b.PromptTokensDetails.CachedReadTokens != 3 || b.CompletionTokensDetails.ReasoningTokens == 0 || b.Cost == nil {
		t.Fatalf("billed_usage lacks cached/reasoning tokens or cost: %+v", b)
	}
	if b.PromptTokensDetails.TextTokens != b.PromptTokens-3 ||
		b.CompletionTokensDetails.TextTokens != b.CompletionTokens-b.CompletionTokensDetails.ReasoningTokens {
		t.Fatalf("text token split: %+v", b)
	}
	// gpt-4o-mini: 0.15 in, 0.075 cached, 0.60 out (reasoning at output), per million.
	in := (float64(b.PromptTokens-3)*0.15 + 3*0.075) / 1e6
	out := float64(b.CompletionTokensDetails.TextTokens) * 0.6 / 1e6
	rs := float64(b.CompletionTokensDetails.ReasoningTokens) * 0.6 / 1e6
	if !near(b.Cost.Input, in) || !near(b.Cost.Output, out) || !near(b.Cost.Reasoning, rs) || !near(b.Cost.Total, in+out+rs) {
		t.Fatalf("cost %+v, want input %v output %v reasoning %v", *b.Cost, in, out, rs)
	}
	first := b.Cost.Total

	// An override of the undated id prices the dated one too, and beats the catalog.
	g.Expect(200, "PUT", "/api/governance/pricing/openai/gpt-4o-mini",
		`{"input_per_mtok":1000,"output_per_mtok":2000,"cached_read_per_mtok":0,"reasoning_per_mtok":0}`)
	b2 := chatBilled(t, g, "openai/gpt-4o-mini-2024-07-18")
	want := (float64(b2.PromptTokens-3)*1000 + float64(b2.CompletionTokensDetails.TextTokens)*2000) / 1e6
	if b2.Cost == nil || !near(b2.Cost.Total, want) || b2.Cost.Reasoning != 0 {
		t.Fatalf("override not applied: %+v, want total %v", b2.Cost, want)
	}

	// A model without a price has no cost member (0 would read as free).
	if b3 := chatBilled(t, g, "openai/my-finetune"); b3.Cost != nil {
		t.Fatalf("unknown model priced: %+v", *b3.Cost)
	}

	if err := g.Server.Logs().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var stats struct {
		TotalCost float64 `json:"total_cost"`
	}
	g.Expect(200, "GET", "/api/logs/stats", nil).Decode(t, &stats)
	if !near(stats.TotalCost, first+b2.Cost.Total) {
		t.Fatalf("logs total_cost %v, want %v", stats.TotalCost, first+b2.Cost.Total)
	}
}

type resolvedView struct {
	Source  string `json:"source"`
	Matched struct {
		Provider string `json:"provider"`
		Model    string `json:"model"`
	} `json:"matched"`
	Price struct {
		Input  *float64 `json:"input_per_mtok"`
		Output *float64 `json:"output_per_mtok"`
	} `json:"price"`
}

func TestOverridesAPI(t *testing.T) {
	dir := t.TempDir()
	g, _ := start(t, dir)

	// The catalog lists, filters and pages.
	var list struct {
		Pricing []struct {
			Provider, Model, Source string
		} `json:"pricing"`
		Count int `json:"count"`
		Total int `json:"total_count"`
	}
	g.Expect(200, "GET", "/api/governance/pricing?provider=anthropic&model=sonnet&limit=2", nil).Decode(t, &list)
	if list.Count != 2 || list.Total < 4 || list.Pricing[0].Provider != "anthropic" {
		t.Fatalf("filtered list: %+v", list)
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/governance/pricing?limit=501", nil), 400, "invalid_parameter")
	testgw.WantEnvelope(t, g.Do("GET", "/api/governance/pricing?source=x", nil), 400, "invalid_value")

	// GET resolves like a request would: a Bedrock id to Anthropic's price.
	var rv resolvedView
	g.Expect(200, "GET", "/api/governance/pricing/bedrock/us.anthropic.claude-3-7-sonnet-20250219-v1:0", nil).Decode(t, &rv)
	if rv.Source != "catalog" || rv.Matched.Provider != "anthropic" || rv.Matched.Model != "claude-3-7-sonnet" || *rv.Price.Input != 3 {
		t.Fatalf("resolved: %+v", rv)
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/governance/pricing/openai/my-finetune", nil), 404, "price_not_found")
	testgw.WantEnvelope(t, g.Do("GET", "/api/governance/pricing/nosuch/gpt-4o", nil), 400, "invalid_value")

	// Validation names the field.
	for _, tc := range []struct{ body, code, param string }{
		{`{"output_per_mtok":1}`, "missing_field", "input_per_mtok"},
		{`{"input_per_mtok":1}`, "missing_field", "output_per_mtok"},
		{`{"input_per_mtok":1,"output_per_mtok":-2}`, "invalid_value", "output_per_mtok"},
		{`{"input_per_mtok":1,"output_per_mtok":2,"cached_write_per_mtok":-0.1}`, "invalid_value", "cached_write_per_mtok"},
		{`{"input_per_mtok":1,"output_per_mtok":2,"web_search_per_request":1e9}`, "invalid_value", "web_search_per_request"},
		{`{"input_per_mtok":"1","output_per_mtok":2}`, "invalid_type", "input_per_mtok"},
		{`{"input_per_mtok":1,"output_per_mtok":2,"inptu":3}`, "unknown_field", "inptu"},
		{``, "empty_body", ""},
	} {
		m := testgw.WantEnvelope(t, g.Do("PUT", "/api/governance/pricing/openai/gpt-4o", tc.body), 400, tc.code)
		if p, _ := m["error"].(map[string]any)["param"].(string); p != tc.param {
			t.Errorf("%s: param %q, want %q", tc.body, p, tc.param)
		}
	}

	// A model id with '/' and ':' round-trips through the path.
	path := "/api/governance/pricing/groq/meta-llama%2Fllama-guard-4-12b"
	g.Expect(200, "PUT", path, `{"input_per_mtok":0.2,"output_per_mtok":0.2}`)
	g.Expect(200, "PUT", "/api/governance/pricing/bedrock/acme.custom-model-v1:0", `{"input_per_mtok":7,"output_per_mtok":9}`)
	g.Expect(200, "PUT", "/api/governance/pricing/azure/gpt-4o", `{"input_per_mtok":2.75,"output_per_mtok":11}`)
	g.Expect(200, "GET", "/api/governance/pricing/azure/gpt-4o-2024-11-20", nil).Decode(t, &rv)
	if rv.Source != "override" || *rv.Price.Input != 2.75 {
		t.Fatalf("override not resolved: %+v", rv)
	}
	// The override is azure's only: openai keeps the catalog price.
	g.Expect(200, "GET", "/api/governance/pricing/openai/gpt-4o", nil).Decode(t, &rv)
	if rv.Source != "catalog" || *rv.Price.Input != 2.5 {
		t.Fatalf("openai affected by azure override: %+v", rv)
	}

	// Overrides survive a restart (main store), and are audited.
	g = g.Restart("")
	g.Expect(200, "GET", "/api/governance/pricing?source=override", nil).Decode(t, &list)
	if list.Total != 3 {
		t.Fatalf("after restart: %+v", list)
	}
	g.Expect(200, "GET", "/api/governance/pricing/groq/meta-llama/llama-guard-4-12b", nil).Decode(t, &rv)
	if rv.Source != "override" || *rv.Price.Output != 0.2 {
		t.Fatalf("slash model after restart: %+v", rv)
	}
	var audit struct {
		AuditLogs []struct {
			Action   string `json:"action"`
			Resource string `json:"resource"`
		} `json:"audit_logs"`
		TotalCount int `json:"total_count"`
	}
	g.Expect(200, "GET", "/api/governance/access-profiles/audit-logs?limit=500", nil).Decode(t, &audit)
	n := 0
	for _, a := range audit.AuditLogs {
		if a.Resource == "Pricing" {
			n++
		}
	}
	if n < 11 { // 8 rejected PUTs + 3 stored
		t.Fatalf("audited pricing mutations: %d of 11: %+v", n, audit.AuditLogs)
	}

	g.Expect(200, "DELETE", "/api/governance/pricing/azure/gpt-4o", nil)
	testgw.WantEnvelope(t, g.Do("DELETE", "/api/governance/pricing/azure/gpt-4o", nil), 404, "not_found")
	g.Expect(200, "GET", "/api/governance/pricing/azure/gpt-4o", nil).Decode(t, &rv)
	if rv.Source != "catalog" || *rv.Price.Input != 2.5 {
		t.Fatalf("after delete: %+v", rv)
	}

	// Every pricing route declares its permission.
	want := map[string]string{
		"GET /api/governance/pricing": "Pricing:View", "GET /api/governance/pricing/:provider/*": "Pricing:View",
		"PUT /api/governance/pricing/:provider/*": "Pricing:Update", "DELETE /api/governance/pricing/:provider/*": "Pricing:Update",
	}
	for _, r := range g.Server.Routes() {
		if p, ok := want[r.Method+" "+r.Path]; ok {
			if p != r.Permission {
				t.Errorf("%s %s: permission %s, want %s", r.Method, r.Path, r.Permission, p)
			}
			delete(want, r.Method+" "+r.Path)
		}
	}
	if len(want) > 0 {
		t.Fatalf("routes not registered: %v", want)
	}
}
