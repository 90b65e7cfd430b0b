package inference

import (
	"time"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// Usage is the token accounting of one request.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	TotalTokens      int64
	CachedReadTokens int64
	ReasoningTokens  int64
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
	if s, e, found := jsonx.Field(u, "prompt_tokens_details"); found {
		us.CachedReadTokens, _ = jsonx.IntField(u[s:e], "cached_tokens")
	} else if s, e, found := jsonx.Field(u, "input_tokens_details"); found {
		us.CachedReadTokens, _ = jsonx.IntField(u[s:e], "cached_tokens")
	}
	if s, e, found := jsonx.Field(u, "completion_tokens_details"); found {
		us.ReasoningTokens, _ = jsonx.IntField(u[s:e], "reasoning_tokens")
	} else if s, e, found := jsonx.Field(u, "output_tokens_details"); found {
		us.ReasoningTokens, _ = jsonx.IntField(u[s:e], "reasoning_tokens")
	}
	return us, true
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
}

// Recorder receives outcomes; implementations must not block for long.
type Recorder interface {
	Record(o *Outcome)
}
