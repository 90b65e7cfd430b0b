package inference

import (
	"context"
	"encoding/json"

	"github.com/wasmgate/gateway/pluginsdk"
)

// Request types, as named in logs, metrics and extra_fields.request_type.
const (
	TypeChat        = pluginsdk.RequestChat
	TypeCompletion  = pluginsdk.RequestCompletion
	TypeResponses   = pluginsdk.RequestResponses
	TypeEmbedding   = pluginsdk.RequestEmbedding
	TypeCountTokens = pluginsdk.RequestCountTokens
	TypeListModels  = pluginsdk.RequestListModels
	TypeRerank      = pluginsdk.RequestRerank
)

// The adapter contract types live in pluginsdk, shared with plugin authors.
type (
	// AdaptRequestInput is the input of adapt_request.
	AdaptRequestInput = pluginsdk.AdaptRequestInput
	// AdaptResponseInput is the input of adapt_response.
	AdaptResponseInput = pluginsdk.AdaptResponseInput
	// UpstreamEvent is one framed upstream stream event.
	UpstreamEvent = pluginsdk.UpstreamEvent
	// UpstreamRequest is the spec adapt_request returns.
	UpstreamRequest = pluginsdk.UpstreamRequest
)

// Adapter is a provider wire family's translator, whatever runs it.
type Adapter interface {
	// Name identifies the adapter in errors and logs.
	Name() string
	// Passthrough reports that the upstream wire is the unified (OpenAI)
	// wire, so OpenAI-shaped requests may skip the adapter entirely.
	Passthrough() bool
	// Supports reports whether the adapter translates a request type.
	Supports(requestType string) bool
	AdaptRequest(ctx context.Context, in *AdaptRequestInput) (*UpstreamRequest, error)
	AdaptResponse(ctx context.Context, in *AdaptResponseInput) ([]byte, error)
	// AdaptStream maps a batch of upstream events to unified chunks,
	// carrying the per-stream state between batches.
	AdaptStream(ctx context.Context, state []byte, events []UpstreamEvent, end bool) (chunks []json.RawMessage, newState []byte, err error)
}

// AdapterSource finds the adapter for a provider wire family.
type AdapterSource interface {
	Adapter(family string) (Adapter, bool)
}

// AdapterFunc adapts a function to AdapterSource.
type AdapterFunc func(family string) (Adapter, bool)

// Adapter implements AdapterSource.
func (f AdapterFunc) Adapter(family string) (Adapter, bool) { return f(family) }

// ModuleFamily maps a provider wire family to the adapter module serving
// it: Vertex speaks the Gemini wire with another URL and auth, so the gemini
// adapter serves both.
func ModuleFamily(family string) string {
	if family == "vertex" {
		return "gemini"
	}
	return family
}
