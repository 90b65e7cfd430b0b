package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
)

func TestNativeIngress(t *testing.T) {
	out, err := New().IngressRequest([]byte(`{"model":"command-r","stream":true,"p":0.5,"stop_sequences":["x"],"tool_choice":"REQUIRED",
	 "messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi"}]},
	  {"role":"assistant","tool_plan":"look","tool_calls":[{"id":"c1","type":"function","function":{"name":"lookup","arguments":"{}"}}]},
	  {"role":"tool","tool_call_id":"c1","content":[{"type":"document","document":{"data":"{\"a\":1}"}}]}],
	 "tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var u map[string]any
	if err := json.Unmarshal(out.Body, &u); err != nil {
		t.Fatal(err)
	}
	msgs := u["messages"].([]any)
	if u["model"] != "command-r" || u["top_p"] != 0.5 || u["tool_choice"] != "required" || u["stream"] != true || len(msgs) != 4 ||
		msgs[2].(map[string]any)["tool_calls"] == nil || msgs[3].(map[string]any)["tool_call_id"] != "c1" {
		t.Fatalf("unified: %s", out.Body)
	}
	if _, err := New().IngressRequest([]byte(`{"model":"x"}`)); err == nil {
		t.Fatal("no messages accepted")
	}
}

func TestNativeEgressStream(t *testing.T) {
	a := New()
	chunks := []string{
		`[{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":"hel"}}]},{"id":"c1","choices":[{"index":0,"delta":{"content":"lo"}}]}]`,
		`[{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t1","type":"function","function":{"name":"lookup","arguments":""}}]}}]},
		  {"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"echo\":"}}]}}]},
		  {"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"hello\"}"}}]}}]},
		  {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}]`,
		`[{"id":"c1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}]`,
	}
	var state []byte
	var types []string
	var all string
	for i, c := range chunks {
		out, err := a.EgressStream(pluginsdk.StreamInput{State: state, Batch: []byte(c), End: i == len(chunks)-1})
		if err != nil {
			t.Fatal(err)
		}
		state = out.State
		var evs []struct {
			Event string         `json:"event"`
			Data  map[string]any `json:"data"`
		}
		_ = json.Unmarshal(out.Body, &evs)
		for _, ev := range evs {
			types = append(types, ev.Event)
		}
		all += string(out.Body)
	}
	want := "message-start content-start content-delta content-delta content-end tool-call-start tool-call-delta tool-call-delta tool-call-end message-end"
	if strings.Join(types, " ") != want {
		t.Fatalf("events %v", types)
	}
	if !strings.Contains(all, `"finish_reason":"TOOL_CALL"`) || !strings.Contains(all, `"output_tokens":7`) {
		t.Fatalf("message-end: %s", all)
	}
}

func TestNativeEgressResponse(t *testing.T) {
	out, err := New().EgressResponse([]byte(`{"id":"r1","choices":[{"index":0,"message":{"role":"assistant","content":"hi",
	 "tool_calls":[{"id":"t1","type":"function","function":{"name":"lookup","arguments":"{}"}}]},"finish_reason":"tool_calls"}],
	 "usage":{"prompt_tokens":3,"completion_tokens":4}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := string(out.Body)
	for _, want := range []string{`"finish_reason":"TOOL_CALL"`, `"text":"hi"`, `"name":"lookup"`, `"input_tokens":3`, `"output_tokens":4`} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %s in %s", want, s)
		}
	}
	out, _ = New().EgressResponse([]byte(`{"error":{"message":"nope","type":"invalid_request_error"}}`))
	if string(out.Body) != `{"message":"nope"}` {
		t.Errorf("error: %s", out.Body)
	}
}
