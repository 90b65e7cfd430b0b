package inference_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/wasmgate/gateway/host/inference"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// openAIWire is a Go adapter for the OpenAI wire. With passthrough set it
// lets the host send bytes itself; without, every request goes through the
// adapter hooks, which exercises the translated path of the pipeline.
type openAIWire struct {
	passthrough bool
	onlyChat    bool // makes the host convert Responses and Completions
	calls       map[string]int
}

func (a *openAIWire) Name() string      { return "test-openai" }
func (a *openAIWire) Passthrough() bool { return a.passthrough }
func (a *openAIWire) Supports(t string) bool {
	return !a.onlyChat || t == inference.TypeChat
}

func (a *openAIWire) AdaptRequest(_ context.Context, in *inference.AdaptRequestInput) (*inference.UpstreamRequest, error) {
	a.calls["adapt_request"]++
	body, _ := jsonx.SetStringField(in.Body, "model", in.Model)
	path := map[string]string{inference.TypeChat: "/chat/completions", inference.TypeEmbedding: "/embeddings",
		inference.TypeCompletion: "/completions", inference.TypeResponses: "/responses"}[in.RequestType]
	return &inference.UpstreamRequest{Method: http.MethodPost, Path: path, Body: body, Stream: in.Stream}, nil
}

func (a *openAIWire) AdaptResponse(_ context.Context, in *inference.AdaptResponseInput) ([]byte, error) {
	a.calls["adapt_response"]++
	return in.Body, nil
}

func (a *openAIWire) AdaptStream(_ context.Context, state []byte, events []inference.UpstreamEvent, end bool) ([]json.RawMessage, []byte, error) {
	a.calls["adapt_stream"]++
	var out []json.RawMessage
	for _, ev := range events {
		if strings.HasPrefix(string(ev.Data), `"`) {
			continue // [DONE]
		}
		out = append(out, ev.Data)
	}
	return out, state, nil
}

func source(a inference.Adapter) inference.AdapterSource {
	return inference.AdapterFunc(func(family string) (inference.Adapter, bool) {
		if family == "openai" {
			return a, true
		}
		return nil, false
	})
}
