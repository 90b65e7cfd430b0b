package secret_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/secret"
)

func TestInputForms(t *testing.T) {
	cases := map[string]secret.Value{
		`"sk-plain"`:                             {Value: "sk-plain", Type: secret.PlainText},
		`"env.OPENAI_KEY"`:                       {Ref: "env.OPENAI_KEY", Type: secret.Env},
		`"vault.kv/openai#k"`:                    {Ref: "vault.kv/openai#k", Type: secret.Vault},
		`{"value":"x","type":"plain_text"}`:      {Value: "x", Type: secret.PlainText},
		`{"ref":"env.A","type":"env"}`:           {Ref: "env.A", Type: secret.Env},
		`{"value":"env.A"}`:                      {Ref: "env.A", Type: secret.Env},
		`{"value":"","ref":"vault.p","type":""}`: {Ref: "vault.p", Type: secret.Vault},
	}
	for in, want := range cases {
		var v secret.Value
		if err := json.Unmarshal([]byte(in), &v); err != nil || v != want {
			t.Errorf("%s: %+v %v, want %+v", in, v, err, want)
		}
	}
	for _, bad := range []string{`3`, `"env."`, `"vault./abs"`, `{"type":"env","ref":"vault.x"}`, `{"type":"magic"}`, `{"value":"x","extra":1}`} {
		var v secret.Value
		if err := json.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("%s accepted as %+v", bad, v)
		}
	}
}

func TestRedactionAndRoundTrip(t *testing.T) {
	v := secret.MustPlain("sk-live-1234567890abcdefXYZ")
	r := v.Redacted()
	if strings.Contains(r.Value, "1234567890") || r.Type != secret.PlainText {
		t.Fatalf("redacted %+v", r)
	}
	if got := secret.KeepIfMasked(r, v); got != v {
		t.Fatalf("masked round trip lost the secret: %+v", got)
	}
	if got := secret.KeepIfMasked(secret.MustPlain("new"), v); got.Value != "new" {
		t.Fatalf("new value ignored: %+v", got)
	}
	ref, _ := secret.Parse("env.X")
	if rr := ref.Redacted(); rr.Ref != "env.X" || rr.Value != "" {
		t.Fatalf("ref redaction %+v", rr)
	}
	if secret.Mask("short") != "********" {
		t.Fatal("short secrets must be fully masked")
	}
}

func TestEnvResolution(t *testing.T) {
	r := &secret.Resolver{LookupEnv: func(k string) (string, bool) { return map[string]string{"K": "v"}[k], k == "K" }}
	v, _ := secret.Parse("env.K")
	if s, err := r.Resolve(context.Background(), v); err != nil || s != "v" {
		t.Fatalf("%q %v", s, err)
	}
	missing, _ := secret.Parse("env.MISSING")
	if _, err := r.Resolve(context.Background(), missing); err == nil || !strings.Contains(err.Error(), "MISSING") {
		t.Fatalf("missing env: %v", err)
	}
	vault, _ := secret.Parse("vault.a/b")
	if _, err := r.Resolve(context.Background(), vault); err == nil || !strings.Contains(err.Error(), "vault.address") {
		t.Fatalf("vault without client: %v", err)
	}
}
