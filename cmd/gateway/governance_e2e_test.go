package main_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/fakeupstream"
)

// govCall sends a request to the gateway with exactly the given headers (no
// setup token), returning status and body.
func govCall(t *testing.T, p *proc, method, path, body string, headers map[string]string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, p.base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

type quotaView struct {
	VirtualKey struct {
		ID     string `json:"id"`
		Budget struct {
			CurrentUsage float64 `json:"current_usage"`
			Remaining    float64 `json:"remaining"`
		} `json:"budget"`
		Requests struct {
			Used int `json:"used"`
		} `json:"request_limit"`
	} `json:"virtual_key"`
	Team *struct {
		ID string `json:"id"`
	} `json:"team"`
}

func quotaOf(t *testing.T, p *proc, vk string) quotaView {
	t.Helper()
	code, body := govCall(t, p, "GET", "/api/governance/virtual-keys/quota", "", map[string]string{"Authorization": "Bearer " + vk})
	if code != 200 {
		t.Fatalf("quota: %d %s", code, body)
	}
	var q quotaView
	if err := json.Unmarshal(body, &q); err != nil {
		t.Fatal(err)
	}
	return q
}

// TestVirtualKeyThroughTheBinary drives a virtual key through the real
// binary and wasm adapters against fake upstreams: each of the three
// headers, a drop-in route and an async job; the quota endpoint; then a
// SIGKILL, after which the key still works and its spend is still counted.
func TestVirtualKeyThroughTheBinary(t *testing.T) {
	cfg := fakeProviders(t)
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A short flush interval bounds what a kill -9 can lose (see docs).
	_, _ = f.WriteString("governance:\n  counter_flush_interval: 50ms\n")
	f.Close()
	cwd, data := t.TempDir(), t.TempDir()
	p := start(t, cwd, data, nil, "--config", cfg)

	code, body := p.do("POST", "/api/governance/teams", map[string]any{"name": "ml"})
	if code != 201 {
		t.Fatalf("team: %d %s", code, body)
	}
	var team struct{ Team struct{ ID string } }
	_ = json.Unmarshal(body, &team)
	code, body = p.do("POST", "/api/governance/virtual-keys", map[string]any{"name": "e2e", "team_id": team.Team.ID,
		"budget":           map[string]any{"max_limit": 10, "reset_period": "month"},
		"rate_limit":       map[string]any{"request_max_limit": 1000, "request_reset_period": "day"},
		"provider_configs": []map[string]any{{"provider": "openai"}, {"provider": "anthropic"}}})
	if code != 201 {
		t.Fatalf("create vk: %d %s", code, body)
	}
	var created struct {
		VirtualKey struct{ ID, Value string } `json:"virtual_key"`
	}
	_ = json.Unmarshal(body, &created)
	vk, id := created.VirtualKey.Value, created.VirtualKey.ID
	if !strings.HasPrefix(vk, "sk-gw-") {
		t.Fatalf("create answer: %s", body)
	}

	chat := `{"model":"openai/gpt-4o-mini","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
	for _, h := range []map[string]string{{"Authorization": "Bearer " + vk}, {"x-api-key": vk}, {"x-gw-vk": vk}} {
		if code, body := govCall(t, p, "POST", "/v1/chat/completions", chat, h); code != 200 {
			t.Fatalf("chat with %v: %d %s", h, code, body)
		}
	}
	// The Anthropic drop-in route with the key in x-api-key, as the SDK sends it.
	if code, body := govCall(t, p, "POST", "/anthropic/v1/messages",
		`{"model":"claude-3-5-haiku","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"x-api-key": vk, "anthropic-version": "2023-06-01"}); code != 200 {
		t.Fatalf("anthropic drop-in: %d %s", code, body)
	}
	// GenAI and Bedrock SDKs carry the key in their own slots: x-goog-api-key
	// or ?key=, and the SigV4 access key id.
	genai := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	sigv4 := func(akid string) map[string]string {
		return map[string]string{"Authorization": "AWS4-HMAC-SHA256 Credential=" + akid +
			"/20261122/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=00", "X-Amz-Date": "20261122T000000Z"}
	}
	converse := `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`
	for _, c := range []struct {
		path, body string
		h          map[string]string
	}{
		{"/genai/v1beta/models/openai/gpt-4o-mini:generateContent", genai, map[string]string{"x-goog-api-key": vk}},
		{"/genai/v1beta/models/openai/gpt-4o-mini:generateContent?key=" + vk, genai, nil},
		{"/bedrock/model/openai%2Fgpt-4o-mini/converse", converse, sigv4(vk)},
	} {
		if code, body := govCall(t, p, "POST", c.path, c.body, c.h); code != 200 {
			t.Fatalf("%s with the key in the family's slot: %d %s", c.path, code, body)
		}
		bad := map[string]string{}
		for k, v := range c.h {
			bad[k] = strings.ReplaceAll(v, vk, "sk-gw-wrong")
		}
		if code, body := govCall(t, p, "POST", strings.ReplaceAll(c.path, vk, "sk-gw-wrong"), c.body, bad); code != 401 {
			t.Fatalf("%s with an unknown key: %d %s", c.path, code, body)
		}
	}
	// Not allowed by the key: gemini.
	if code, body := govCall(t, p, "POST", "/v1/chat/completions", `{"model":"gemini/gemini-2.0-flash","messages":[]}`,
		map[string]string{"x-gw-vk": vk}); code != 403 || !strings.Contains(string(body), "provider_not_allowed") {
		t.Fatalf("disallowed provider: %d %s", code, body)
	}
	// An async job carries the key in x-gw-vk and runs under it.
	code, body = govCall(t, p, "POST", "/v1/async/chat/completions", chat, map[string]string{"x-gw-vk": vk})
	if code != 202 {
		t.Fatalf("async submit: %d %s", code, body)
	}
	var job struct {
		ResultURL string `json:"result_url"`
		Status    string `json:"status"`
	}
	_ = json.Unmarshal(body, &job)
	for deadline := time.Now().Add(30 * time.Second); job.Status != "completed"; {
		if time.Now().After(deadline) || job.Status == "failed" {
			t.Fatalf("async job: %+v", job)
		}
		time.Sleep(20 * time.Millisecond)
		_, body = govCall(t, p, "GET", job.ResultURL, "", map[string]string{"x-gw-vk": vk})
		_ = json.Unmarshal(body, &job)
	}
	// Unknown keys are refused on every header.
	for _, h := range []map[string]string{{"Authorization": "Bearer sk-gw-wrong"}, {"x-api-key": "sk-gw-wrong"}, {"x-gw-vk": "sk-gw-wrong"}} {
		if code, body := govCall(t, p, "POST", "/v1/chat/completions", chat, h); code != 401 || !strings.Contains(string(body), `"event_id"`) {
			t.Fatalf("unknown key via %v: %d %s", h, code, body)
		}
	}

	q := quotaOf(t, p, vk)
	if q.VirtualKey.ID != id || q.Team == nil || q.Team.ID != team.Team.ID || q.VirtualKey.Requests.Used != 8 {
		t.Fatalf("quota: %+v", q)
	}
	spent := q.VirtualKey.Budget.CurrentUsage
	if spent <= 0 || q.VirtualKey.Budget.Remaining >= 10 {
		t.Fatalf("no spend recorded (is gpt-4o-mini priced?): %+v", q)
	}
	// Management credentials are refused on the quota route.
	if code, _ := govCall(t, p, "GET", "/api/governance/virtual-keys/quota", "", map[string]string{"X-Gateway-Setup-Token": setupToken}); code != 401 {
		t.Fatalf("quota with the setup token: %d", code)
	}

	// Let the counter flusher run (50ms) a few times, then kill -9.
	time.Sleep(300 * time.Millisecond)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(10 * time.Second)
	p = start(t, cwd, data, nil, "--config", cfg)
	q = quotaOf(t, p, vk)
	if q.VirtualKey.Requests.Used != 8 || q.VirtualKey.Budget.CurrentUsage != spent {
		t.Fatalf("spend after SIGKILL: %+v, want 8 requests and %v USD", q, spent)
	}
	if code, body := govCall(t, p, "POST", "/v1/chat/completions", chat, map[string]string{"Authorization": "Bearer " + vk}); code != 200 {
		t.Fatalf("key after SIGKILL: %d %s", code, body)
	}
	code, body = p.do("GET", "/api/governance/virtual-keys/"+id, nil)
	if code != 200 || bytes.Contains(body, []byte(vk)) {
		t.Fatalf("get after restart: %d %s", code, body)
	}
}

// TestBareModelRoutingThroughTheBinary: a bare model with a virtual key is
// routed by the key's provider weights through the real binary and wasm
// adapters. The weight-0 provider is the fallback: when the weighted one
// keeps failing, the request is answered by it, and routing_info says so.
func TestBareModelRoutingThroughTheBinary(t *testing.T) {
	cfg, set := fakeProviderSet(t)
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)
	code, body := p.do("POST", "/api/governance/virtual-keys", map[string]any{"name": "router",
		"provider_configs": []map[string]any{{"provider": "openai", "weight": 0}, {"provider": "anthropic", "weight": 2},
			{"provider": "gemini", "weight": 5, "allowed_models": []string{"gemini-2.0-flash"}}}})
	var created struct {
		VirtualKey struct{ Value string } `json:"virtual_key"`
	}
	if code != 201 || json.Unmarshal(body, &created) != nil {
		t.Fatalf("create vk: %d %s", code, body)
	}
	vk := map[string]string{"x-gw-vk": created.VirtualKey.Value}
	chat := `{"model":"claude-3-5-haiku","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`
	type info struct {
		Provider          string `json:"provider"`
		IsFallback        bool   `json:"is_fallback"`
		PrimaryProvider   string `json:"primary_provider"`
		RequestedProvider string `json:"requested_provider"`
		RequestedModel    string `json:"requested_model"`
	}
	routed := func() info {
		t.Helper()
		code, body := govCall(t, p, "POST", "/v1/chat/completions", chat, vk)
		var r struct {
			ExtraFields struct {
				RoutingInfo info `json:"routing_info"`
			} `json:"extra_fields"`
		}
		if code != 200 || json.Unmarshal(body, &r) != nil {
			t.Fatalf("bare model: %d %s", code, body)
		}
		return r.ExtraFields.RoutingInfo
	}
	// anthropic is the only weighted provider that allows the model.
	if ri := routed(); ri.Provider != "anthropic" || ri.IsFallback || ri.RequestedProvider != "" || ri.RequestedModel != "claude-3-5-haiku" {
		t.Fatalf("routing_info %+v, want anthropic as primary", ri)
	}
	// Three failures use up anthropic's attempts (max_retries 2): openai answers.
	set.Servers[fakeupstream.Anthropic].FailNext(3, 503, "")
	if ri := routed(); ri.Provider != "openai" || !ri.IsFallback || ri.PrimaryProvider != "anthropic" {
		t.Fatalf("routing_info %+v, want the weight-0 openai as fallback", ri)
	}
	if code, body := govCall(t, p, "POST", "/v1/chat/completions", chat, nil); code != 400 || !strings.Contains(string(body), "invalid_model") {
		t.Fatalf("bare model without a key: %d %s", code, body)
	}
}
