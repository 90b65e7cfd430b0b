package mcpgw_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/fakeupstream"
	"github.com/wasmgate/gateway/host/internal/testgw"
)

const user = `"messages":[{"role":"user","content":"what is 2+3?"}]`

func chatBody(extra string) string {
	return `{"model":"openai/gpt-4o-mini",` + user + extra + `}`
}

// upstreamBodies decodes what the fake model received.
func upstreamBodies(t *testing.T, f *fakeupstream.Server) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range f.Requests() {
		var m map[string]any
		if err := json.Unmarshal(r.Body, &m); err != nil {
			t.Fatalf("upstream body %s: %v", r.Body, err)
		}
		out = append(out, m)
	}
	return out
}

type chatAnswer struct {
	Choices []struct {
		Message struct {
			Content   *string
			ToolCalls []struct {
				ID       string
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
		}
		FinishReason string `json:"finish_reason"`
	}
}

func decodeAnswer(t *testing.T, r *testgw.Response) chatAnswer {
	t.Helper()
	var a chatAnswer
	r.Decode(t, &a)
	if len(a.Choices) != 1 {
		t.Fatalf("answer: %s", r.Body)
	}
	return a
}

func toolNames(tools any) []string {
	var names []string
	for _, tl := range tools.([]any) {
		names = append(names, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	return names
}

// TestToolLoopExecutesAndAnswers: the model asks for calc-add with its
// arguments; the gateway executes it on the real MCP server, sends the
// result back as a tool message and returns the model's final answer.
func TestToolLoopExecutesAndAnswers(t *testing.T) {
	e := start(t, testgw.Options{})
	e.fake.ScriptChatTools([]fakeupstream.ScriptedToolCall{{Name: "calc-add", Arguments: `{"a":2,"b":3}`}})
	r := e.g.Do("POST", "/v1/chat/completions", chatBody(`,"mcp":{"tools":["*"],"auto_execute":true}`))
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	a := decodeAnswer(t, r)
	if a.Choices[0].FinishReason != "stop" || a.Choices[0].Message.Content == nil || *a.Choices[0].Message.Content != "tool results: 5" {
		t.Fatalf("final answer: %s", r.Body)
	}
	if r.Header.Get("X-Gw-Mcp-Steps") != "1" || r.Header.Get("X-Gw-Mcp-Tool-Calls") != "1" || r.Header.Get("X-Gw-Mcp-Stopped") != "" {
		t.Fatalf("headers: %v", r.Header)
	}
	if got := e.calc.Calls(); !slices.Equal(got, []string{`add {"a":2,"b":3}`}) {
		t.Fatalf("the MCP server saw %v, want the model's arguments", got)
	}
	bodies := upstreamBodies(t, e.fake)
	if len(bodies) != 2 {
		t.Fatalf("model called %d times", len(bodies))
	}
	for i, b := range bodies {
		if _, leaked := b["mcp"]; leaked {
			t.Fatalf("call %d: the gateway field reached the upstream", i)
		}
		if got := toolNames(b["tools"]); !slices.Equal(got, []string{"calc-add", "calc-fail"}) {
			t.Fatalf("call %d: tools %v", i, got)
		}
	}
	msgs := bodies[1]["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("second call messages: %v", msgs)
	}
	asst, tool := msgs[1].(map[string]any), msgs[2].(map[string]any)
	tc := asst["tool_calls"].([]any)[0].(map[string]any)
	if asst["role"] != "assistant" || tc["id"] != "call_0_0" || tc["function"].(map[string]any)["arguments"] != `{"a":2,"b":3}` {
		t.Fatalf("assistant message: %v", asst)
	}
	if tool["role"] != "tool" || tool["tool_call_id"] != "call_0_0" || tool["content"] != "5" {
		t.Fatalf("tool message: %v", tool)
	}

	// Every model call and the tool call are in the request log.
	deadline := time.Now().Add(5 * time.Second)
	for {
		lr := e.g.Expect(200, "GET", "/api/logs?limit=10", nil)
		var logs struct {
			Logs []struct{ Object, Provider, Model, Status string }
		}
		lr.Decode(t, &logs)
		var kinds []string
		for _, l := range logs.Logs {
			kinds = append(kinds, l.Object+":"+l.Provider+":"+l.Model)
		}
		slices.Sort(kinds)
		want := []string{"chat.completion:openai:openai/gpt-4o-mini", "chat.completion:openai:openai/gpt-4o-mini", "mcp_tool:mcp:calc-add"}
		if slices.Equal(kinds, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("logs %v, want %v", kinds, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestToolLoopStepBound: a model that never stops asking for tools gets
// max_steps rounds of execution, then its last answer (with the unexecuted
// tool calls) is returned and marked.
func TestToolLoopStepBound(t *testing.T) {
	e := start(t, testgw.Options{})
	var turns [][]fakeupstream.ScriptedToolCall
	for i := range 10 {
		turns = append(turns, []fakeupstream.ScriptedToolCall{{Name: "calc-add", Arguments: fmt.Sprintf(`{"a":%d,"b":1}`, i)}})
	}
	e.fake.ScriptChatTools(turns...)
	r := e.g.Do("POST", "/v1/chat/completions", chatBody(`,"mcp":{"auto_execute":true,"max_steps":2}`))
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	a := decodeAnswer(t, r)
	if a.Choices[0].FinishReason != "tool_calls" || r.Header.Get("X-Gw-Mcp-Stopped") != "max_steps" ||
		r.Header.Get("X-Gw-Mcp-Steps") != "2" || r.Header.Get("X-Gw-Mcp-Tool-Calls") != "2" {
		t.Fatalf("%v %s", r.Header, r.Body)
	}
	if n := len(e.fake.Requests()); n != 3 {
		t.Fatalf("model called %d times, want 3 (max_steps+1)", n)
	}
	if got := e.calc.Calls(); len(got) != 2 {
		t.Fatalf("tools executed %v, want 2", got)
	}

	// The configured default bounds a request that names none.
	e2 := start(t, testgw.Options{Env: []string{"GATEWAY_MCP_GATEWAY__DEFAULT_MAX_STEPS=1"}})
	e2.fake.ScriptChatTools(turns...)
	r = e2.g.Do("POST", "/v1/chat/completions", chatBody(`,"mcp":{"auto_execute":true}`))
	if r.Status != 200 || r.Header.Get("X-Gw-Mcp-Stopped") != "max_steps" || len(e2.fake.Requests()) != 2 {
		t.Fatalf("default bound: %d %v, %d model calls", r.Status, r.Header, len(e2.fake.Requests()))
	}
	// Beyond the configured limit is refused, naming the field.
	r = e.g.Do("POST", "/v1/chat/completions", chatBody(`,"mcp":{"auto_execute":true,"max_steps":11}`))
	testgw.WantEnvelope(t, r, 400, "invalid_value")
	if !strings.Contains(string(r.Body), `"param":"mcp.max_steps"`) {
		t.Fatalf("%s", r.Body)
	}
}

// TestToolLoopFeedsErrorsBack: in one turn of two parallel tool calls, a
// tool that fails and arguments that are not JSON both reach the model as
// tool messages, in order, and the loop goes on to the final answer.
func TestToolLoopFeedsErrorsBack(t *testing.T) {
	e := start(t, testgw.Options{})
	e.fake.ScriptChatTools([]fakeupstream.ScriptedToolCall{
		{Name: "calc-fail", Arguments: `{"why":"test"}`},
		{Name: "calc-add", Arguments: `{"a":1,`},
	})
	r := e.g.Do("POST", "/v1/chat/completions", chatBody(`,"mcp":{"auto_execute":true}`))
	if r.Status != 200 || r.Header.Get("X-Gw-Mcp-Tool-Calls") != "2" {
		t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
	}
	bodies := upstreamBodies(t, e.fake)
	if len(bodies) != 2 {
		t.Fatalf("model called %d times; answer %s", len(bodies), r.Body)
	}
	msgs := bodies[1]["messages"].([]any)
	if len(msgs) != 4 {
		t.Fatalf("messages %v", msgs)
	}
	failMsg, badArgs := msgs[2].(map[string]any), msgs[3].(map[string]any)
	if got := fmt.Sprint(failMsg["content"]); failMsg["tool_call_id"] != "call_0_0" || !strings.HasPrefix(got, "Error: ") ||
		!strings.Contains(got, "boom: the calculator is on fire") {
		t.Fatalf("tool error fed back as %v", failMsg)
	}
	if got := fmt.Sprint(badArgs["content"]); badArgs["tool_call_id"] != "call_0_1" || !strings.Contains(got, "not a JSON object") {
		t.Fatalf("bad arguments fed back as %v", badArgs)
	}
	if got := e.calc.Calls(); !slices.Equal(got, []string{`fail {"why":"test"}`}) {
		t.Fatalf("executed %v (bad arguments must not reach the tool)", got)
	}
	a := decodeAnswer(t, r)
	if c := *a.Choices[0].Message.Content; !strings.Contains(c, "boom") || !strings.Contains(c, "not a JSON object") {
		t.Fatalf("final: %s", r.Body)
	}
}

// TestToolLoopStopsAtClientTools: when the model calls a tool of the
// caller's own, the gateway cannot run it and hands the answer over.
func TestToolLoopStopsAtClientTools(t *testing.T) {
	e := start(t, testgw.Options{})
	e.fake.ScriptChatTools([]fakeupstream.ScriptedToolCall{{Name: "get_weather", Arguments: `{}`}})
	own := `,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`
	r := e.g.Do("POST", "/v1/chat/completions", chatBody(own+`,"mcp":{"tools":["calc-add"],"auto_execute":true}`))
	if r.Status != 200 || r.Header.Get("X-Gw-Mcp-Stopped") != "client_tools" {
		t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
	}
	a := decodeAnswer(t, r)
	if a.Choices[0].Message.ToolCalls[0].Function.Name != "get_weather" || len(e.calc.Calls()) != 0 {
		t.Fatalf("%s", r.Body)
	}
	if got := toolNames(upstreamBodies(t, e.fake)[0]["tools"]); !slices.Equal(got, []string{"get_weather", "calc-add"}) {
		t.Fatalf("tools sent %v: the caller's tools come first, then the selected MCP tools", got)
	}
}

// TestToolInjectionWithoutLoop: without auto_execute the selected tools are
// injected and the request takes the normal path, streaming included; the
// model's tool calls go to the caller.
func TestToolInjectionWithoutLoop(t *testing.T) {
	e := start(t, testgw.Options{})
	r := e.g.Do("POST", "/v1/chat/completions", `{"model":"openai/gpt-4o-mini","stream":true,`+user+`,"mcp":{"tools":["calc-add"]}}`)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"name":"calc-add"`) || !strings.Contains(string(r.Body), "data: [DONE]") {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	b := upstreamBodies(t, e.fake)[0]
	if _, leaked := b["mcp"]; leaked || b["stream"] != true {
		t.Fatalf("upstream body %v", b)
	}
	if got := toolNames(b["tools"]); !slices.Equal(got, []string{"calc-add"}) {
		t.Fatalf("tools %v", got)
	}
	if len(e.calc.Calls()) != 0 {
		t.Fatal("a tool ran without auto_execute")
	}
	// "<client>-*" selects a client's tools.
	e.g.Expect(200, "POST", "/v1/chat/completions", chatBody(`,"mcp":{"tools":["calc-*"]}`))
	if got := toolNames(upstreamBodies(t, e.fake)[1]["tools"]); !slices.Equal(got, []string{"calc-add", "calc-fail"}) {
		t.Fatalf("calc-*: %v", got)
	}
}

// TestChatWithoutMCPFieldIsUntouched: the marker inside a message is not
// the field; the body reaches the upstream byte for byte (but the model).
func TestChatWithoutMCPFieldIsUntouched(t *testing.T) {
	e := start(t, testgw.Options{})
	body := `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"say \"mcp\" twice"}],"temperature":0.5}`
	e.g.Expect(200, "POST", "/v1/chat/completions", body)
	want := strings.Replace(body, "openai/gpt-4o-mini", "gpt-4o-mini", 1)
	if got := string(e.fake.LastRequest().Body); got != want {
		t.Fatalf("upstream got %s, want %s", got, want)
	}
}

// TestMCPFieldValidation: bad mcp fields are 400 envelopes naming the field.
func TestMCPFieldValidation(t *testing.T) {
	e := start(t, testgw.Options{})
	cases := []struct{ extra, code, param string }{
		{`,"mcp":{"tools":["calc-nope"]}`, "mcp_tool_not_found", "mcp.tools[0]"},
		{`,"mcp":{"tools":["calc-add","calc-secret"]}`, "mcp_tool_not_found", "mcp.tools[1]"},
		{`,"mcp":{"tools":[]}`, "invalid_value", "mcp.tools"},
		{`,"mcp":{"auto_exec":true}`, "", "mcp.auto_exec"},
		{`,"mcp":{"max_steps":"3"}`, "", "mcp.max_steps"},
		{`,"mcp":{"max_steps":0}`, "invalid_value", "mcp.max_steps"},
		{`,"mcp":"yes"`, "", "mcp"},
		{`,"stream":true,"mcp":{"auto_execute":true}`, "unsupported_value", "stream"},
		{`,"n":2,"mcp":{"auto_execute":true}`, "unsupported_value", "n"},
		{`,"tools":{"x":1},"mcp":{}`, "invalid_type", "tools"},
		{`,"tools":[{"type":"function","function":{"name":"calc-add"}}],"mcp":{}`, "invalid_value", "tools[0]"},
	}
	for _, c := range cases {
		r := e.g.Do("POST", "/v1/chat/completions", chatBody(c.extra))
		m := testgw.WantEnvelope(t, r, 400, c.code)
		if p := m["error"].(map[string]any)["param"]; p != c.param {
			t.Errorf("%s: param %v, want %s (%s)", c.extra, p, c.param, r.Body)
		}
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Fatalf("%d invalid requests reached the model", n)
	}
}
