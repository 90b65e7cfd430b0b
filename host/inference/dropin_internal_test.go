package inference

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/eventstream"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

func TestDefaultProvider(t *testing.T) {
	for _, tc := range []struct{ in, prov, want string }{
		{"claude-3-5-haiku", "anthropic", "anthropic/claude-3-5-haiku"},
		{"openai/gpt-4o-mini", "anthropic", "openai/gpt-4o-mini"},
		{"openrouter/anthropic/claude-3.5-sonnet", "openai", "openrouter/anthropic/claude-3.5-sonnet"},
		// The first segment is not a provider id: a bare name with a slash.
		{"meta-llama/Llama-3", "openai", "openai/meta-llama/Llama-3"},
		{"anthropic.claude-3-haiku-20240307-v1:0", "bedrock", "bedrock/anthropic.claude-3-haiku-20240307-v1:0"},
	} {
		body := defaultProvider([]byte(`{"model":"`+tc.in+`","stream":true}`), tc.prov)
		got, _ := jsonx.StringField(body, "model")
		if string(got) != tc.want || !json.Valid(body) {
			t.Errorf("%s on %s: %s", tc.in, tc.prov, body)
		}
	}
	if b := defaultProvider([]byte(`{"messages":[]}`), "openai"); string(b) != `{"messages":[]}` {
		t.Errorf("no model: %s", b)
	}
}

func TestCallerCredential(t *testing.T) {
	app := fiber.New()
	var got string
	app.All("/*", func(c *fiber.Ctx) error { got = callerCredential(c); return nil })
	for _, tc := range []struct {
		hdr, val, query, want string
	}{
		{"x-api-key", "sk-ant", "", "sk-ant"},
		{"Authorization", "Bearer tok-1", "", "tok-1"},
		{"x-goog-api-key", "goog", "", "goog"},
		{"", "", "?key=qk", "qk"},
		{"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDCALLER/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=abc", "", "AKIDCALLER"},
	} {
		req := httptest.NewRequest("POST", "/x"+tc.query, nil)
		if tc.hdr != "" {
			req.Header.Set(tc.hdr, tc.val)
		}
		if _, err := app.Test(req); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s %q: got %q want %q", tc.hdr, tc.val, got, tc.want)
		}
	}
}

func TestFrameNative(t *testing.T) {
	if b := frameNative(wireAnthropic, []byte(`{"event":"message_stop","data":{"type":"message_stop"}}`)); string(b) != "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n" {
		t.Errorf("anthropic: %q", b)
	}
	if b := frameNative(wireGenAI, []byte(`{"data":{"candidates":[]}}`)); string(b) != "data: {\"candidates\":[]}\n\n" {
		t.Errorf("genai: %q", b)
	}
	b := frameNative(wireBedrock, []byte(`{"event":"messageStop","data":{"stopReason":"end_turn"}}`))
	m, _, err := eventstream.Parse(b)
	if err != nil || m.Header(eventstream.HeaderEventType) != "messageStop" || string(m.Payload) != `{"stopReason":"end_turn"}` {
		t.Errorf("bedrock event: %v %+v", err, m)
	}
	b = frameNative(wireBedrock, []byte(`{"exception":"modelStreamErrorException","data":{"message":"x"}}`))
	m, _, err = eventstream.Parse(b)
	if err != nil || m.Header(eventstream.HeaderMessageType) != "exception" || m.Header(eventstream.HeaderExceptionType) != "modelStreamErrorException" {
		t.Errorf("bedrock exception: %v %+v", err, m)
	}
}
