package registry_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/secret"
)

// A plugin's secrets never come back from /api/plugins: fields its config
// schema marks writeOnly and members named like secrets are masked in
// every answer, the plugin itself is configured with the real values, and
// a config read and sent back keeps them.
func TestPluginConfigSecretsAreMasked(t *testing.T) {
	g := start(t, pluginsDir(t), "")
	const (
		signing = "sign-0123456789abcdefXYZ"  // writeOnly in the schema
		auth    = "short-auth"                // writeOnly, nested
		apiKey  = "sk-0123456789abcdefghijkl" // no schema entry: named like a secret
	)
	cfg := map[string]any{
		"tag": "a", "signing": signing, "max_tokens": 5,
		"upstream": map[string]any{"auth": auth, "url": "https://moderation.example/v1"},
		"api_key":  apiKey, "headers": map[string]any{"X-Anything": "hv-0123456789abcdefghij"},
	}
	secrets := []string{signing, auth, apiKey, "hv-0123456789abcdefghij"}
	noSecrets := func(where string, body []byte) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(string(body), s) {
				t.Fatalf("%s shows secret %q: %s", where, s, body)
			}
		}
	}
	wantMasked := func(where string, raw json.RawMessage) {
		t.Helper()
		noSecrets(where, raw)
		var c map[string]any
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatalf("%s config: %v", where, err)
		}
		up, _ := c["upstream"].(map[string]any)
		if c["signing"] != secret.Mask(signing) || up["auth"] != secret.Mask(auth) || c["api_key"] != secret.Mask(apiKey) {
			t.Fatalf("%s: secrets not masked as documented: %s", where, raw)
		}
		// What is not secret stays readable.
		if c["tag"] == nil || c["max_tokens"] != float64(5) || up["url"] != "https://moderation.example/v1" {
			t.Fatalf("%s: non-secret settings hidden: %s", where, raw)
		}
	}

	res := g.Expect(201, "POST", "/api/plugins", map[string]any{"name": "f", "source": mod.faulty, "config": cfg})
	noSecrets("install answer", res.Body)
	wantMasked("GET", get(t, g, "f").Config)
	listBody := g.Expect(200, "GET", "/api/plugins", nil).Body
	noSecrets("list", listBody)
	if got := mustCall(t, g, "f", "signing"); got != signing {
		t.Fatalf("plugin configured with %q, want the real secret", got)
	}

	// Read, edit one setting, send everything back: the masks do not
	// overwrite the secrets.
	shown := get(t, g, "f").Config
	var edited map[string]any
	_ = json.Unmarshal(shown, &edited)
	edited["tag"] = "b"
	var v view
	g.Expect(200, "PUT", "/api/plugins/f", map[string]any{"config": edited}).Decode(t, &v)
	wantMasked("full update answer", v.Config)
	if got := mustCall(t, g, "f", "signing"); got != signing {
		t.Fatalf("after a round trip of the masked config the plugin has %q", got)
	}
	if out := mustCall(t, g, "f", "x"); out != "b:x" {
		t.Fatalf("edit not applied: %q", out)
	}

	// The merge-patch route: a mask sent back keeps, a new value replaces.
	g.Expect(200, "PUT", "/api/plugins/f/config", map[string]any{"signing": secret.Mask(signing), "tag": "c"}).Decode(t, &v)
	wantMasked("config patch answer", v.Config)
	if got := mustCall(t, g, "f", "signing"); got != signing {
		t.Fatalf("patch with the mask changed the secret to %q", got)
	}
	const rotated = "rotated-0123456789abcdef"
	g.Expect(200, "PUT", "/api/plugins/f/config", map[string]any{"signing": rotated}).Decode(t, &v)
	if strings.Contains(string(v.Config), rotated) {
		t.Fatalf("rotated secret shown: %s", v.Config)
	}
	if got := mustCall(t, g, "f", "signing"); got != rotated {
		t.Fatalf("rotation not applied: plugin has %q", got)
	}

	// A viewer sees the same masked config.
	g.EnableAuth()
	viewer := g.APIKey("Plugins:View")
	res = g.Do("GET", "/api/plugins/f", nil, viewer)
	if res.Status != 200 {
		t.Fatalf("viewer GET: %d %s", res.Status, res.Body)
	}
	noSecrets("viewer GET", res.Body)
}
