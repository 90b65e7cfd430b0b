package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

func TestDetect(t *testing.T) {
	cases := []struct{ in, want string }{
		{"mail bob.smith+x@example.co.uk now", "mail [REDACTED_EMAIL] now"},
		{"call +1 (555) 123-4567 today", "call [REDACTED_PHONE] today"},
		{"call 555-123-4567.", "call [REDACTED_PHONE]."},
		{"card 4111 1111 1111 1111 ok", "card [REDACTED_CARD] ok"},
		{"card 4111-1111-1111-1112 bad luhn", "card [REDACTED_PHONE] bad luhn"[:0] + "card 4111-1111-1111-1112 bad luhn"},
		{"pi is 3.14159265358979", "pi is 3.14159265358979"},
		{"order 12345", "order 12345"},
		{`line\n5551234567 x`, `line\n[REDACTED_PHONE] x`},
		{`to:\nbob@x.io`, `to:\n[REDACTED_EMAIL]`},
		{"id abc4111111111111111", "id abc4111111111111111"},
		{"not@an-email", "not@an-email"},
		{"write to john.doe@example.com.", "write to [REDACTED_EMAIL]."},
	}
	g := New()
	for _, c := range cases {
		g.det.spans = g.det.spans[:0]
		g.det.scan([]byte(c.in), 0)
		got := string(redact(nil, []byte(c.in), g.det.spans))
		if got != c.want {
			t.Errorf("%q: got %q want %q", c.in, got, c.want)
		}
	}
}

func TestRequestRedactAndBlock(t *testing.T) {
	req := `{"model":"gpt-4o","messages":[{"role":"user","content":"I am jane@corp.com, card 4242424242424242"},{"role":"user","content":[{"type":"text","text":"ring +44 20 7946 0958"}]}],"max_tokens":5}`
	g := New()
	out, err := g.PreRequest([]byte(req))
	if err != nil || out.Status != pluginsdk.StatusOK {
		t.Fatal(out, err)
	}
	got := string(out.Body)
	want := `{"model":"gpt-4o","messages":[{"role":"user","content":"I am [REDACTED_EMAIL], card [REDACTED_CARD]"},{"role":"user","content":[{"type":"text","text":"ring [REDACTED_PHONE]"}]}],"max_tokens":5}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if !json.Valid(out.Body) {
		t.Fatal("invalid JSON")
	}
	clean := `{"model":"m","messages":[{"role":"user","content":"hello there"}]}`
	if out, _ := g.PreRequest([]byte(clean)); out.Status != pluginsdk.StatusPassThrough {
		t.Fatal("clean request not passed through")
	}
	if err := g.Configure([]byte(`{"action":"block","types":["card"]}`)); err != nil {
		t.Fatal(err)
	}
	_, err = g.PreRequest([]byte(req))
	if err == nil || !strings.Contains(err.Error(), "card") || strings.Contains(err.Error(), "4242") {
		t.Fatalf("block: %v", err)
	}
	if err := g.Configure([]byte(`{"action":"shout"}`)); err == nil {
		t.Fatal("bad action accepted")
	}
}

func chunk(content string) string {
	b, _ := json.Marshal(content)
	return `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}`
}

// streamText runs pieces through StreamBatch one chunk per batch and
// returns the concatenated emitted content.
func streamText(t *testing.T, g *Guardrail, pieces []string) string {
	t.Helper()
	var state []byte
	var sb strings.Builder
	collect := func(body []byte) {
		var chunks []pluginsdk.ChatChunk
		if err := json.Unmarshal(body, &chunks); err != nil {
			t.Fatalf("bad batch %s: %v", body, err)
		}
		for _, c := range chunks {
			for _, ch := range c.Choices {
				if ch.Delta.Content != nil {
					sb.WriteString(*ch.Delta.Content)
				}
			}
		}
	}
	for _, p := range pieces {
		out, err := g.StreamBatch(pluginsdk.StreamInput{State: state, Batch: []byte("[" + chunk(p) + "]")})
		if err != nil {
			t.Fatal(err)
		}
		state = append([]byte(nil), out.State...)
		collect(out.Body)
	}
	stop := `[{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}]`
	out, err := g.StreamBatch(pluginsdk.StreamInput{State: state, Batch: []byte(stop), End: true})
	if err != nil {
		t.Fatal(err)
	}
	collect(out.Body)
	return sb.String()
}

func TestStreamSplitAcrossChunks(t *testing.T) {
	g := New()
	got := streamText(t, g, []string{"Sure! Call me at 555-12", "3-4567 or write to jo", "hn.doe@exam", "ple.com.\nCard: 4111 11", "11 1111 1111 thanks"})
	want := "Sure! Call me at [REDACTED_PHONE] or write to [REDACTED_EMAIL].\nCard: [REDACTED_CARD] thanks"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	// Plain text passes unchanged, only delayed by at most a word.
	plain := []string{"The quick ", "brown fox ", "jumps over ", "the lazy dog."}
	if got := streamText(t, g, plain); got != strings.Join(plain, "") {
		t.Fatalf("plain text changed: %q", got)
	}
	if err := g.Configure([]byte(`{"action":"block"}`)); err != nil {
		t.Fatal(err)
	}
	var state []byte
	_, err := g.StreamBatch(pluginsdk.StreamInput{State: state, Batch: []byte("[" + chunk("mail me: a@b.io now") + "]")})
	if err == nil || !strings.Contains(err.Error(), "email") {
		t.Fatalf("block in stream: %v", err)
	}
}

// BenchmarkNative2KB is the same pre_request as the host benchmark
// (host/plugins BenchmarkPIIGuardrail2KB) compiled natively: the ratio
// shows what the wasm code generation costs.
func BenchmarkNative2KB(b *testing.B) {
	body := plugintest.ChatRequest2KB()
	g := New()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := g.PreRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}

// The benchmark input must exercise both detections, or the figures in
// BENCHMARKS.md would measure a cheaper path than they claim.
func TestBenchInputHasPII(t *testing.T) {
	out, err := New().PreRequest(plugintest.ChatRequest2KB())
	if err != nil || !json.Valid(out.Body) || !strings.Contains(string(out.Body), "[REDACTED_EMAIL]") || !strings.Contains(string(out.Body), "[REDACTED_PHONE]") {
		t.Fatalf("%s %v", out.Body, err)
	}
}
