package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// The module under the real host runtime answers every hook exactly as the
// Go code does natively: same manifest, same golden outputs, same errors.
func TestUnderWasm(t *testing.T) {
	path := plugintest.BuildWasm(t, ".")
	p := plugintest.LoadWasm(t, path, plugintest.Options{Name: "adapter-bedrock", Trusted: true})
	ctx := context.Background()
	native := New()

	m := p.Manifest()
	if want := pluginsdk.FullManifest(native); m.Name != want.Name || m.Wire != "bedrock" || m.Kind != pluginsdk.KindProvider ||
		len(m.Hooks) != len(want.Hooks) || len(m.Capabilities) != len(want.Capabilities) {
		t.Fatalf("manifest %+v, want %+v", m, want)
	}

	for _, name := range cases(t, "requests") {
		in := readJSON(t, "requests/"+name+".json")
		got, err := p.AdaptRequest(ctx, in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, _ := native.AdaptRequest(in)
		if !bytes.Equal(got.Body, want.Body) {
			t.Errorf("adapt_request %s:\nwasm   %s\nnative %s", name, got.Body, want.Body)
		}
	}
	for _, name := range cases(t, "responses") {
		in := readJSON(t, "responses/"+name+".json")
		got, err := p.AdaptResponse(ctx, in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, _ := native.AdaptResponse(in)
		if !bytes.Equal(normalize(t, got.Body), normalize(t, want.Body)) {
			t.Errorf("adapt_response %s:\nwasm   %s\nnative %s", name, got.Body, want.Body)
		}
	}

	// A stream, one event per call, carrying the state through the host.
	var evs []json.RawMessage
	if err := json.Unmarshal(readJSON(t, "stream/tool_use.events.json"), &evs); err != nil {
		t.Fatal(err)
	}
	var state []byte
	var chunks []json.RawMessage
	for i, ev := range evs {
		out, err := p.AdaptStream(ctx, pluginsdk.StreamInput{State: state, Batch: []byte("[" + string(ev) + "]"), End: i == len(evs)-1})
		if err != nil {
			t.Fatal(err)
		}
		state = out.State
		if out.Status == pluginsdk.StatusOK {
			var cs []json.RawMessage
			if err := json.Unmarshal(out.Body, &cs); err != nil {
				t.Fatal(err)
			}
			chunks = append(chunks, cs...)
		}
	}
	checkToolStream(t, chunks)

	// Errors keep their status across the boundary: a rejection with the
	// code, which the host turns into retry decisions.
	_, err := p.AdaptStream(ctx, pluginsdk.StreamInput{Batch: []byte(`[{"event":"throttlingException","exception":true,"data":{"message":"slow down"}}]`)})
	var pe *plugins.Error
	if !errors.As(err, &pe) || pe.Kind != plugins.KindRejected || pe.HTTPStatus() != 429 {
		t.Fatalf("throttling: %v", err)
	}
	_, err = p.AdaptRequest(ctx, []byte(`{"request_type":"chat.completion","model":"m","body":{"messages":[{"role":"user","content":"x"}]}}`))
	if !errors.As(err, &pe) || pe.HTTPStatus() != 400 {
		t.Fatalf("missing region: %v", err)
	}
	// Garbage from upstream is an error, not a trap that kills the instance.
	if _, err = p.AdaptResponse(ctx, []byte(`{"body":{"output":`)); !errors.As(err, &pe) || pe.Kind != plugins.KindRejected {
		t.Fatalf("malformed: %v", err)
	}
}
