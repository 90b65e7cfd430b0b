package main

import (
	"context"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// The module under the real host runtime behaves as the Go code does.
func TestUnderWasm(t *testing.T) {
	path := plugintest.BuildWasm(t, ".")
	p := plugintest.LoadWasm(t, path, plugintest.Options{Name: "pii", Trusted: true})
	ctx := context.Background()
	out, err := p.PreRequest(ctx, []byte(`{"messages":[{"role":"user","content":"mail x.y@z.org"}]}`))
	if err != nil || string(out.Body) != `{"messages":[{"role":"user","content":"mail [REDACTED_EMAIL]"}]}` {
		t.Fatalf("%s %v", out.Body, err)
	}
	var state []byte
	var got strings.Builder
	for _, piece := range []string{"call 555 01", "0 1234 now"} {
		out, err := p.StreamBatch(ctx, pluginsdk.StreamInput{State: state, Batch: []byte("[" + chunk(piece) + "]")})
		if err != nil {
			t.Fatal(err)
		}
		state = out.State
		got.Write(out.Body)
	}
	out, err = p.StreamBatch(ctx, pluginsdk.StreamInput{State: state, Batch: []byte("[]"), End: true})
	if err != nil {
		t.Fatal(err)
	}
	got.Write(out.Body)
	if s := got.String(); !strings.Contains(s, "[REDACTED_PHONE]") || strings.Contains(s, "1234") {
		t.Fatalf("split phone leaked: %s", s)
	}

	block := plugintest.LoadWasm(t, path, plugintest.Options{Name: "pii-block", Config: map[string]any{"action": "block"}})
	_, err = block.PreRequest(ctx, []byte(`{"messages":[{"role":"user","content":"card 4111111111111111"}]}`))
	if pe, ok := err.(*plugins.Error); !ok || pe.Kind != plugins.KindRejected || pe.HTTPStatus() != 400 {
		t.Fatalf("block: %v", err)
	}
}
