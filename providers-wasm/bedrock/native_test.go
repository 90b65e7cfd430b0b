package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
)

func TestNativeIngress(t *testing.T) {
	out, err := New().IngressRequest([]byte(`{"model":"openai/gpt-4o-mini","stream":true,"body":{
	 "system":[{"text":"be brief"}],
	 "messages":[{"role":"user","content":[{"text":"hi"}]},
	  {"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"lookup","input":{"a":1}}}]},
	  {"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"json":{"ok":true}}]}}]}],
	 "inferenceConfig":{"maxTokens":64,"temperature":0.2,"stopSequences":["x"]},
	 "toolConfig":{"tools":[{"toolSpec":{"name":"lookup","inputSchema":{"json":{"type":"object"}}}}],"toolChoice":{"any":{}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var u map[string]any
	if err := json.Unmarshal(out.Body, &u); err != nil {
		t.Fatal(err)
	}
	msgs := u["messages"].([]any)
	if u["model"] != "openai/gpt-4o-mini" || u["max_tokens"] != float64(64) || u["tool_choice"] != "required" || len(msgs) != 4 ||
		msgs[0].(map[string]any)["role"] != "system" || msgs[3].(map[string]any)["tool_call_id"] != "t1" {
		t.Fatalf("unified: %s", out.Body)
	}
	if !strings.Contains(string(out.Body), `"arguments":"{\"a\":1}"`) {
		t.Fatalf("tool use arguments: %s", out.Body)
	}
}

func TestNativeEgressStream(t *testing.T) {
	a := New()
	batches := []string{
		`[{"choices":[{"index":0,"delta":{"role":"assistant","content":"hello"}}]}]`,
		`[{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t1","type":"function","function":{"name":"lookup","arguments":""}}]}}]},
		  {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"echo\":\"hello\"}"}}]}}]},
		  {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]},
		  {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}]`,
		`[]`,
	}
	var state []byte
	var types []string
	var all string
	for i, b := range batches {
		out, err := a.EgressStream(pluginsdk.StreamInput{State: state, Batch: []byte(b), End: i == len(batches)-1})
		if err != nil {
			t.Fatal(err)
		}
		state = out.State
		var evs []struct {
			Event string `json:"event"`
		}
		_ = json.Unmarshal(out.Body, &evs)
		for _, ev := range evs {
			types = append(types, ev.Event)
		}
		all += string(out.Body)
	}
	want := "messageStart contentBlockDelta contentBlockStop contentBlockStart contentBlockDelta contentBlockStop messageStop metadata"
	if strings.Join(types, " ") != want {
		t.Fatalf("events %v", types)
	}
	if !strings.Contains(all, `"stopReason":"tool_use"`) || !strings.Contains(all, `"outputTokens":7`) || !strings.Contains(all, `"contentBlockIndex":1`) {
		t.Fatalf("events: %s", all)
	}
}

func TestNativeEgressStreamError(t *testing.T) {
	out, err := New().EgressStream(pluginsdk.StreamInput{Batch: []byte(`[{"error":{"message":"boom"}}]`), End: true})
	if err != nil || !strings.Contains(string(out.Body), `"exception":"modelStreamErrorException"`) {
		t.Fatalf("%v %s", err, out.Body)
	}
}
