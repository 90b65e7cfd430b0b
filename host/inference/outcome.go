package inference

import (
	"time"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// Usage is the token accounting of one request. It follows OpenAI's
// convention, which every bundled adapter's unified usage keeps: the detail
// counts are parts of the totals, not additions to them. PromptTokens
// includes CachedReadTokens, CachedWriteTokens, AudioInputTokens and
// ImageTokens; CompletionTokens includes ReasoningTokens and
// AudioOutputTokens. Pricing subtracts the parts to price the plain text.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	TotalTokens      int64
	CachedReadTokens int64
	ReasoningTokens  int64
	// CachedWriteTokens are prompt tokens written to a provider's prompt
	// cache (Anthropic cache_creation_input_tokens, Bedrock
	// cacheWriteInputTokens), billed above the input rate.
	CachedWriteTokens int64
	// AudioInputTokens and AudioOutputTokens are the audio parts of the
	// prompt and the completion (prompt_tokens_details.audio_tokens,
	// completion_tokens_details.audio_tokens).
	AudioInputTokens  int64
	AudioOutputTokens int64
	// ImageTokens are the image part of the prompt
	// (prompt_tokens_details.image_tokens).
	ImageTokens int64
	// WebSearchRequests counts provider-side web searches, billed per
	// request (tool_usage.web_search.num_requests, Anthropic's
	// server_tool_use.web_search_requests, num_search_queries).
	WebSearchRequests int64
}

// parseUsage reads an OpenAI-shaped usage object by scanning.
func parseUsage(u []byte) (Usage, bool) {
	var us Usage
	var ok bool
	if us.PromptTokens, ok = jsonx.IntField(u, "prompt_tokens"); !ok {
		// Embeddings and some providers report input_tokens.
		if us.PromptTokens, ok = jsonx.IntField(u, "input_tokens"); !ok {
			return us, false
		}
	}
	us.CompletionTokens, _ = jsonx.IntField(u, "completion_tokens")
	if us.CompletionTokens == 0 {
		us.CompletionTokens, _ = jsonx.IntField(u, "output_tokens")
	}
	us.TotalTokens, _ = jsonx.IntField(u, "total_tokens")
	if us.TotalTokens == 0 {
		us.TotalTokens = us.PromptTokens + us.CompletionTokens
	}
	s, e, found := jsonx.Field(u, "prompt_tokens_details")
	if !found {
		s, e, found = jsonx.Field(u, "input_tokens_details")
	}
	if found {
		d := u[s:e]
		us.CachedReadTokens = intOr(d, "cached_tokens", "cached_read_tokens")
		us.CachedWriteTokens = intOr(d, "cache_write_tokens", "cached_write_tokens")
		us.AudioInputTokens, _ = jsonx.IntField(d, "audio_tokens")
		us.ImageTokens, _ = jsonx.IntField(d, "image_tokens")
	}
	if us.CachedWriteTokens == 0 {
		// Anthropic's own usage shape, when a response passes through raw.
		us.CachedWriteTokens, _ = jsonx.IntField(u, "cache_creation_input_tokens")
	}
	s, e, found = jsonx.Field(u, "completion_tokens_details")
	if !found {
		s, e, found = jsonx.Field(u, "output_tokens_details")
	}
	if found {
		d := u[s:e]
		us.ReasoningTokens, _ = jsonx.IntField(d, "reasoning_tokens")
		us.AudioOutputTokens, _ = jsonx.IntField(d, "audio_tokens")
		us.WebSearchRequests, _ = jsonx.IntField(d, "num_search_queries")
	}
	if s, e, found := jsonx.Field(u, "tool_usage"); found {
		if ws, we, ok := jsonx.Field(u[s:e], "web_search"); ok {
			us.WebSearchRequests, _ = jsonx.IntField(u[s:e][ws:we], "num_requests")
		}
	} else if s, e, found := jsonx.Field(u, "server_tool_use"); found {
		us.WebSearchRequests, _ = jsonx.IntField(u[s:e], "web_search_requests")
	}
	return us, true
}

// intOr reads the first of two integer fields present in obj.
func intOr(obj []byte, a, b string) int64 {
	if n, ok := jsonx.IntField(obj, a); ok {
		return n
	}
	n, _ := jsonx.IntField(obj, b)
	return n
}

// usageOf finds the usage object of a unified response or chunk.
func usageOf(doc []byte) (Usage, bool) {
	s, e, found := jsonx.Field(doc, "usage")
	if !found || doc[s] != '{' {
		// Responses API stream events nest it: {"response": {"usage": ...}}.
		if rs, re, ok := jsonx.Field(doc, "response"); ok && doc[rs] == '{' {
			return usageOf(doc[rs:re])
		}
		return Usage{}, false
	}
	return parseUsage(doc[s:e])
}

// Outcome is everything known about a finished request; it feeds the
// request log, metrics and governance settlement off the hot path.
type Outcome struct {
	ID    string
	Start time.Time
	Route string
	// RoutePattern is the route as mounted (".../models/*" rather than the
	// model in the path): a bounded metrics label, while Route (the
	// request path) goes to the log.
	RoutePattern   string
	RequestType    string
	Provider       string
	Model          string
	ResolvedModel  string
	KeyID          string
	VirtualKeyID   string
	Stream         bool
	StatusCode     int
	Latency        time.Duration
	TTFT           time.Duration
	Usage          Usage
	IsFallback     bool
	FallbackIndex  int
	Retries        int
	Err            *apierr.Error
	RequestBody    []byte
	ResponseBody   []byte
	ClientCanceled bool
	// CallerCredential is what the client presented (API key, bearer
	// token, SigV4 access key id). It is not verified — inference has no
	// auth yet — and is kept for governance, never logged.
	CallerCredential string

	// Cost is the request's price in USD from the Pricer, set when the
	// outcome is finished; CostKnown is false when no price exists for
	// the provider and model (Cost is then 0, which does not mean free).
	Cost      float64
	CostKnown bool
}

// Recorder receives outcomes; implementations must not block for long.
type Recorder interface {
	Record(o *Outcome)
}

// CostBreakdown is a request's price in USD by what it paid for; the
// fields are the spec's billed_usage.cost members.
type CostBreakdown struct {
	// Input covers every prompt token class: text, cached reads and
	// writes, audio and image input.
	Input float64
	// Output covers text and audio output tokens.
	Output float64
	// Reasoning is the reasoning part of the completion.
	Reasoning float64
	// Search is provider-side web searches.
	Search float64
	// Request is a flat per-request fee.
	Request float64
	// Total is the sum of the above.
	Total float64
}

// Pricer prices a finished request. host/pricing implements it; inference
// only depends on this interface so pricing can import inference's types.
// Implementations must be safe for concurrent use and cheap: it runs once
// per request on the response path.
type Pricer interface {
	// Price returns the cost of usage on provider's model, and false when
	// no price is known for that model.
	Price(provider, model string, u Usage) (CostBreakdown, bool)
}
