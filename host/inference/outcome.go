package inference

import (
	"strconv"
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
	// One pass over the usage object and one over each details object,
	// rather than a lookup per field: this runs for every answer.
	var v [12][]byte
	firstValues(u, v[:], "prompt_tokens", "input_tokens", "completion_tokens", "output_tokens", "total_tokens",
		"prompt_tokens_details", "input_tokens_details", "cache_creation_input_tokens",
		"completion_tokens_details", "output_tokens_details", "tool_usage", "server_tool_use")
	var us Usage
	var ok bool
	if us.PromptTokens, ok = intValue(v[0]); !ok {
		// Embeddings and some providers report input_tokens.
		if us.PromptTokens, ok = intValue(v[1]); !ok {
			return us, false
		}
	}
	us.CompletionTokens, _ = intValue(v[2])
	if us.CompletionTokens == 0 {
		us.CompletionTokens, _ = intValue(v[3])
	}
	us.TotalTokens, _ = intValue(v[4])
	if us.TotalTokens == 0 {
		us.TotalTokens = us.PromptTokens + us.CompletionTokens
	}
	if d := orBytes(v[5], v[6]); d != nil {
		var dv [6][]byte
		firstValues(d, dv[:], "cached_tokens", "cached_read_tokens", "cache_write_tokens", "cached_write_tokens", "audio_tokens", "image_tokens")
		us.CachedReadTokens = intOr(dv[0], dv[1])
		us.CachedWriteTokens = intOr(dv[2], dv[3])
		us.AudioInputTokens, _ = intValue(dv[4])
		us.ImageTokens, _ = intValue(dv[5])
	}
	if us.CachedWriteTokens == 0 {
		// Anthropic's own usage shape, when a response passes through raw.
		us.CachedWriteTokens, _ = intValue(v[7])
	}
	if d := orBytes(v[8], v[9]); d != nil {
		var dv [3][]byte
		firstValues(d, dv[:], "reasoning_tokens", "audio_tokens", "num_search_queries")
		us.ReasoningTokens, _ = intValue(dv[0])
		us.AudioOutputTokens, _ = intValue(dv[1])
		us.WebSearchRequests, _ = intValue(dv[2])
	}
	if v[10] != nil {
		var ws [1][]byte
		if firstValues(v[10], ws[:], "web_search"); ws[0] != nil {
			var n [1][]byte
			firstValues(ws[0], n[:], "num_requests")
			us.WebSearchRequests, _ = intValue(n[0])
		}
	} else if v[11] != nil {
		var n [1][]byte
		firstValues(v[11], n[:], "web_search_requests")
		us.WebSearchRequests, _ = intValue(n[0])
	}
	return us, true
}

// firstValues reads obj once and sets vals[i] to the raw value of the
// first member named keys[i] (nil when there is none), as a lookup by key
// would find it.
func firstValues(obj []byte, vals [][]byte, keys ...string) {
	r := jsonx.NewReader(obj)
	if !r.Object() {
		return
	}
	for k, ok := r.Member(); ok; k, ok = r.Member() {
		for i, key := range keys {
			if vals[i] == nil && string(k) == key {
				vals[i] = r.Value()
				break
			}
		}
	}
}

// intValue parses a raw integer value, as jsonx.IntField does.
func intValue(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

// orBytes is a when present, else b.
func orBytes(a, b []byte) []byte {
	if a != nil {
		return a
	}
	return b
}

// intOr is the first of two integer values that is present.
func intOr(a, b []byte) int64 {
	if n, ok := intValue(a); ok {
		return n
	}
	n, _ := intValue(b)
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
