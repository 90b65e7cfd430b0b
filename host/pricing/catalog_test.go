package pricing

import (
	"math"
	"testing"

	"github.com/wasmgate/gateway/host/inference"
)

func newCatalog(t testing.TB) *Catalog {
	t.Helper()
	c, err := NewCatalog()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestResolve(t *testing.T) {
	c := newCatalog(t)
	cases := []struct {
		provider, model string
		table, key      string // want; table "" means unknown
	}{
		// exact
		{"openai", "gpt-4o", "openai", "gpt-4o"},
		{"openai", "gpt-4o-2024-05-13", "openai", "gpt-4o-2024-05-13"},
		{"groq", "llama3-70b-8192", "groq", "llama3-70b-8192"},
		{"groq", "meta-llama/llama-4-scout-17b-16e-instruct", "groq", "meta-llama/llama-4-scout-17b-16e-instruct"},
		{"OpenAI", "GPT-4o", "openai", "gpt-4o"},
		// normalised: dates, numeric versions, -latest/-preview/-exp
		{"openai", "gpt-4o-2024-08-06", "openai", "gpt-4o"},
		{"openai", "gpt-4o-mini-2024-07-18", "openai", "gpt-4o-mini"},
		{"openai", "gpt-3.5-turbo-0125", "openai", "gpt-3.5-turbo"},
		{"openai", "o3-mini-2025-01-31", "openai", "o3-mini"},
		{"anthropic", "claude-3-5-sonnet-20241022", "anthropic", "claude-3-5-sonnet"},
		{"anthropic", "claude-3-7-sonnet-latest", "anthropic", "claude-3-7-sonnet"},
		{"anthropic", "claude-sonnet-4-20250514", "anthropic", "claude-sonnet-4"},
		{"anthropic", "claude-opus-4-5-20251101", "anthropic", "claude-opus-4-5"},
		{"gemini", "gemini-1.5-pro-002", "gemini", "gemini-1.5-pro"},
		{"gemini", "gemini-2.5-flash-preview-05-20", "gemini", "gemini-2.5-flash"},
		{"gemini", "gemini-2.5-flash-lite", "gemini", "gemini-2.5-flash-lite"},
		{"gemini", "models/gemini-2.0-flash", "gemini", "gemini-2.0-flash"},
		{"cohere", "command-r-plus-08-2024", "cohere", "command-r-plus"},
		{"cohere", "command-a-03-2025", "cohere", "command-a"},
		{"mistral", "mistral-large-latest", "mistral", "mistral-large"},
		{"mistral", "mistral-small-2503", "mistral", "mistral-small"},
		{"xai", "grok-4-0709", "xai", "grok-4"},
		// families sharing models
		{"azure", "gpt-4o", "openai", "gpt-4o"},
		{"azure", "gpt-4.1-mini-2025-04-14", "openai", "gpt-4.1-mini"},
		{"vertex", "gemini-2.0-flash-001", "gemini", "gemini-2.0-flash"},
		{"vertex", "claude-3-5-sonnet-v2@20241022", "anthropic", "claude-3-5-sonnet"},
		{"vertex", "publishers/google/models/gemini-1.5-flash-002", "gemini", "gemini-1.5-flash"},
		{"bedrock", "anthropic.claude-3-5-sonnet-20241022-v2:0", "anthropic", "claude-3-5-sonnet"},
		{"bedrock", "us.anthropic.claude-3-7-sonnet-20250219-v1:0", "anthropic", "claude-3-7-sonnet"},
		{"bedrock", "amazon.nova-pro-v1:0", "bedrock", "amazon.nova-pro"},
		{"bedrock", "us.amazon.nova-lite-v1:0", "bedrock", "amazon.nova-lite"},
		{"bedrock", "meta.llama3-1-70b-instruct-v1:0", "bedrock", "meta.llama3-1-70b-instruct"},
		{"bedrock", "amazon.titan-embed-text-v2:0", "bedrock", "amazon.titan-embed-text-v2"},
		{"bedrock", "cohere.command-r-plus-v1:0", "cohere", "command-r-plus"},
		{"openrouter", "openai/gpt-4o-mini", "openai", "gpt-4o-mini"},
		{"openrouter", "anthropic/claude-3.5-sonnet", "", ""}, // OpenRouter's dotted ids are not Anthropic's
		// unknown
		{"openai", "gpt-4o-mini-tts", "", ""},
		{"openai", "gpt-4-32k", "", ""},
		{"ollama", "llama3", "", ""},
		{"openai", "", "", ""},
		{"nosuch", "gpt-4o", "", ""},
	}
	for _, tc := range cases {
		m, ok := c.Resolve(tc.provider, tc.model)
		if ok != (tc.table != "") || m.Table != tc.table || m.Model != tc.key {
			t.Errorf("Resolve(%q, %q) = %s/%s (%v, %s), want %s/%s", tc.provider, tc.model, m.Table, m.Model, ok, m.Source, tc.table, tc.key)
		}
		if _, known := c.Cost(tc.provider, tc.model, inference.Usage{PromptTokens: 1}); known != ok {
			t.Errorf("Cost(%q, %q) known = %v, Resolve ok = %v", tc.provider, tc.model, known, ok)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// TestCostTokenClasses checks each token class is priced at its own rate
// and subtracted from the totals it is part of.
func TestCostTokenClasses(t *testing.T) {
	c := newCatalog(t)
	const M = 1_000_000
	cases := []struct {
		name, provider, model string
		u                     inference.Usage
		want                  inference.CostBreakdown
	}{
		{"plain", "openai", "gpt-4o", inference.Usage{PromptTokens: M, CompletionTokens: M},
			inference.CostBreakdown{Input: 2.5, Output: 10}},
		{"cached read", "openai", "gpt-4o", inference.Usage{PromptTokens: M, CachedReadTokens: M / 2},
			inference.CostBreakdown{Input: 0.5*2.5 + 0.5*1.25}},
		{"cached write (anthropic 1.25x)", "anthropic", "claude-sonnet-4", inference.Usage{PromptTokens: 3 * M, CachedReadTokens: M, CachedWriteTokens: M},
			inference.CostBreakdown{Input: 3 + 0.3 + 3.75}},
		{"reasoning defaults to output", "openai", "o3", inference.Usage{PromptTokens: 0, CompletionTokens: 2 * M, ReasoningTokens: M},
			inference.CostBreakdown{Output: 8, Reasoning: 8}},
		{"audio in/out", "openai", "gpt-4o-audio-preview", inference.Usage{PromptTokens: 2 * M, AudioInputTokens: M, CompletionTokens: 2 * M, AudioOutputTokens: M},
			inference.CostBreakdown{Input: 2.5 + 40, Output: 10 + 80}},
		{"audio defaults to text", "openai", "gpt-4o", inference.Usage{PromptTokens: M, AudioInputTokens: M, CompletionTokens: M, AudioOutputTokens: M},
			inference.CostBreakdown{Input: 2.5, Output: 10}},
		{"image", "openai", "gpt-image-1", inference.Usage{PromptTokens: 2 * M, ImageTokens: M, CompletionTokens: M},
			inference.CostBreakdown{Input: 5 + 10, Output: 40}},
		{"web search", "anthropic", "claude-3-5-haiku", inference.Usage{WebSearchRequests: 3},
			inference.CostBreakdown{Search: 0.03}},
		{"per request (rerank)", "cohere", "rerank-v3.5", inference.Usage{},
			inference.CostBreakdown{Request: 0.002}},
		{"inconsistent details never go negative", "openai", "gpt-4o", inference.Usage{PromptTokens: 10, CachedReadTokens: 20},
			inference.CostBreakdown{Input: 20 * 1.25 / M}},
	}
	for _, tc := range cases {
		got, ok := c.Price(tc.provider, tc.model, tc.u)
		if !ok {
			t.Fatalf("%s: no price", tc.name)
		}
		w := tc.want
		w.Total = w.Input + w.Output + w.Reasoning + w.Search + w.Request
		if !near(got.Input, w.Input) || !near(got.Output, w.Output) || !near(got.Reasoning, w.Reasoning) ||
			!near(got.Search, w.Search) || !near(got.Request, w.Request) || !near(got.Total, w.Total) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, w)
		}
		if usd, _ := c.Cost(tc.provider, tc.model, tc.u); !near(usd, w.Total) {
			t.Errorf("%s: Cost = %v, want %v", tc.name, usd, w.Total)
		}
	}
}

func BenchmarkCost(b *testing.B) {
	c := newCatalog(b)
	u := inference.Usage{PromptTokens: 1200, CompletionTokens: 300, CachedReadTokens: 1000, ReasoningTokens: 100}
	for _, bc := range []struct{ name, provider, model string }{
		{"exact", "openai", "gpt-4o-mini"},
		{"dated", "openai", "gpt-4o-mini-2024-07-18"},
		{"bedrock", "bedrock", "us.anthropic.claude-3-7-sonnet-20250219-v1:0"},
		{"unknown", "openai", "my-finetune"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.Cost(bc.provider, bc.model, u)
			}
		})
	}
}
