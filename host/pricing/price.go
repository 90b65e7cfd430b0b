package pricing

import (
	"fmt"
	"math"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/inference"
)

// Price is one model's list price as written in the bundled catalog and in
// overrides: USD per million tokens for each token class, USD per web
// search and per request. Optional rates left out (null) take the default
// named on the field, so a catalog entry lists only what differs.
type Price struct {
	InputPerMTok  *float64 `json:"input_per_mtok"`
	OutputPerMTok *float64 `json:"output_per_mtok"`
	// CachedReadPerMTok defaults to the input rate (no cache discount).
	CachedReadPerMTok *float64 `json:"cached_read_per_mtok,omitempty"`
	// CachedWritePerMTok defaults to the input rate.
	CachedWritePerMTok *float64 `json:"cached_write_per_mtok,omitempty"`
	// ReasoningPerMTok defaults to the output rate: every provider bills
	// reasoning as output today.
	ReasoningPerMTok *float64 `json:"reasoning_per_mtok,omitempty"`
	// AudioInputPerMTok defaults to the input rate.
	AudioInputPerMTok *float64 `json:"audio_input_per_mtok,omitempty"`
	// AudioOutputPerMTok defaults to the output rate.
	AudioOutputPerMTok *float64 `json:"audio_output_per_mtok,omitempty"`
	// ImagePerMTok prices image input tokens; defaults to the input rate.
	ImagePerMTok *float64 `json:"image_per_mtok,omitempty"`
	// WebSearchPerRequest is USD per provider-side web search (0 if unset).
	WebSearchPerRequest *float64 `json:"web_search_per_request,omitempty"`
	// PerRequest is a flat USD fee per served request (rerank searches,
	// for example; 0 if unset). Failed requests are not priced at all.
	PerRequest *float64 `json:"per_request,omitempty"`
}

// maxRate bounds every rate: far above any real price, low enough that a
// typo such as 25000000 is caught instead of billed.
const maxRate = 1e6

// Validate checks every rate is present where required, finite and
// non-negative. The error names the offending field.
func (p *Price) Validate() *apierr.Error {
	if p.InputPerMTok == nil {
		return apierr.BadRequest("missing_field", "input_per_mtok", "input_per_mtok is required (USD per million input tokens)")
	}
	if p.OutputPerMTok == nil {
		return apierr.BadRequest("missing_field", "output_per_mtok", "output_per_mtok is required (USD per million output tokens; 0 for embeddings)")
	}
	for _, f := range p.fields() {
		if f.v == nil {
			continue
		}
		if v := *f.v; math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > maxRate {
			return apierr.BadRequest("invalid_value", f.name,
				fmt.Sprintf("%s must be a number between 0 and %g (got %g)", f.name, float64(maxRate), v))
		}
	}
	return nil
}

type namedRate struct {
	name string
	v    *float64
}

func (p *Price) fields() []namedRate {
	return []namedRate{
		{"input_per_mtok", p.InputPerMTok}, {"output_per_mtok", p.OutputPerMTok},
		{"cached_read_per_mtok", p.CachedReadPerMTok}, {"cached_write_per_mtok", p.CachedWritePerMTok},
		{"reasoning_per_mtok", p.ReasoningPerMTok}, {"audio_input_per_mtok", p.AudioInputPerMTok},
		{"audio_output_per_mtok", p.AudioOutputPerMTok}, {"image_per_mtok", p.ImagePerMTok},
		{"web_search_per_request", p.WebSearchPerRequest}, {"per_request", p.PerRequest},
	}
}

// rates is a Price resolved for arithmetic: defaults applied and every
// token rate converted to USD per token, so Cost does no lookups or
// branches on missing values.
type rates struct {
	input, output, cachedRead, cachedWrite, reasoning float64
	audioIn, audioOut, image, webSearch, request      float64
}

func or(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}

func (p *Price) rates() *rates {
	in, out := or(p.InputPerMTok, 0), or(p.OutputPerMTok, 0)
	const m = 1e6
	return &rates{
		input: in / m, output: out / m,
		cachedRead: or(p.CachedReadPerMTok, in) / m, cachedWrite: or(p.CachedWritePerMTok, in) / m,
		reasoning: or(p.ReasoningPerMTok, out) / m,
		audioIn:   or(p.AudioInputPerMTok, in) / m, audioOut: or(p.AudioOutputPerMTok, out) / m,
		image:     or(p.ImagePerMTok, in) / m,
		webSearch: or(p.WebSearchPerRequest, 0), request: or(p.PerRequest, 0),
	}
}

// cost prices u. The detail counts are parts of the prompt and completion
// totals (see inference.Usage), so the plain-text share is what remains
// after subtracting them; it never goes below zero when a provider reports
// details inconsistent with its totals.
func (r *rates) cost(u inference.Usage) inference.CostBreakdown {
	textIn := u.PromptTokens - u.CachedReadTokens - u.CachedWriteTokens - u.AudioInputTokens - u.ImageTokens
	textIn = max(textIn, 0)
	textOut := max(u.CompletionTokens-u.ReasoningTokens-u.AudioOutputTokens, 0)
	var b inference.CostBreakdown
	b.Input = float64(textIn)*r.input + float64(u.CachedReadTokens)*r.cachedRead +
		float64(u.CachedWriteTokens)*r.cachedWrite + float64(u.AudioInputTokens)*r.audioIn +
		float64(u.ImageTokens)*r.image
	b.Output = float64(textOut)*r.output + float64(u.AudioOutputTokens)*r.audioOut
	b.Reasoning = float64(u.ReasoningTokens) * r.reasoning
	b.Search = float64(u.WebSearchRequests) * r.webSearch
	b.Request = r.request
	b.Total = b.Input + b.Output + b.Reasoning + b.Search + b.Request
	return b
}
