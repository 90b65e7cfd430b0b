package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
)

func TestIngressGolden(t *testing.T) {
	in, _ := os.ReadFile("testdata/native/ingress.json")
	out, err := New().IngressRequest(compact(t, in))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/native/ingress.golden", out.Body)
	var req pluginsdk.ChatRequest
	if err := json.Unmarshal(out.Body, &req); err != nil {
		t.Fatalf("not a unified request: %v", err)
	}
}

// A native request through ingress and back out through adapt_request
// keeps the conversation, including the thought signature and the
// pairing of parallel calls with their answers.
func TestIngressThenAdaptRequest(t *testing.T) {
	in, _ := os.ReadFile("testdata/native/ingress.json")
	u, err := New().IngressRequest(compact(t, in))
	if err != nil {
		t.Fatal(err)
	}
	env, _ := json.Marshal(pluginsdk.AdaptRequestInput{RequestType: pluginsdk.RequestChat, Provider: "gemini", Model: "gemini-2.5-flash", Stream: true, Body: u.Body})
	spec, err := New().AdaptRequest(env)
	if err != nil {
		t.Fatal(err)
	}
	s := string(spec.Body)
	for _, want := range []string{
		`{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"c2lnLTE="}`,
		`{"functionCall":{"name":"get_weather","args":{"city":"Rome"}}}`,
		`{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"t":21}}},{"functionResponse":{"name":"get_weather","response":{"t":25}}}]}`,
		`"systemInstruction":{"parts":[{"text":"Be terse."}]}`,
		`{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}}`,
		`"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["get_weather"]}}`,
		`"safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]`,
		`streamGenerateContent?alt=sse`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %s in\n%s", want, s)
		}
	}
}

func TestEgressResponseGolden(t *testing.T) {
	in, _ := os.ReadFile("testdata/response/chat_tool_thought.golden")
	out, err := New().EgressResponse(compact(t, in))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/native/egress_response.golden", out.Body)
}

// Unified chunks from the fake transcript, and OpenAI-style fragmented
// tool-call arguments, become Gemini events with whole function calls and
// usage on the finishing event.
func TestEgressStream(t *testing.T) {
	chunks, _ := os.ReadFile("testdata/stream_fake.golden")
	a := New()
	out, err := a.EgressStream(pluginsdk.StreamInput{Batch: compact(t, chunks), End: true})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/native/egress_stream.golden", out.Body)

	frag := []string{
		`[{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]},"finish_reason":null}]}]`,
		`[{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":null}]}]`,
		`[{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}]`,
		`[{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}]`,
	}
	var state []byte
	var events []string
	for i, b := range frag {
		out, err := a.EgressStream(pluginsdk.StreamInput{State: state, Batch: []byte(b), End: i == len(frag)-1})
		if err != nil {
			t.Fatal(err)
		}
		state = append([]byte(nil), out.State...)
		if string(out.Body) != "[]" {
			events = append(events, string(out.Body))
		}
	}
	want := `[{"data":{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":4,"totalTokenCount":7},"modelVersion":"gpt","responseId":"x"}}]`
	if len(events) != 1 || events[0] != want {
		t.Fatalf("events:\n%s\nwant\n%s", strings.Join(events, "\n"), want)
	}
}
