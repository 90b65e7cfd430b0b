package pluginsdk

// This file is the provider-adapter half of the contract: what the host
// passes to adapt_request, adapt_response and adapt_stream, and what it
// expects back. Adapters are pure translators: the host does all HTTP,
// holds every secret and signs requests; an adapter only sees the unified
// request, the routing facts and the non-secret part of the key config.

// Request types the host names in RequestType.
const (
	RequestChat        = "chat.completion"
	RequestCompletion  = "text_completion"
	RequestResponses   = "responses"
	RequestEmbedding   = "embedding"
	RequestCountTokens = "count_tokens"
	RequestListModels  = "list_models"
	RequestRerank      = "rerank"
)

// Capabilities of provider adapters (in Manifest.Capabilities), besides
// CapabilityPassthrough. A provider adapter lists the request types it
// translates as "request:<type>", e.g. "request:chat.completion".
const CapabilityRequestPrefix = "request:"

// AdaptRequestInput is the input of adapt_request (JSON).
type AdaptRequestInput struct {
	// RequestType is one of the Request* constants.
	RequestType string `json:"request_type"`
	// Provider is the provider id ("vertex", "groq", ...): one adapter may
	// serve several providers of its wire family.
	Provider string `json:"provider"`
	// Model is the upstream model id, after the key's aliases were applied.
	Model string `json:"model"`
	// Stream tells whether the client asked for a stream.
	Stream bool `json:"stream"`
	// BaseURL is where the host will send a relative Path (provider or key
	// setting). An adapter that needs a host name of its own (Bedrock's
	// regional endpoint) may return a full URL instead.
	BaseURL string `json:"base_url,omitempty"`
	// KeyConfig is the non-secret part of the key's provider config, e.g.
	// {"region": "us-east-1"} for bedrock, {"project_id", "region"} for
	// vertex, {"endpoint", "api_version"} for azure.
	KeyConfig RawJSON `json:"key_config,omitempty"`
	// Body is the unified (OpenAI-shaped) request body.
	Body RawJSON `json:"body"`
}

// AdaptResponseInput is the input of adapt_response. The host calls it only
// for 2xx answers; it reports upstream errors itself.
type AdaptResponseInput struct {
	RequestType string            `json:"request_type"`
	Provider    string            `json:"provider"`
	Model       string            `json:"model"`
	Status      int               `json:"status"`
	Headers     map[string]string `json:"headers,omitempty"`
	// Body is the upstream body; a non-JSON body arrives as a JSON string.
	Body RawJSON `json:"body"`
	// Context is the UpstreamRequest.Context adapt_request returned.
	Context string `json:"context,omitempty"`
	// EncodingFormat is the unified embeddings request's encoding_format
	// ("base64", or empty for floats). Upstreams answer floats; the adapter
	// packs them when the client asked for base64, which the official
	// OpenAI SDKs do by default.
	EncodingFormat string `json:"encoding_format,omitempty"`
}

// UpstreamEvent is one element of the JSON array an adapt_stream batch
// carries. The host frames the stream: for SSE, Event is the event name and
// Data the data field (JSON as is, anything else as a JSON string, e.g.
// "[DONE]"); for AWS event-stream, Event is :event-type, or the exception
// type with Exception set.
type UpstreamEvent struct {
	Event     string  `json:"event,omitempty"`
	Data      RawJSON `json:"data"`
	Exception bool    `json:"exception,omitempty"`
}

// adapt_stream returns, in Output.Body, a JSON array of unified chunks
// (chat.completion.chunk objects for chat) and its state in Output.State.
// An upstream error event becomes an *Error whose Code is the HTTP status
// it stands for (429 throttling, 529 overloaded, 500 otherwise): before any
// content reached the client, the host then retries or falls back.
