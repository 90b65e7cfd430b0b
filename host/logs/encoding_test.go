package logs

import (
	"encoding/json"
	"testing"
	"time"

	segjson "github.com/segmentio/encoding/json"
)

// TestRecordEncodingMatchesEncodingJSON: records are stored with
// segmentio's encoder and read back with encoding/json; the bytes must be
// what encoding/json writes, escapes and omitted fields included.
func TestRecordEncodingMatchesEncodingJSON(t *testing.T) {
	full := &Record{ID: "0193a8c2-7d4e-7b3a-9f1e-2c4d5e6f7a8b", Timestamp: time.Date(2026, 11, 25, 22, 50, 1, 123456789, time.UTC),
		Object: "chat.completion", Route: "/v1/chat/completions", Provider: "openai", Model: "gpt-4o-mini", ResolvedModel: "gpt-4o",
		Status: "error", StatusCode: 429, LatencyMS: 1.25, TTFTMS: 0.5, Stream: true, PromptTokens: 30, CompletionTokens: 12,
		TotalTokens: 42, CachedReadTokens: 7, ReasoningTokens: 3, Cost: 1.23e-7, KeyID: "k1", VirtualKeyID: "vk",
		IsFallback: true, FallbackIndex: 1, Retries: 2,
		Error: &ErrorInfo{Type: "upstream", Code: "rate_limited", Message: "a \"quoted\" <b> & \u2028 \x01 é 😀"},
		Input: `{"messages":[{"role":"user","content":"<script>"}]}`, Output: "\t\n", ContentTruncated: true,
		AsyncJobID: "job", Metadata: map[string]string{"b": "2", "a": "1", "": "empty"}}
	for name, r := range map[string]*Record{"full": full, "sparse": {ID: "x", Timestamp: time.Unix(0, 0).UTC()}, "large numbers": {LatencyMS: 1e21, Cost: 123456789.125, TotalTokens: 1 << 62}} {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := segjson.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}

func BenchmarkRecordEncoding(b *testing.B) {
	r := &Record{ID: "0193a8c2-7d4e-7b3a-9f1e-2c4d5e6f7a8b", Timestamp: time.Now().UTC(), Object: "chat.completion",
		Route: "/v1/chat/completions", Provider: "openai", Model: "gpt-4o-mini", Status: "success", StatusCode: 200,
		LatencyMS: 1.234, PromptTokens: 30, CompletionTokens: 12, TotalTokens: 42, Cost: 0.0000123, KeyID: "k1"}
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(r)
		}
	})
	b.Run("segmentio", func(b *testing.B) {
		for b.Loop() {
			_, _ = segjson.Marshal(r)
		}
	})
}
