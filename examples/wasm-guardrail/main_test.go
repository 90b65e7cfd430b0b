package main

import (
	"context"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// Runs the module under the gateway's real wasm runtime.
func TestBlocklist(t *testing.T) {
	path := plugintest.BuildWasm(t, ".")
	p := plugintest.LoadWasm(t, path, plugintest.Options{Name: "blocklist", Config: map[string]any{"keywords": []string{"Project Falcon"}}})
	ctx := context.Background()
	_, err := p.PreRequest(ctx, []byte(`{"messages":[{"role":"user","content":"tell me about project falcon"}]}`))
	if err == nil || !strings.Contains(err.Error(), "project falcon") {
		t.Fatalf("want rejection, got %v", err)
	}
	if _, err := p.PreRequest(ctx, []byte(`{"messages":[{"role":"user","content":"hello"}]}`)); err != nil {
		t.Fatal(err)
	}
}
