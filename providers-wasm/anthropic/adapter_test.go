package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
)

func adaptBody(t *testing.T, body string) map[string]any {
	t.Helper()
	in, _ := json.Marshal(pluginsdk.AdaptRequestInput{RequestType: "chat.completion", Model: "m", Body: json.RawMessage(body)})
	out, err := testAdapter().AdaptRequest(in)
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	var spec struct{ Body map[string]any }
	if err := json.Unmarshal(out.Body, &spec); err != nil {
		t.Fatal(err)
	}
	return spec.Body
}

func TestSamplingKeptWithoutEffort(t *testing.T) {
	b := adaptBody(t, `{"messages":[{"role":"user","content":"x"}],"temperature":0.2,"top_p":0.5,"top_k":3}`)
	if b["temperature"] != 0.2 || b["top_p"] != 0.5 || b["top_k"] != 3.0 || b["max_tokens"] != 4096.0 || b["thinking"] != nil {
		t.Fatalf("%v", b)
	}
}

func TestRequestRejections(t *testing.T) {
	for _, body := range []string{
		`{"messages":[{"role":"function","content":"x"}]}`,
		`{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"not json"}}]}]}`,
		`{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`,
		`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`,
		`{"messages":"nope"}`,
	} {
		in, _ := json.Marshal(pluginsdk.AdaptRequestInput{RequestType: "chat.completion", Model: "m", Body: json.RawMessage(body)})
		_, err := testAdapter().AdaptRequest(in)
		if pe, ok := err.(*pluginsdk.Error); !ok || pe.Code != 400 {
			t.Errorf("%s: %v", body, err)
		}
	}
	in, _ := json.Marshal(pluginsdk.AdaptRequestInput{RequestType: "embedding", Body: json.RawMessage(`{}`)})
	if _, err := testAdapter().AdaptRequest(in); err == nil {
		t.Error("embedding accepted")
	}
}

func TestStreamErrorCodes(t *testing.T) {
	for typ, code := range map[string]int{"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500, "whatever": 500} {
		batch := `[{"event":"error","data":{"type":"error","error":{"type":"` + typ + `","message":"m"}}}]`
		_, err := testAdapter().AdaptStream(pluginsdk.StreamInput{Batch: []byte(batch)})
		if pe, ok := err.(*pluginsdk.Error); !ok || pe.Code != code || !strings.Contains(pe.Message, typ) {
			t.Errorf("%s: %v", typ, err)
		}
	}
}

// message_start alone emits nothing (the role chunk waits for content, so
// a following error still counts as "before content" for the host), and
// ping is silent.
func TestStreamHoldsRoleUntilContent(t *testing.T) {
	a := testAdapter()
	out, err := a.AdaptStream(pluginsdk.StreamInput{Batch: []byte(`[{"event":"message_start","data":{"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":3}}}},{"event":"ping","data":{"type":"ping"}}]`)})
	if err != nil || out.Status != pluginsdk.StatusNoOutput || len(out.State) == 0 {
		t.Fatalf("%v %v %s", out.Status, err, out.Body)
	}
	// The stream breaking now still reports the usage counted so far.
	out, err = a.AdaptStream(pluginsdk.StreamInput{State: out.State, Batch: []byte(`[]`), End: true})
	if err != nil || !strings.Contains(string(out.Body), `"prompt_tokens":3`) {
		t.Fatalf("%v %s", err, out.Body)
	}
}

func TestMalformedDecoderInput(t *testing.T) {
	a := testAdapter()
	if _, err := a.AdaptResponse([]byte(`{"body":{"content":[`)); err == nil {
		t.Error("adapt_response accepted malformed input")
	}
	if _, err := a.AdaptResponse([]byte(`{"request_type":"chat.completion","body":"<html>"}`)); err == nil {
		t.Error("adapt_response accepted a non-JSON upstream body")
	}
	if _, err := a.IngressRequest([]byte(`{"messages":[}`)); err == nil {
		t.Error("ingress accepted malformed input")
	}
	if _, err := a.AdaptStream(pluginsdk.StreamInput{State: []byte(`{`), Batch: []byte(`[]`)}); err == nil {
		t.Error("adapt_stream accepted corrupt state")
	}
}
