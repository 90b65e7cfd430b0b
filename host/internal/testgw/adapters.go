package testgw

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/wasmgate/gateway/host/inference"
	"github.com/wasmgate/gateway/host/server"
)

// PassthroughOpenAI serves the OpenAI wire family with an adapter that
// declares passthrough, as the bundled wasm adapter's manifest does: the
// host sends the bytes itself and never calls the adapter per request, so
// tests of the host need no wasm build.
func PassthroughOpenAI() server.Option {
	return server.WithAdapters(inference.AdapterFunc(func(family string) (inference.Adapter, bool) {
		return passthrough{}, family == "openai"
	}))
}

type passthrough struct{}

func (passthrough) Name() string         { return "test-openai" }
func (passthrough) Passthrough() bool    { return true }
func (passthrough) Supports(string) bool { return true }
func (passthrough) AdaptRequest(context.Context, *inference.AdaptRequestInput) (*inference.UpstreamRequest, error) {
	return nil, errors.New("passthrough adapter: not called")
}
func (passthrough) AdaptResponse(context.Context, *inference.AdaptResponseInput) ([]byte, error) {
	return nil, errors.New("passthrough adapter: not called")
}
func (passthrough) AdaptStream(context.Context, []byte, []inference.UpstreamEvent, bool) ([]json.RawMessage, []byte, error) {
	return nil, nil, errors.New("passthrough adapter: not called")
}
