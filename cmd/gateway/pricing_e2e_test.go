package main_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/fakeupstream"
	"github.com/wasmgate/gateway/host/upstreamauth"
)

// TestBilledCostEveryFamilyThroughTheBinary prices one answer of each wire
// family (real wasm adapters, fake upstreams reporting cached tokens) and
// checks billed_usage.cost against the price the pricing API resolves for
// the same model: the adapters' usage reaches the pricer intact.
func TestBilledCostEveryFamilyThroughTheBinary(t *testing.T) {
	set := fakeupstream.NewSet(fakeupstream.Options{CachedTokens: 2,
		AWS: &upstreamauth.AWSCredentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "bedrock-test-secret"}})
	srv := httptest.NewServer(set)
	t.Cleanup(func() { set.Close(); srv.Close() })
	cfg := fmt.Sprintf(`providers:
  openai: {network_config: {base_url: "%[1]s/openai/v1"}, keys: [{name: main, value: sk-openai}]}
  anthropic: {network_config: {base_url: "%[1]s/anthropic/v1"}, keys: [{name: main, value: sk-anthropic}]}
  gemini: {network_config: {base_url: "%[1]s/gemini/v1beta"}, keys: [{name: main, value: gemini-key}]}
  cohere: {network_config: {base_url: "%[1]s/cohere/v2"}, keys: [{name: main, value: sk-cohere}]}
  bedrock:
    network_config: {base_url: "%[1]s/bedrock"}
    keys: [{name: main, bedrock_key_config: {access_key: AKIDEXAMPLE, secret_key: bedrock-test-secret, region: us-east-1}}]
`, srv.URL)
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", path)
	for _, model := range familyModels {
		t.Run(model, func(t *testing.T) {
			resp, raw := post(t, p.base+"/v1/chat/completions",
				fmt.Sprintf(`{"model":%q,"max_tokens":100,"messages":[{"role":"user","content":"what does this cost?"}]}`, model))
			if resp.StatusCode != 200 {
				t.Fatalf("chat: %d %s", resp.StatusCode, raw)
			}
			var out struct {
				ExtraFields struct {
					BilledUsage struct {
						Prompt     float64 `json:"prompt_tokens"`
						Completion float64 `json:"completion_tokens"`
						PD         struct {
							Text   float64 `json:"text_tokens"`
							Cached float64 `json:"cached_read_tokens"`
						} `json:"prompt_tokens_details"`
						Cost *struct {
							Input float64 `json:"input_tokens_cost"`
							Total float64 `json:"total_cost"`
						} `json:"cost"`
					} `json:"billed_usage"`
				} `json:"extra_fields"`
			}
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatal(err)
			}
			b := out.ExtraFields.BilledUsage
			if b.PD.Cached != 2 {
				t.Fatalf("the adapter's cached tokens did not reach billed_usage: %s", raw)
			}
			if b.Cost == nil || b.Cost.Total <= 0 {
				t.Fatalf("no cost: %s", raw)
			}
			provider, m, _ := strings.Cut(model, "/")
			code, body := p.do("GET", "/api/governance/pricing/"+provider+"/"+m, nil)
			if code != 200 {
				t.Fatalf("price of %s: %d %s", model, code, body)
			}
			var price struct {
				Price struct {
					In     float64  `json:"input_per_mtok"`
					Out    float64  `json:"output_per_mtok"`
					Cached *float64 `json:"cached_read_per_mtok"`
				} `json:"price"`
			}
			_ = json.Unmarshal(body, &price)
			cachedRate := price.Price.In
			if price.Price.Cached != nil {
				cachedRate = *price.Price.Cached
			}
			wantIn := (b.PD.Text*price.Price.In + b.PD.Cached*cachedRate) / 1e6
			wantTotal := wantIn + b.Completion*price.Price.Out/1e6
			if b.PD.Text+b.PD.Cached != b.Prompt || math.Abs(b.Cost.Input-wantIn) > 1e-9 || math.Abs(b.Cost.Total-wantTotal) > 1e-9 {
				t.Fatalf("cost %+v for usage %+v, want input %v total %v", *b.Cost, b, wantIn, wantTotal)
			}
		})
	}
}
