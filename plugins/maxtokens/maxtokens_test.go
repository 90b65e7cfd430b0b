package main

import (
	"context"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// The tests run the real module under the host runtime, so the wasm glue,
// config and header encoding are covered, not just the Go logic.
func TestClampUnderWasm(t *testing.T) {
	path := plugintest.BuildWasm(t, ".")
	p := plugintest.LoadWasm(t, path, plugintest.Options{Name: "maxtokens", Config: map[string]any{"ceiling": 1000, "inject_if_missing": true}})
	ctx := context.Background()
	cases := []struct{ in, want, header string }{
		{`{"model":"m","max_tokens":5000,"messages":[]}`, `{"model":"m","max_tokens":1000,"messages":[]}`, "max_tokens=5000->1000"},
		{`{"model":"m","max_completion_tokens":4001}`, `{"model":"m","max_completion_tokens":1000}`, "max_completion_tokens=4001->1000"},
		{`{"model":"m"}`, `{"max_tokens":1000,"model":"m"}`, "max_tokens=unset->1000"},
	}
	for _, c := range cases {
		out, err := p.PreRequest(ctx, []byte(c.in))
		if err != nil || string(out.Body) != c.want || out.Headers["x-wasmgate-max-tokens"] != c.header {
			t.Errorf("%s: got %s %v %v", c.in, out.Body, out.Headers, err)
		}
	}
	out, err := p.PreRequest(ctx, []byte(`{"model":"m","max_tokens":10}`))
	if err != nil || out.Status != pluginsdk.StatusPassThrough {
		t.Fatalf("under ceiling: %+v %v", out, err)
	}
}

func TestConfigRequired(t *testing.T) {
	if err := New().Configure(nil); err == nil {
		t.Fatal("missing ceiling accepted")
	}
}
