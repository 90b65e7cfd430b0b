package inference

import "testing"

// TestParseUsageDetails reads every detail count the pricer uses from the
// unified usage shapes the bundled adapters and OpenAI emit.
func TestParseUsageDetails(t *testing.T) {
	cases := []struct {
		name, in string
		want     Usage
	}{
		{"openai audio and reasoning",
			`{"prompt_tokens":100,"completion_tokens":50,"total_tokens":150,"prompt_tokens_details":{"cached_tokens":10,"audio_tokens":20,"image_tokens":5},"completion_tokens_details":{"reasoning_tokens":7,"audio_tokens":30}}`,
			Usage{PromptTokens: 100, CompletionTokens: 50, TotalTokens: 150, CachedReadTokens: 10, AudioInputTokens: 20, ImageTokens: 5, ReasoningTokens: 7, AudioOutputTokens: 30}},
		{"anthropic and bedrock adapters (cache writes)",
			`{"prompt_tokens":40,"completion_tokens":3,"total_tokens":43,"prompt_tokens_details":{"cached_tokens":8,"cache_write_tokens":12}}`,
			Usage{PromptTokens: 40, CompletionTokens: 3, TotalTokens: 43, CachedReadTokens: 8, CachedWriteTokens: 12}},
		{"spec billed_usage names and web search",
			`{"prompt_tokens":9,"completion_tokens":1,"prompt_tokens_details":{"cached_read_tokens":2,"cached_write_tokens":3},"tool_usage":{"web_search":{"num_requests":2}}}`,
			Usage{PromptTokens: 9, CompletionTokens: 1, TotalTokens: 10, CachedReadTokens: 2, CachedWriteTokens: 3, WebSearchRequests: 2}},
		{"anthropic native usage",
			`{"input_tokens":5,"output_tokens":2,"cache_creation_input_tokens":4,"server_tool_use":{"web_search_requests":1}}`,
			Usage{PromptTokens: 5, CompletionTokens: 2, TotalTokens: 7, CachedWriteTokens: 4, WebSearchRequests: 1}},
		{"null details", `{"prompt_tokens":1,"completion_tokens":1,"prompt_tokens_details":null}`,
			Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}},
	}
	for _, tc := range cases {
		got, ok := parseUsage([]byte(tc.in))
		if !ok || got != tc.want {
			t.Errorf("%s: got %+v (%v), want %+v", tc.name, got, ok, tc.want)
		}
	}
}
