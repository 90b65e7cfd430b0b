package main

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
)

func TestInvokeRequestPassesBody(t *testing.T) {
	native := `{"anthropic_version":"bedrock-2023-05-31", "max_tokens":5,"messages":[{"role":"user","content":"h\u00e9"}]}`
	in := `{"request_type":"invoke","model":"anthropic.claude-3-haiku-20240307-v1:0","stream":true,"base_url":"http://up",` +
		`"body":{"model":"bedrock/x","stream":true,"body":` + native + `}}`
	out, err := (&Adapter{}).AdaptRequest([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	spec := string(out.Body)
	for _, want := range []string{`"url":"http://up/model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke-with-response-stream"`,
		`"body":` + native, `"framing":"aws-eventstream"`, `"context":"{\"invoke\":true}"`} {
		if !strings.Contains(spec, want) {
			t.Errorf("spec lacks %s:\n%s", want, spec)
		}
	}
	if _, err := (&Adapter{}).AdaptRequest([]byte(`{"request_type":"invoke","model":"m","base_url":"http://up","body":{"body":[1]}}`)); err == nil {
		t.Error("a non-object native body was accepted")
	}
}

func TestInvokeResponseKeepsBytes(t *testing.T) {
	body := `{"id":"msg_1", "content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":7,"output_tokens":3}}`
	out, err := (&Adapter{}).AdaptResponse([]byte(`{"request_type":"invoke","model":"m","status":200,"body":` + body + `}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"object":"bedrock.invoke","usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10},"body":` + body + `}`
	if string(out.Body) != want {
		t.Errorf("got  %s\nwant %s", out.Body, want)
	}
	// Bedrock's headers win: they count for every model family.
	out, _ = (&Adapter{}).AdaptResponse([]byte(`{"request_type":"invoke","status":200,"headers":{"x-amzn-bedrock-input-token-count":"11","x-amzn-bedrock-output-token-count":"2"},"body":{"generation":"x"}}`))
	if !strings.Contains(string(out.Body), `"prompt_tokens":11,"completion_tokens":2`) {
		t.Errorf("headers ignored: %s", out.Body)
	}
}

func TestInvokeStreamUsage(t *testing.T) {
	chunk := func(ev string) string {
		return `{"event":"chunk","data":{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(ev)) + `"}}`
	}
	batch := "[" + chunk(`{"type":"message_start","message":{"usage":{"input_tokens":9,"output_tokens":1}}}`) + "," +
		chunk(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`) + "," +
		chunk(`{"type":"message_delta","usage":{"output_tokens":4}}`) + "]"
	out, err := (&Adapter{}).AdaptStream(pluginsdk.StreamInput{State: []byte(invokeContext), Batch: []byte(batch)})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out.Body), `"object":"bedrock.invoke.chunk"`); n != 3 {
		t.Errorf("%d chunks: %s", n, out.Body)
	}
	if !strings.HasSuffix(string(out.Body), `"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}]`) {
		t.Errorf("usage: %s", out.Body)
	}
	// Nova's metadata, then Bedrock's metrics, in the next batch.
	out, err = (&Adapter{}).AdaptStream(pluginsdk.StreamInput{State: out.State,
		Batch: []byte("[" + chunk(`{"metadata":{"usage":{"inputTokens":20,"outputTokens":6}},"amazon-bedrock-invocationMetrics":{"inputTokenCount":21,"outputTokenCount":6}}`) + "]")})
	if err != nil || !strings.Contains(string(out.Body), `"prompt_tokens":21,"completion_tokens":6`) {
		t.Errorf("metrics: %s %v", out.Body, err)
	}
	_, err = (&Adapter{}).AdaptStream(pluginsdk.StreamInput{State: out.State,
		Batch: []byte(`[{"event":"throttlingException","exception":true,"data":{"message":"slow down"}}]`)})
	if pe, ok := err.(*pluginsdk.Error); !ok || pe.Code != 429 || !strings.Contains(pe.Message, "slow down") {
		t.Errorf("exception: %v", err)
	}
}
