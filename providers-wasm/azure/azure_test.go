package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
)

func TestManifest(t *testing.T) {
	m := pluginsdk.FullManifest(New())
	if m.Name != "adapter-azure" || m.Wire != "azure" || m.HasCapability(pluginsdk.CapabilityPassthrough) ||
		!m.HasCapability("request:responses") || !m.Implements(pluginsdk.HookAdaptStream) {
		t.Fatalf("%+v", m)
	}
}

func TestAdaptRequestGolden(t *testing.T) {
	runGolden(t, "adapt_request", func(t *testing.T, in []byte) (any, error) {
		out, err := New().AdaptRequest(in)
		if err != nil {
			return nil, err
		}
		var spec pluginsdk.UpstreamRequest
		if err := json.Unmarshal(out.Body, &spec); err != nil || spec.URL == "" || spec.Path != "" {
			t.Fatalf("spec must carry a full URL: %v\n%s", err, out.Body)
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

// Without endpoint and base URL the error names the setting to fix.
func TestMissingEndpoint(t *testing.T) {
	_, err := New().AdaptRequest([]byte(`{"request_type":"chat.completion","provider":"azure","model":"gpt4o","key_config":{"api_version":"2024-10-21"},"body":{}}`))
	pe, ok := err.(*pluginsdk.Error)
	if !ok || pe.Code != 400 || !strings.Contains(pe.Message, "azure_key_config.endpoint") {
		t.Fatalf("%v", err)
	}
	_, err = New().AdaptRequest([]byte(`{"request_type":"chat.completion","model":"d","key_config":{"endpoint":"not a url"},"body":{}}`))
	if pe, ok := err.(*pluginsdk.Error); !ok || pe.Code != 400 {
		t.Fatalf("%v", err)
	}
}
