package inference

import (
	"testing"

	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

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

// parseUsageByLookups is parseUsage as it was, one lookup per field: the
// oracle the one-pass version must agree with.
func parseUsageByLookups(u []byte) (Usage, bool) {
	lookupOr := func(obj []byte, a, b string) int64 {
		if n, ok := jsonx.IntField(obj, a); ok {
			return n
		}
		n, _ := jsonx.IntField(obj, b)
		return n
	}
	var us Usage
	var ok bool
	if us.PromptTokens, ok = jsonx.IntField(u, "prompt_tokens"); !ok {
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
		us.CachedReadTokens = lookupOr(d, "cached_tokens", "cached_read_tokens")
		us.CachedWriteTokens = lookupOr(d, "cache_write_tokens", "cached_write_tokens")
		us.AudioInputTokens, _ = jsonx.IntField(d, "audio_tokens")
		us.ImageTokens, _ = jsonx.IntField(d, "image_tokens")
	}
	if us.CachedWriteTokens == 0 {
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

var usageSeeds = []string{
	`{"prompt_tokens":100,"completion_tokens":50,"total_tokens":150,"prompt_tokens_details":{"cached_tokens":10,"audio_tokens":20,"image_tokens":5},"completion_tokens_details":{"reasoning_tokens":7,"audio_tokens":30}}`,
	`{"prompt_tokens":40,"completion_tokens":3,"total_tokens":43,"prompt_tokens_details":{"cached_tokens":8,"cache_write_tokens":12}}`,
	`{"prompt_tokens":9,"completion_tokens":1,"prompt_tokens_details":{"cached_read_tokens":2,"cached_write_tokens":3},"tool_usage":{"web_search":{"num_requests":2}}}`,
	`{"input_tokens":5,"output_tokens":2,"cache_creation_input_tokens":4,"server_tool_use":{"web_search_requests":1}}`,
	`{"prompt_tokens":1,"completion_tokens":1,"prompt_tokens_details":null}`,
	`{"prompt_tokens":"12","completion_tokens":0,"output_tokens":3,"prompt_tokens":99,"input_tokens_details":{"cached_tokens":"x","cached_read_tokens":4}}`,
	`{"prompt_tokens":null,"input_tokens":7,"output_tokens_details":{"num_search_queries":2},"tool_usage":{"other":1},"server_tool_use":{"web_search_requests":5}}`,
	`{"prompt_tokens": 3 , "completion_tokens_details" : {"reasoning_tokens" : 1.5}, "tool_usage":{"web_search":{}}}`,
	`[1,2]`, `{}`, `{"prompt_tokens":1e3}`,
}

// TestParseUsageAgreesWithLookups runs the seeds and every prefix-cut of
// them that is still JSON through both implementations.
func TestParseUsageAgreesWithLookups(t *testing.T) {
	for _, s := range usageSeeds {
		checkUsageAgrees(t, []byte(s))
	}
}

func FuzzParseUsage(f *testing.F) {
	for _, s := range usageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkUsageAgrees)
}

func checkUsageAgrees(t *testing.T, u []byte) {
	if !jsonx.Valid(u) {
		return // usage comes from JSON the gateway validated or produced
	}
	got, gok := parseUsage(u)
	want, wok := parseUsageByLookups(u)
	if got != want || gok != wok {
		t.Fatalf("%s:\n one pass %+v %v\n lookups  %+v %v", u, got, gok, want, wok)
	}
}

func BenchmarkParseUsage(b *testing.B) {
	u := []byte(usageSeeds[0])
	b.Run("one pass", func(b *testing.B) {
		for b.Loop() {
			parseUsage(u)
		}
	})
	b.Run("lookups", func(b *testing.B) {
		for b.Loop() {
			parseUsageByLookups(u)
		}
	})
}
