package providers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/providers"
	"github.com/wasmgate/gateway/host/secret"
)

const (
	secretOpenAI  = "sk-openai-SUPERSECRET-0123456789abcdef"
	secretHeader  = "Bearer HEADER-SECRET-abcdefghijklmnop"
	secretProxyPw = "proxy-pass-SECRET-9876543210"
)

func errParam(t *testing.T, r *testgw.Response) string {
	t.Helper()
	var env struct {
		Error struct {
			Param   string `json:"param"`
			Message string `json:"message"`
		} `json:"error"`
	}
	r.Decode(t, &env)
	return env.Error.Param
}

func TestCatalogHasThirtyUniqueProviders(t *testing.T) {
	cat := providers.Catalog()
	if len(cat) != 30 {
		t.Fatalf("catalog has %d providers, want 30", len(cat))
	}
	seen := map[string]bool{}
	for _, in := range cat {
		if seen[in.ID] || in.ID != strings.ToLower(in.ID) || in.Family == "" || in.Auth == "" {
			t.Errorf("bad catalog entry %+v", in)
		}
		seen[in.ID] = true
		if in.DefaultBaseURL == "" && !in.SelfHosted && in.KeyConfig == "" {
			t.Errorf("%s has no base URL, is not self-hosted and has no key config to say where to go", in.ID)
		}
	}
}

func TestProviderCRUD(t *testing.T) {
	g := testgw.Start(t, testgw.Options{})
	body := map[string]any{
		"name": "openai",
		"network_config": map[string]any{
			"base_url":      "https://proxy.example.com/v1",
			"extra_headers": map[string]string{"Authorization": secretHeader, "X-Team": "blue"},
			"max_retries":   3,
		},
		"proxy_config": map[string]any{"type": "http", "url": "http://proxy:3128", "username": "u", "password": secretProxyPw},
	}
	r := g.Expect(201, "POST", "/api/providers", body)
	if bytes.Contains(r.Body, []byte(secretHeader)) || bytes.Contains(r.Body, []byte(secretProxyPw)) {
		t.Fatalf("create response leaks a secret: %s", r.Body)
	}
	var p providers.Provider
	r.Decode(t, &p)
	if p.NetworkConfig.DefaultRequestTimeoutInSeconds != 60 || p.NetworkConfig.MaxRetries != 3 ||
		p.ConcurrencyAndBufferSize.Concurrency != providers.DefaultConcurrency || p.NetworkConfig.ExtraHeaders["X-Team"] != "blue" {
		t.Fatalf("defaults or fields wrong: %+v", p)
	}

	if r := g.Expect(409, "POST", "/api/providers", map[string]any{"name": "openai"}); errParam(t, r) != "" {
		t.Logf("conflict: %s", r.Body)
	}
	r = g.Expect(400, "POST", "/api/providers", map[string]any{"name": "openia"})
	if errParam(t, r) != "name" || !strings.Contains(string(r.Body), "must be one of") {
		t.Fatalf("unknown provider: %s", r.Body)
	}
	g.Expect(404, "GET", "/api/providers/anthropic", nil)
	if r := g.Expect(400, "GET", "/api/providers/nope", nil); errParam(t, r) != "provider" {
		t.Fatalf("bad path id: %s", r.Body)
	}

	var list struct {
		Providers  []providers.Provider `json:"providers"`
		Count      int                  `json:"count"`
		TotalCount int                  `json:"total_count"`
		Limit      int                  `json:"limit"`
		Offset     int                  `json:"offset"`
	}
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "anthropic"})
	g.Expect(200, "GET", "/api/providers", nil).Decode(t, &list)
	if list.Count != 2 || list.TotalCount != 2 || list.Limit != 50 || list.Providers[0].Name != "anthropic" {
		t.Fatalf("list: %+v", list)
	}
	g.Expect(200, "GET", "/api/providers?limit=1&offset=1", nil).Decode(t, &list)
	if list.Count != 1 || list.TotalCount != 2 || list.Providers[0].Name != "openai" {
		t.Fatalf("paged list: %+v", list)
	}
	if r := g.Expect(400, "GET", "/api/providers?limit=501", nil); errParam(t, r) != "limit" {
		t.Fatalf("limit: %s", r.Body)
	}

	// Full update from the GET body: the masked header and password come back
	// and must keep the stored secrets.
	var got map[string]any
	g.Expect(200, "GET", "/api/providers/openai", nil).Decode(t, &got)
	got["network_config"].(map[string]any)["max_retries"] = 5
	g.Expect(200, "PUT", "/api/providers/openai", got)
	sp, _ := g.Server.Providers().Provider("openai")
	if sp.NetworkConfig.MaxRetries != 5 || sp.NetworkConfig.ExtraHeaders["Authorization"] != secretHeader || sp.ProxyConfig.Password.Value != secretProxyPw {
		t.Fatalf("update lost data: %+v", sp)
	}
	if r := g.Expect(400, "PUT", "/api/providers/openai", map[string]any{"name": "anthropic"}); errParam(t, r) != "name" {
		t.Fatalf("rename: %s", r.Body)
	}

	r = g.Expect(200, "DELETE", "/api/providers/openai", nil)
	if m := r.Map(t); m["status"] != "success" || m["message"] == "" {
		t.Fatalf("delete answer: %s", r.Body)
	}
	g.Expect(404, "GET", "/api/providers/openai", nil)
	g.Expect(404, "DELETE", "/api/providers/openai", nil)
}

func TestProviderValidationNamesField(t *testing.T) {
	g := testgw.Start(t, testgw.Options{})
	cases := []struct {
		body  string
		param string
	}{
		{`{"name":"openai","network_config":{"base_url":"ftp://x"}}`, "network_config.base_url"},
		{`{"name":"openai","network_config":{"base_url":"not a url"}}`, "network_config.base_url"},
		{`{"name":"openai","network_config":{"max_retries":11}}`, "network_config.max_retries"},
		{`{"name":"openai","network_config":{"max_retries":-1}}`, "network_config.max_retries"},
		{`{"name":"openai","network_config":{"default_request_timeout_in_seconds":-5}}`, "network_config.default_request_timeout_in_seconds"},
		{`{"name":"openai","network_config":{"retry_backoff_initial_ms":1000,"retry_backoff_max_ms":10}}`, "network_config.retry_backoff_max_ms"},
		{`{"name":"openai","network_config":{"max_retries":"3"}}`, "network_config.max_retries"},
		{`{"name":"openai","network_config":{"extra_headers":{"bad header":"x"}}}`, "network_config.extra_headers"},
		{`{"name":"openai","concurrency_and_buffer_size":{"concurrency":10,"buffer_size":5}}`, "concurrency_and_buffer_size.buffer_size"},
		{`{"name":"openai","proxy_config":{"type":"ftp"}}`, "proxy_config.type"},
		{`{"name":"openai","proxy_config":{"type":"socks5","url":"http://x:1"}}`, "proxy_config.url"},
		{`{"name":"openai","proxy_config":{"type":"http","url":"http://p:1","password":{"type":"bogus"}}}`, "proxy_config.password"},
		{`{"name":"openai","surprise":1}`, "surprise"},
		{`{"name":7}`, "name"},
	}
	for _, c := range cases {
		r := g.Do("POST", "/api/providers", c.body)
		if r.Status != 400 || errParam(t, r) != c.param {
			t.Errorf("%s: status %d param %q, want 400 %q (%s)", c.body, r.Status, errParam(t, r), c.param, r.Body)
		}
	}
}

// keyVariant is one provider with a key exercising its key config.
type keyVariant struct {
	provider string
	provBody map[string]any
	key      map[string]any
	secrets  []string // must never appear in a GET
	check    func(t *testing.T, k providers.Key)
}

func variants() []keyVariant {
	return []keyVariant{
		{provider: "azure", key: map[string]any{"name": "az", "value": "azure-api-key-SECRET-00001",
			"azure_key_config": map[string]any{"endpoint": "https://res.openai.azure.com", "api_version": "2024-10-21",
				"client_id": "cid", "client_secret": "azure-client-SECRET-00002", "tenant_id": "tid", "scopes": []string{"https://cognitiveservices.azure.com/.default"}}},
			secrets: []string{"azure-api-key-SECRET-00001", "azure-client-SECRET-00002"},
			check: func(t *testing.T, k providers.Key) {
				if k.Azure == nil || k.Azure.Endpoint.Value != "https://res.openai.azure.com" || len(k.Azure.Scopes) != 1 || k.Azure.ClientSecret.Value != "azure-client-SECRET-00002" {
					t.Errorf("azure config: %+v", k.Azure)
				}
			}},
		{provider: "vertex", key: map[string]any{"name": "vx",
			"vertex_key_config": map[string]any{"project_id": "proj", "project_number": "123", "region": "us-central1", "auth_credentials": `{"type":"service_account","private_key":"vertex-SECRET-00003"}`}},
			secrets: []string{"vertex-SECRET-00003"},
			check: func(t *testing.T, k providers.Key) {
				if k.Vertex == nil || k.Vertex.Region.Value != "us-central1" || !strings.Contains(k.Vertex.AuthCredentials.Value, "vertex-SECRET-00003") {
					t.Errorf("vertex config: %+v", k.Vertex)
				}
			}},
		{provider: "bedrock", key: map[string]any{"name": "br",
			"bedrock_key_config": map[string]any{"access_key": "AKIA-SECRET-00004", "secret_key": "bedrock-SECRET-00005", "session_token": "bedrock-session-SECRET-6",
				"region": "eu-west-1", "arn": "arn:aws:bedrock:eu-west-1:1:inference-profile/x",
				"batch_s3_config": map[string]any{"buckets": []map[string]any{{"bucket_name": "b1", "prefix": "in/", "is_default": true}, {"bucket_name": "b2"}}}}},
			secrets: []string{"AKIA-SECRET-00004", "bedrock-SECRET-00005", "bedrock-session-SECRET-6"},
			check: func(t *testing.T, k providers.Key) {
				c := k.Bedrock
				if c == nil || c.SecretKey.Value != "bedrock-SECRET-00005" || c.BatchS3Config == nil || len(c.BatchS3Config.Buckets) != 2 || !c.BatchS3Config.Buckets[0].IsDefault {
					t.Errorf("bedrock config: %+v", c)
				}
			}},
		{provider: "vllm", key: map[string]any{"name": "vl", "value": "vllm-token-SECRET-000007",
			"vllm_key_config": map[string]any{"url": "http://vllm.internal:8000/v1", "model_name": "meta-llama/Llama-3.1-8B"}},
			secrets: []string{"vllm-token-SECRET-000007"},
			check: func(t *testing.T, k providers.Key) {
				if k.VLLM == nil || k.VLLM.URL.Value != "http://vllm.internal:8000/v1" || k.VLLM.ModelName != "meta-llama/Llama-3.1-8B" {
					t.Errorf("vllm config: %+v", k.VLLM)
				}
			}},
		{provider: "ollama", key: map[string]any{"name": "ol", "ollama_key_config": map[string]any{"url": "http://localhost:11434"}},
			check: func(t *testing.T, k providers.Key) {
				if k.Ollama == nil || k.Ollama.URL.Value != "http://localhost:11434" {
					t.Errorf("ollama config: %+v", k.Ollama)
				}
			}},
		{provider: "sgl", key: map[string]any{"name": "sg", "sgl_key_config": map[string]any{"url": "http://sgl:30000"}},
			check: func(t *testing.T, k providers.Key) {
				if k.SGL == nil || k.SGL.URL.Value != "http://sgl:30000" {
					t.Errorf("sgl config: %+v", k.SGL)
				}
			}},
		{provider: "replicate", key: map[string]any{"name": "rp", "value": "r8_SECRET-replicate-000008",
			"replicate_key_config": map[string]any{"use_deployments_endpoint": true}},
			secrets: []string{"r8_SECRET-replicate-000008"},
			check: func(t *testing.T, k providers.Key) {
				if k.Replicate == nil || !k.Replicate.UseDeploymentsEndpoint {
					t.Errorf("replicate config: %+v", k.Replicate)
				}
			}},
		{provider: "lmstudio", provBody: map[string]any{"network_config": map[string]any{"base_url": "http://127.0.0.1:1234/v1"}},
			key:   map[string]any{"name": "lm"},
			check: func(t *testing.T, k providers.Key) {}},
	}
}

func TestKeyCRUDEveryKeyConfigVariant(t *testing.T) {
	g := testgw.Start(t, testgw.Options{})
	for _, v := range variants() {
		t.Run(v.provider, func(t *testing.T) {
			pb := map[string]any{"name": v.provider}
			for k, val := range v.provBody {
				pb[k] = val
			}
			g.Expect(201, "POST", "/api/providers", pb)
			base := "/api/providers/" + v.provider + "/keys"
			r := g.Expect(201, "POST", base, v.key)
			var created providers.Key
			r.Decode(t, &created)
			if created.ID == "" || created.Provider != v.provider || !created.Enabled || created.Weight != 1 {
				t.Fatalf("created key: %s", r.Body)
			}
			stored, ok := g.Server.Providers().Key(v.provider, created.ID)
			if !ok {
				t.Fatal("key not in snapshot")
			}
			v.check(t, stored)

			// Every GET is redacted.
			bodies := [][]byte{r.Body,
				g.Expect(200, "GET", base+"/"+created.ID, nil).Body,
				g.Expect(200, "GET", base, nil).Body,
				g.Expect(200, "GET", "/api/providers/"+v.provider, nil).Body,
				g.Expect(200, "GET", "/api/providers", nil).Body,
				g.Expect(200, "GET", "/api/keys", nil).Body}
			for _, b := range bodies {
				for _, s := range v.secrets {
					if bytes.Contains(b, []byte(s)) {
						t.Fatalf("secret %q leaked in %s", s, b)
					}
				}
			}

			// PUT the GET body back with a change: the masked secrets are kept.
			var got map[string]any
			g.Expect(200, "GET", base+"/"+created.ID, nil).Decode(t, &got)
			got["weight"] = 2.5
			got["models"] = []string{"m1"}
			r = g.Expect(200, "PUT", base+"/"+created.ID, got)
			after, _ := g.Server.Providers().Key(v.provider, created.ID)
			if after.Weight != 2.5 || len(after.Models) != 1 {
				t.Fatalf("update not applied: %+v", after)
			}
			v.check(t, after)
			if after.Value != stored.Value {
				t.Fatalf("value changed by masked round trip: %+v -> %+v", stored.Value, after.Value)
			}

			g.Expect(200, "DELETE", base+"/"+created.ID, nil)
			g.Expect(404, "GET", base+"/"+created.ID, nil)
		})
	}
}

func TestKeyFieldsAndValidation(t *testing.T) {
	g := testgw.Start(t, testgw.Options{})
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "openai"})
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "ollama"})
	base := "/api/providers/openai/keys"
	full := map[string]any{"name": "main", "value": secretOpenAI, "models": []string{"gpt-4o"}, "blacklisted_models": []string{"gpt-3.5"},
		"weight": 0, "aliases": map[string]string{"gpt-4o": "my-deployment"}, "enabled": false, "use_for_batch_api": true}
	r := g.Expect(201, "POST", base, full)
	var k providers.Key
	r.Decode(t, &k)
	if k.Weight != 0 || k.Enabled || !k.UseForBatchAPI || k.Aliases["gpt-4o"] != "my-deployment" || k.BlacklistedModels[0] != "gpt-3.5" ||
		k.Value.Type != secret.PlainText || k.Value.Value == secretOpenAI || k.Value.Value == "" {
		t.Fatalf("key fields: %s", r.Body)
	}
	m := r.Map(t)
	for _, f := range []string{"id", "name", "value", "models", "blacklisted_models", "weight", "aliases", "enabled", "use_for_batch_api", "config_hash", "status", "description"} {
		if _, ok := m[f]; !ok {
			t.Errorf("key response lacks %q", f)
		}
	}
	g.Expect(409, "POST", base, map[string]any{"name": "main", "value": "x"})
	g.Expect(404, "GET", base+"/0190-missing", nil)
	g.Expect(404, "POST", "/api/providers/anthropic/keys", map[string]any{"name": "a", "value": "x"})

	cases := []struct {
		path, body, param string
	}{
		{base, `{"name":"k","value":"x","bedrock_key_config":{"region":"us-east-1"}}`, "bedrock_key_config"},
		{base, `{"name":"k","value":"x","azure_key_config":{"endpoint":"https://a"}}`, "azure_key_config"},
		{base, `{"name":"k"}`, "value"},
		{base, `{"value":"x"}`, "name"},
		{base, `{"name":"k","value":"x","weight":-1}`, "weight"},
		{base, `{"name":"k","value":"x","weight":"heavy"}`, "weight"},
		{base, `{"name":"k","value":"x","enabled":"yes"}`, "enabled"},
		{base, `{"name":"k","value":"x","models":"gpt-4o"}`, "models"},
		{base, `{"name":"k","value":"x","models":[""]}`, "models[0]"},
		{base, `{"name":"k","value":"x","aliases":{"a":""}}`, "aliases.a"},
		{base, `{"name":"k","value":"x","aliases":{"":"b"}}`, "aliases"},
		{base, `{"name":"k","value":"env.BAD NAME"}`, "value"},
		{base, `{"name":"k","value":{"type":"vault","ref":"env.X"}}`, "value"},
		{base, `{"name":"k","value":"x","id":"chosen"}`, "id"},
		{base, `{"name":"k","value":"x","colour":"red"}`, "colour"},
		{"/api/providers/ollama/keys", `{"name":"k"}`, "ollama_key_config.url"},
		{"/api/providers/ollama/keys", `{"name":"k","ollama_key_config":{}}`, "ollama_key_config.url"},
		{"/api/providers/ollama/keys", `{"name":"k","ollama_key_config":{"url":"localhost"}}`, "ollama_key_config.url"},
	}
	for _, c := range cases {
		r := g.Do("POST", c.path, c.body)
		if r.Status != 400 || errParam(t, r) != c.param {
			t.Errorf("%s: status %d param %q, want 400 %q (%s)", c.body, r.Status, errParam(t, r), c.param, r.Body)
		}
	}
	// Provider-level checks for the other variants.
	for prov, c := range map[string]struct{ body, param string }{
		"azure":   {`{"name":"k","value":"x"}`, "azure_key_config.endpoint"},
		"vertex":  {`{"name":"k","vertex_key_config":{"project_id":"p"}}`, "vertex_key_config.region"},
		"bedrock": {`{"name":"k","bedrock_key_config":{"access_key":"a"}}`, "bedrock_key_config.secret_key"},
		"vllm":    {`{"name":"k","vllm_key_config":{"model_name":"m"}}`, "vllm_key_config.url"},
	} {
		g.Expect(201, "POST", "/api/providers", map[string]any{"name": prov})
		r := g.Do("POST", "/api/providers/"+prov+"/keys", c.body)
		if r.Status != 400 || errParam(t, r) != c.param {
			t.Errorf("%s %s: status %d param %q, want 400 %q (%s)", prov, c.body, r.Status, errParam(t, r), c.param, r.Body)
		}
	}
	// A self-hosted provider needs a base URL before keys without url exist.
	g.Expect(200, "PUT", "/api/providers/ollama", map[string]any{"network_config": map[string]any{"base_url": "http://ollama:11434"}})
	r = g.Expect(201, "POST", "/api/providers/ollama/keys", map[string]any{"name": "nourl"})
	if r := g.Expect(400, "PUT", "/api/providers/ollama", map[string]any{}); errParam(t, r) != "network_config.base_url" {
		t.Fatalf("removing base_url: %s", r.Body)
	}
}

func TestRedactionAndReferences(t *testing.T) {
	t.Setenv("PROVIDERS_TEST_OPENAI", "from-env-SECRET-value-42")
	g := testgw.Start(t, testgw.Options{})
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "openai"})
	base := "/api/providers/openai/keys"
	plain := g.Expect(201, "POST", base, map[string]any{"name": "plain", "value": secretOpenAI})
	envK := g.Expect(201, "POST", base, map[string]any{"name": "env", "value": "env.PROVIDERS_TEST_OPENAI"})
	vaultK := g.Expect(201, "POST", base, map[string]any{"name": "vault", "value": map[string]any{"type": "vault", "ref": "vault.teams/ai#openai"}})

	var all []providers.Key
	r := g.Expect(200, "GET", "/api/keys", nil)
	if r.Body[0] != '[' {
		t.Fatalf("/api/keys must answer a bare array: %s", r.Body)
	}
	r.Decode(t, &all)
	if len(all) != 3 {
		t.Fatalf("want 3 keys, got %d", len(all))
	}
	byName := map[string]providers.Key{}
	for _, k := range all {
		byName[k.Name] = k
	}
	if v := byName["env"].Value; v.Type != secret.Env || v.Ref != "env.PROVIDERS_TEST_OPENAI" || v.Value != "" {
		t.Errorf("env ref shown as %+v", v)
	}
	if v := byName["vault"].Value; v.Type != secret.Vault || v.Ref != "vault.teams/ai#openai" || v.Value != "" {
		t.Errorf("vault ref shown as %+v", v)
	}
	if v := byName["plain"].Value; v.Type != secret.PlainText || v.Value != secret.Mask(secretOpenAI) {
		t.Errorf("plain shown as %+v", v)
	}
	for _, b := range [][]byte{plain.Body, envK.Body, vaultK.Body, r.Body,
		g.Expect(200, "GET", base, nil).Body, g.Expect(200, "GET", "/api/providers", nil).Body,
		g.Expect(200, "GET", "/api/providers/openai", nil).Body} {
		if bytes.Contains(b, []byte(secretOpenAI)) || bytes.Contains(b, []byte("from-env-SECRET")) {
			t.Fatalf("secret leaked: %s", b)
		}
	}
	// Only the reference is persisted for env values.
	k, _ := g.Server.Providers().Key("openai", byName["env"].ID)
	if k.Value.Value != "" || k.Value.Ref != "env.PROVIDERS_TEST_OPENAI" {
		t.Fatalf("env value persisted: %+v", k.Value)
	}

	// Masked round trip of the plain key keeps the secret.
	var got map[string]any
	g.Expect(200, "GET", base+"/"+byName["plain"].ID, nil).Decode(t, &got)
	got["description"] = "ignored"
	got["name"] = "plain-renamed"
	g.Expect(200, "PUT", base+"/"+byName["plain"].ID, got)
	rk, err := g.Server.Providers().ResolveKey(context.Background(), mustKey(t, g, byName["plain"].ID))
	if err != nil || rk.Secret() != secretOpenAI || rk.Name != "plain-renamed" {
		t.Fatalf("masked round trip: %v %+v", err, rk.Value)
	}
	// Sending a new value replaces it.
	got["value"] = "sk-new-value-0000000000000000"
	g.Expect(200, "PUT", base+"/"+byName["plain"].ID, got)
	if k := mustKey(t, g, byName["plain"].ID); k.Value.Value != "sk-new-value-0000000000000000" {
		t.Fatalf("new value not stored: %+v", k.Value)
	}

	// env resolution.
	rk, err = g.Server.Providers().ResolveKey(context.Background(), mustKey(t, g, byName["env"].ID))
	if err != nil || rk.Secret() != "from-env-SECRET-value-42" || rk.BaseURL != "https://api.openai.com/v1" {
		t.Fatalf("env resolve: %v %+v", err, rk)
	}
	t.Setenv("PROVIDERS_TEST_OPENAI", "rotated")
	rk, _ = g.Server.Providers().ResolveKey(context.Background(), mustKey(t, g, byName["env"].ID))
	if rk.Secret() != "rotated" {
		t.Fatalf("env is resolved at use time, got %q", rk.Secret())
	}
	// vault without vault.address configured fails with a clear error.
	if _, err := g.Server.Providers().ResolveKey(context.Background(), mustKey(t, g, byName["vault"].ID)); !errors.Is(err, secret.ErrUnresolved) || !strings.Contains(err.Error(), "value") {
		t.Fatalf("vault without config: %v", err)
	}
}

func mustKey(t *testing.T, g *testgw.Gateway, id string) providers.Key {
	t.Helper()
	k, ok := g.Server.Providers().Key("openai", id)
	if !ok {
		t.Fatalf("key %s missing", id)
	}
	return k
}

// fakeVault speaks the Vault KV v2 read API for mount "secret".
func fakeVault(t *testing.T, token string, secrets map[string]map[string]any) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/v1/secret/data/") {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"errors":[]}`))
			return
		}
		if r.Header.Get("X-Vault-Token") != token {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"errors":["permission denied"]}`))
			return
		}
		data, ok := secrets[strings.TrimPrefix(r.URL.Path, "/v1/secret/data/")]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"errors":[]}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"request_id": "r", "lease_id": "", "renewable": false, "lease_duration": 0,
			"data": map[string]any{"data": data, "metadata": map[string]any{"created_time": "2024-01-01T00:00:00Z", "version": 1, "destroyed": false}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestVaultResolution(t *testing.T) {
	vault := fakeVault(t, "root-token", map[string]map[string]any{
		"teams/ai":    {"openai": "vault-openai-SECRET", "other": "x"},
		"single":      {"value": "vault-default-field-SECRET"},
		"aws/bedrock": {"secret": "vault-aws-SECRET"},
	})
	g := testgw.Start(t, testgw.Options{Env: []string{"GATEWAY_VAULT__ADDRESS=" + vault.URL, "GATEWAY_VAULT__TOKEN=root-token"}})
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "openai"})
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "bedrock"})
	mk := func(prov string, body map[string]any) providers.Key {
		var k providers.Key
		g.Expect(201, "POST", "/api/providers/"+prov+"/keys", body).Decode(t, &k)
		sk, _ := g.Server.Providers().Key(prov, k.ID)
		return sk
	}
	svc := g.Server.Providers()
	ctx := context.Background()
	field := mk("openai", map[string]any{"name": "field", "value": "vault.teams/ai#openai"})
	if rk, err := svc.ResolveKey(ctx, field); err != nil || rk.Secret() != "vault-openai-SECRET" {
		t.Fatalf("vault field: %v %q", err, rk.Secret())
	}
	def := mk("openai", map[string]any{"name": "default", "value": "vault.single"})
	if rk, err := svc.ResolveKey(ctx, def); err != nil || rk.Secret() != "vault-default-field-SECRET" {
		t.Fatalf("vault default field: %v %q", err, rk.Secret())
	}
	br := mk("bedrock", map[string]any{"name": "aws", "bedrock_key_config": map[string]any{"access_key": "AKIAPLAIN", "secret_key": "vault.aws/bedrock#secret", "region": "us-east-1"}})
	if rk, err := svc.ResolveKey(ctx, br); err != nil || rk.Bedrock.SecretKey.Value != "vault-aws-SECRET" || rk.Bedrock.AccessKey.Value != "AKIAPLAIN" {
		t.Fatalf("vault in key config: %v %+v", err, rk.Bedrock)
	}
	missing := mk("openai", map[string]any{"name": "missing", "value": "vault.nope/here"})
	if _, err := svc.ResolveKey(ctx, missing); !errors.Is(err, secret.ErrUnresolved) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("vault 404: %v", err)
	}
	keys, err := svc.ResolvedKeys(ctx, "openai")
	if len(keys) != 2 || err == nil {
		t.Fatalf("ResolvedKeys should return the 2 good keys and report the broken one: %d %v", len(keys), err)
	}
	for _, b := range [][]byte{g.Expect(200, "GET", "/api/keys", nil).Body, g.Expect(200, "GET", "/api/providers", nil).Body} {
		if bytes.Contains(b, []byte("vault-")) && bytes.Contains(b, []byte("SECRET")) {
			t.Fatalf("resolved vault secret leaked: %s", b)
		}
		if !bytes.Contains(b, []byte("vault.teams/ai#openai")) {
			t.Fatalf("vault ref not shown: %s", b)
		}
	}

	// A wrong token is a 403 from Vault.
	g2 := testgw.Start(t, testgw.Options{Env: []string{"GATEWAY_VAULT__ADDRESS=" + vault.URL, "GATEWAY_VAULT__TOKEN=wrong"}})
	g2.Expect(201, "POST", "/api/providers", map[string]any{"name": "openai"})
	var k providers.Key
	g2.Expect(201, "POST", "/api/providers/openai/keys", map[string]any{"name": "f", "value": "vault.teams/ai#openai"}).Decode(t, &k)
	sk, _ := g2.Server.Providers().Key("openai", k.ID)
	if _, err := g2.Server.Providers().ResolveKey(ctx, sk); !errors.Is(err, secret.ErrUnresolved) || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("vault 403: %v", err)
	}
}

func TestSetKeyStatus(t *testing.T) {
	g := testgw.Start(t, testgw.Options{})
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "groq"})
	var k providers.Key
	g.Expect(201, "POST", "/api/providers/groq/keys", map[string]any{"name": "g", "value": "gsk_x"}).Decode(t, &k)
	svc := g.Server.Providers()
	if err := svc.SetKeyStatus(context.Background(), "groq", k.ID, "list_models_failed", "401 from upstream"); err != nil {
		t.Fatal(err)
	}
	var got providers.Key
	g.Expect(200, "GET", "/api/providers/groq/keys/"+k.ID, nil).Decode(t, &got)
	if got.Status != "list_models_failed" || got.Description != "401 from upstream" {
		t.Fatalf("status: %+v", got)
	}
	// A PUT by an operator does not overwrite the status the gateway set.
	g.Expect(200, "PUT", "/api/providers/groq/keys/"+k.ID, map[string]any{"name": "g2", "status": "success"})
	if got, _ := svc.Key("groq", k.ID); got.Status != "list_models_failed" || got.Name != "g2" || got.Value.Value != "gsk_x" {
		t.Fatalf("after PUT: %+v", got)
	}
	if err := svc.SetKeyStatus(context.Background(), "groq", "missing", "success", ""); err == nil {
		t.Fatal("status of a missing key must fail")
	}
}

const reconcileConfig = `
providers:
  openai:
    network_config:
      max_retries: 2
    keys:
      - name: main
        value: sk-from-file-000000000000
        weight: 1
        models: [gpt-4o]
  anthropic:
    keys:
      - name: a1
        value: env.ANTHROPIC_TEST_KEY
`

func TestConfigReconciliationAcrossRestarts(t *testing.T) {
	g := testgw.Start(t, testgw.Options{ConfigYAML: reconcileConfig})
	svc := g.Server.Providers()
	p, ok := svc.Provider("openai")
	if !ok || p.NetworkConfig.MaxRetries != 2 || p.ConfigHash == "" || len(p.Keys) != 1 || p.Keys[0].ConfigHash == "" {
		t.Fatalf("synced provider: %+v", p)
	}
	keyID := p.Keys[0].ID
	if a := svc.Keys("anthropic"); len(a) != 1 || a[0].Value.Ref != "env.ANTHROPIC_TEST_KEY" {
		t.Fatalf("anthropic keys: %+v", a)
	}

	// Edit through the API, plus an API-only provider.
	g.Expect(200, "PUT", "/api/providers/openai/keys/"+keyID, map[string]any{"name": "main", "weight": 7, "models": []string{"gpt-4o", "o3"}})
	g.Expect(200, "PUT", "/api/providers/openai", map[string]any{"network_config": map[string]any{"max_retries": 4}})
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "mistral"})

	// Same file: the API edits survive.
	g = g.Restart("")
	svc = g.Server.Providers()
	p, _ = svc.Provider("openai")
	if p.NetworkConfig.MaxRetries != 4 || len(p.Keys) != 1 || p.Keys[0].ID != keyID || p.Keys[0].Weight != 7 || len(p.Keys[0].Models) != 2 {
		t.Fatalf("API edits lost on restart: %+v", p)
	}
	if _, ok := svc.Provider("mistral"); !ok {
		t.Fatal("API-created provider lost")
	}

	// Changed file entries win; the unchanged anthropic entry is kept; a new key is added.
	changed := strings.Replace(reconcileConfig, "weight: 1", "weight: 3", 1)
	changed = strings.Replace(changed, "max_retries: 2", "max_retries: 6", 1)
	changed = strings.Replace(changed, "  anthropic:", "      - name: second\n        value: sk-second-000000000000\n  anthropic:", 1)
	g = g.Restart(changed)
	svc = g.Server.Providers()
	p, _ = svc.Provider("openai")
	if p.NetworkConfig.MaxRetries != 6 || len(p.Keys) != 2 {
		t.Fatalf("file change not applied: %+v", p)
	}
	main, _ := svc.Key("openai", keyID)
	if main.Weight != 3 || len(main.Models) != 1 || main.Value.Value != "sk-from-file-000000000000" {
		t.Fatalf("changed key entry must overwrite (keeping its id): %+v", main)
	}
	if _, ok := svc.Provider("mistral"); !ok {
		t.Fatal("entries not in the file must be left untouched")
	}
}

func TestConfigInvalidEntriesFailStartNamingPath(t *testing.T) {
	cases := map[string]string{
		"providers.openai.keys[0].weight":             "providers:\n  openai:\n    keys:\n      - name: k\n        value: x\n        weight: -1\n",
		"providers.openai.keys[1].name":               "providers:\n  openai:\n    keys:\n      - name: k\n        value: x\n      - name: k\n        value: y\n",
		"providers.nosuch":                            "providers:\n  nosuch: {}\n",
		"providers.openai.network_config.max_retries": "providers:\n  openai:\n    network_config:\n      max_retries: 99\n",
		"providers.openai.keys[0].bedrock_key_config": "providers:\n  openai:\n    keys:\n      - name: k\n        value: x\n        bedrock_key_config: {region: us-east-1}\n",
		"providers.openai.keys[0].weight:":            "providers:\n  openai:\n    keys:\n      - name: k\n        value: x\n        weight: heavy\n",
		"providers.openai.keys[0].value":              "providers:\n  openai:\n    keys:\n      - name: k\n        value: {type: env, ref: vault.x}\n",
		"providers.openai.keys[0].id":                 "providers:\n  openai:\n    keys:\n      - name: k\n        value: x\n        id: mine\n",
	}
	for want, yaml := range cases {
		_, err := testgw.TryStart(t, testgw.Options{ConfigYAML: yaml})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("config %q: error %v, want it to name %s", yaml, err, want)
		}
	}
}

// filesContaining lists the files under dir whose bytes contain needle.
func filesContaining(t *testing.T, dir, needle string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(needle)) {
			hits = append(hits, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

func TestEncryptionAtRest(t *testing.T) {
	const plainSecret = "sk-at-rest-CANARY-7f3a9c1e5b"
	const encKey = "GATEWAY_ENCRYPTION_KEY=a-long-passphrase-for-tests-only"

	// Control: without a key the write-ahead log holds the secret in clear,
	// which proves the grep below can see plaintext where it exists. (Badger
	// compresses tables on close, so only the live log is a fair witness.)
	ctrl := t.TempDir()
	g := testgw.Start(t, testgw.Options{Dir: ctrl})
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "openai"})
	g.Expect(201, "POST", "/api/providers/openai/keys", map[string]any{"name": "k", "value": plainSecret})
	if len(filesContaining(t, ctrl, plainSecret)) == 0 {
		t.Fatal("control: the secret should be visible in an unencrypted store's log")
	}
	g.Close()

	dir := t.TempDir()
	g = testgw.Start(t, testgw.Options{Dir: dir, Env: []string{encKey}})
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "openai"})
	g.Expect(201, "POST", "/api/providers/openai/keys", map[string]any{"name": "k", "value": plainSecret})
	if hits := filesContaining(t, dir, plainSecret); len(hits) > 0 {
		t.Fatalf("secret in clear while running: %v", hits)
	}
	g.Close()
	if hits := filesContaining(t, dir, plainSecret); len(hits) > 0 {
		t.Fatalf("secret in clear after close: %v", hits)
	}
	// And it still reads back after a restart with the key.
	g2 := testgw.Start(t, testgw.Options{Dir: dir, Env: []string{encKey}})
	if ks := g2.Server.Providers().Keys("openai"); len(ks) != 1 || ks[0].Value.Value != plainSecret {
		t.Fatalf("after restart: %+v", ks)
	}
}

func TestRoutesDeclarePermissions(t *testing.T) {
	g := testgw.Start(t, testgw.Options{})
	want := map[string]string{
		"GET /api/providers": "Providers:View", "POST /api/providers": "Providers:Create",
		"PUT /api/providers/:provider": "Providers:Update", "DELETE /api/providers/:provider": "Providers:Delete",
		"GET /api/providers/:provider/keys": "Keys:View", "POST /api/providers/:provider/keys": "Keys:Create",
		"PUT /api/providers/:provider/keys/:key_id": "Keys:Update", "DELETE /api/providers/:provider/keys/:key_id": "Keys:Delete",
		"GET /api/keys": "Keys:View",
	}
	got := map[string]string{}
	for _, r := range g.Server.Routes() {
		got[r.Method+" "+r.Path] = r.Permission
	}
	for route, perm := range want {
		if got[route] != perm {
			t.Errorf("%s: permission %q, want %q", route, got[route], perm)
		}
	}
	// Without the setup token the setup lock answers 401.
	req := httptest.NewRequest("GET", "/api/keys", nil)
	resp, err := g.Server.App().Test(req, -1)
	if err != nil || resp.StatusCode != 401 {
		t.Fatalf("no credentials: %v %v", err, resp.StatusCode)
	}
}
