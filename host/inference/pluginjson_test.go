package inference

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// The hand-written adapter-contract JSON must be encoding/json's, byte for
// byte, and decode what encoding/json decodes.

func checkSameJSON(t *testing.T, what string, got []byte, gerr error, want []byte, werr error) {
	t.Helper()
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("%s: error %v, encoding/json %v", what, gerr, werr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s:\n got  %s\n want %s", what, got, want)
	}
}

func TestPluginJSONCases(t *testing.T) {
	bodies := []json.RawMessage{nil, {}, json.RawMessage(`{"a" : [1, "x <y> & \u2028 z\u2029"], "b":"\"\\"}`),
		json.RawMessage(" \n{}\t"), json.RawMessage(`{`), json.RawMessage(` `), json.RawMessage("\"\xe2\x80\xa8\xe2\x80\xa9\xe2\x80\""), json.RawMessage(`null`)}
	for _, b := range bodies {
		for _, s := range []string{"", "chat.completion", "a<b>&c", "q\"\\\n\r\t\b\f\x01\x7f", "é\u2028\u2029\xff", "https://x/y?a=1&b=2"} {
			in := &AdaptRequestInput{RequestType: s, Provider: "anthropic", Model: s, Stream: len(s)%2 == 0, BaseURL: s, KeyConfig: b, Body: b}
			got, gerr := appendAdaptRequestInput(nil, in)
			want, werr := json.Marshal(in)
			checkSameJSON(t, "adapt_request input", got, gerr, want, werr)

			rin := &AdaptResponseInput{RequestType: s, Model: s, Status: 200, Body: b, Context: s, EncodingFormat: s,
				Headers: map[string]string{"z": s, "a": "1", s: "k", "B<": s}}
			got, gerr = appendAdaptResponseInput(nil, rin)
			want, werr = json.Marshal(rin)
			checkSameJSON(t, "adapt_response input", got, gerr, want, werr)

		}
	}
}

var upstreamRequestSeeds = []string{
	`{"method":"POST","path":"/messages","headers":{"anthropic-version":"2023-06-01"},"body":{"model":"m","messages":[]},"stream":true}`,
	`{"method":"GET","path":"/models?limit=1000","headers":{}}`,
	`{"method":"POST","url":"https://bedrock/x","body_base64":"AAA=","framing":"aws-eventstream","context":"c","stream":false}`,
	`{"Method":"POST"}`, `{"method":"P\u004fST"}`, `{"method":null}`, `{"body":null}`, `{"stream":1}`, `{"headers":{"a":1}}`,
	`{"headers":null}`, `{"unknown":[1,2],"method":"x","method":"y"}`, `[]`, `{`, `{"path":"é"}`, `{"BODY":{}}`, `{"bodY":{}}`,
	`{"body": {"a" : 1} , "body":[2]}`, `{"headers":{"k":"v","k":"w"}}`, `{"headers":{"a":"1"},"headers":{"b":"2","a":"3"}}`, ` {"method":"POST"} `, `{"met\u0068od":"x"}`,
}

func TestDecodeUpstreamRequestSeeds(t *testing.T) {
	for _, s := range upstreamRequestSeeds {
		checkDecode(t, []byte(s))
	}
}

func checkDecode(t *testing.T, b []byte) {
	t.Helper()
	var got, want UpstreamRequest
	gerr := decodeUpstreamRequest(b, &got)
	werr := json.Unmarshal(b, &want)
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("%s: error %v, encoding/json %v", b, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %+v\n want %+v", b, got, want)
	}
}

func FuzzDecodeUpstreamRequest(f *testing.F) {
	for _, s := range upstreamRequestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDecode(t, b) })
}

func FuzzPluginJSON(f *testing.F) {
	f.Add("chat.completion", "anthropic", []byte(`{"a" : "<b>"}`), "k", "v")
	f.Add("a\u2028", "\xff", []byte(" [1,\n2] "), "", "\x00")
	f.Fuzz(func(t *testing.T, s1, s2 string, body []byte, hk, hv string) {
		in := &AdaptRequestInput{RequestType: s1, Provider: s2, Model: hk, Stream: len(s1) > 3, BaseURL: hv, KeyConfig: body, Body: body}
		got, gerr := appendAdaptRequestInput(nil, in)
		want, werr := json.Marshal(in)
		checkSameJSON(t, "adapt_request input", got, gerr, want, werr)

		rin := &AdaptResponseInput{RequestType: s1, Provider: s2, Status: len(body), Headers: map[string]string{hk: hv, s1: s2}, Body: body, Context: hv}
		got, gerr = appendAdaptResponseInput(nil, rin)
		want, werr = json.Marshal(rin)
		checkSameJSON(t, "adapt_response input", got, gerr, want, werr)

	})
}

// One translated chat request's worth of contract JSON: the adapt_request
// input, the spec back, the adapt_response input.
func BenchmarkPluginJSON(b *testing.B) {
	body := json.RawMessage(`{"model":"anthropic/claude-3-5-haiku","max_tokens":256,"messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Summarise the benefits of a gateway in front of model providers in two sentences, please."}]}`)
	spec := []byte(`{"method":"POST","path":"/messages","headers":{"anthropic-version":"2023-06-01"},"body":{"model":"claude-3-5-haiku","max_tokens":256,"system":"You are a helpful assistant.","messages":[{"role":"user","content":"Summarise the benefits of a gateway in front of model providers in two sentences, please."}]}}`)
	answer := json.RawMessage(`{"id":"msg_fake0001","type":"message","role":"assistant","model":"claude-3-5-haiku","content":[{"type":"text","text":"hello from anthropic"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":54,"output_tokens":3}}`)
	in := &AdaptRequestInput{RequestType: TypeChat, Provider: "anthropic", Model: "claude-3-5-haiku", Body: body}
	rin := &AdaptResponseInput{RequestType: TypeChat, Provider: "anthropic", Model: "claude-3-5-haiku", Status: 200, Body: answer}
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(in)
			var s UpstreamRequest
			_ = json.Unmarshal(spec, &s)
			_, _ = json.Marshal(rin)
		}
	})
	b.Run("hand-written", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = appendAdaptRequestInput(make([]byte, 0, len(body)+256), in)
			var s UpstreamRequest
			_ = decodeUpstreamRequest(spec, &s)
			_, _ = appendAdaptResponseInput(make([]byte, 0, len(answer)+256), rin)
		}
	})
}
