package main

import (
	"encoding/json"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
)

func TestManifest(t *testing.T) {
	m := pluginsdk.FullManifest(New())
	if m.Name != "adapter-openai" || m.Kind != pluginsdk.KindProvider || m.Wire != "openai" || !m.HasCapability("passthrough") ||
		!m.HasCapability("request:list_models") {
		t.Fatalf("%+v", m)
	}
	for _, h := range []pluginsdk.Hook{pluginsdk.HookAdaptRequest, pluginsdk.HookAdaptResponse, pluginsdk.HookAdaptStream,
		pluginsdk.HookIngressRequest, pluginsdk.HookEgressResponse, pluginsdk.HookEgressStream} {
		if !m.Implements(h) {
			t.Errorf("manifest lacks %s", h)
		}
	}
}

func TestAdaptRequestGolden(t *testing.T) {
	runGolden(t, "adapt_request", func(t *testing.T, in []byte) (any, error) {
		out, err := New().AdaptRequest(in)
		if err != nil {
			return nil, err
		}
		var spec pluginsdk.UpstreamRequest // the host decodes it this way
		if err := json.Unmarshal(out.Body, &spec); err != nil {
			t.Fatalf("spec: %v\n%s", err, out.Body)
		}
		return json.RawMessage(out.Body), nil
	})
}

func TestAdaptResponseGolden(t *testing.T) {
	runGolden(t, "adapt_response", func(t *testing.T, in []byte) (any, error) {
		out, err := New().AdaptResponse(in)
		if err != nil {
			return nil, err
		}
		return json.RawMessage(out.Body), nil
	})
}

func TestAdaptStreamGolden(t *testing.T) {
	runGolden(t, "adapt_stream", func(t *testing.T, in []byte) (any, error) {
		return runStream(t, in, New().AdaptStream)
	})
}

func TestDropInIdentity(t *testing.T) {
	a := New()
	for _, f := range []func() (pluginsdk.Output, error){
		func() (pluginsdk.Output, error) { return a.IngressRequest([]byte(`{"model":"x"}`)) },
		func() (pluginsdk.Output, error) { return a.EgressResponse([]byte(`{"id":"x"}`)) },
		func() (pluginsdk.Output, error) { return a.EgressStream(pluginsdk.StreamInput{Batch: []byte(`[{}]`)}) },
	} {
		if out, err := f(); err != nil || out.Status != pluginsdk.StatusPassThrough {
			t.Fatalf("%+v %v", out, err)
		}
	}
}

// The spec of a request with an escaped model keeps the body valid JSON
// and reused buffers never leak one call's bytes into the next.
func TestAdaptRequestBufferReuse(t *testing.T) {
	a := New()
	long := `{"request_type":"chat.completion","provider":"openai","model":"a-very-long-model-name-with-\"quote\"","body":{"model":"x","messages":[]}}`
	short := `{"request_type":"embedding","provider":"openai","model":"m","body":{"input":"hi"}}`
	out1, _ := a.AdaptRequest([]byte(long))
	first := string(out1.Body)
	out2, _ := a.AdaptRequest([]byte(short))
	if !json.Valid([]byte(first)) || string(out2.Body) != `{"method":"POST","path":"/embeddings","body":{"model":"m","input":"hi"}}` {
		t.Fatalf("%s\n%s", first, out2.Body)
	}
}
