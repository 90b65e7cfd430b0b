package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/apierr"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got (JSON or SSE text) with testdata/golden/name; JSON is
// indented first so the files review well.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	if json.Valid(got) {
		var buf bytes.Buffer
		if err := json.Indent(&buf, got, "", "  "); err != nil {
			t.Fatal(err)
		}
		got = append(buf.Bytes(), '\n')
	}
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestResponsesToChat(t *testing.T) {
	cases := []struct{ name, body string }{
		{"string_input", `{"model":"anthropic/claude-sonnet-4","input":"Hello <b>&</b>","instructions":"Be brief.",
			"max_output_tokens":256,"temperature":0.2,"top_p":0.9,"user":"u-1","store":true,"metadata":{"k":"v"},"top_k":5}`},
		{"tool_round_trip", `{"model":"gemini/gemini-2.5-pro","stream":true,"input":[
			{"role":"developer","content":"You are a weather bot."},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"Weather in Paris and Rome?"},
				{"type":"input_image","image_url":"https://example.com/map.png","detail":"high"}]},
			{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"xyz"},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking both.","annotations":[]}]},
			{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
			{"type":"function_call","call_id":"call_2","name":"get_weather","arguments":"{\"city\":\"Rome\"}"},
			{"type":"function_call_output","call_id":"call_1","output":"18C sunny"},
			{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"21C"},{"type":"input_text","text":" cloudy"}]},
			{"role":"user","content":"Thanks"}],
			"tools":[{"type":"function","name":"get_weather","description":"Weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true}],
			"tool_choice":{"type":"function","name":"get_weather"},"parallel_tool_calls":false,"reasoning":{"effort":"high","summary":"auto"}}`},
		{"json_schema", `{"model":"bedrock/claude","input":[{"role":"user","content":"List two colors"}],
			"text":{"format":{"type":"json_schema","name":"colors","schema":{"type":"object","properties":{"colors":{"type":"array","items":{"type":"string"}}}},"strict":true}},
			"tool_choice":"none","previous_response_id":null,"include":["reasoning.encrypted_content"]}`},
		{"json_object", `{"model":"cohere/command-r","input":"x","text":{"format":{"type":"json_object"}}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			chat, err := ResponsesToChat([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "responses_to_chat_"+tc.name+".json", chat)
		})
	}
}

func TestResponsesToChatErrors(t *testing.T) {
	cases := []struct{ body, param, code string }{
		{`[]`, "", CodeInvalidJSON},
		{`{"input":"x"}`, "model", CodeMissing},
		{`{"model":"a/b"}`, "input", CodeMissing},
		{`{"model":"a/b","input":7}`, "input", CodeInvalidType},
		{`{"model":"a/b","input":"x","previous_response_id":"resp_1"}`, "previous_response_id", CodeUnsupported},
		{`{"model":"a/b","input":"x","conversation":"conv_1"}`, "conversation", CodeUnsupported},
		{`{"model":"a/b","input":"x","background":true}`, "background", CodeUnsupported},
		{`{"model":"a/b","input":"x","tools":[{"type":"function","name":"f"},{"type":"web_search"}]}`, "tools[1].type", CodeUnsupported},
		{`{"model":"a/b","input":"x","tools":[{"type":"function"}]}`, "tools[0].name", CodeMissing},
		{`{"model":"a/b","input":"x","tool_choice":{"type":"web_search_preview"}}`, "tool_choice.type", CodeUnsupported},
		{`{"model":"a/b","input":"x","tool_choice":"sometimes"}`, "tool_choice", CodeInvalidType},
		{`{"model":"a/b","input":[{"role":"user","content":"a"},{"type":"computer_call","call_id":"c"}]}`, "input[1].type", CodeUnsupported},
		{`{"model":"a/b","input":[{"type":"item_reference","id":"msg_1"}]}`, "input[0].type", CodeUnsupported},
		{`{"model":"a/b","input":[{"role":"robot","content":"a"}]}`, "input[0].role", CodeInvalidType},
		{`{"model":"a/b","input":[{"role":"user","content":[{"type":"input_image","file_id":"file-1"}]}]}`, "input[0].content[0].file_id", CodeUnsupported},
		{`{"model":"a/b","input":[{"role":"user","content":[{"type":"input_file","file_id":"file-1"}]}]}`, "input[0].content[0].type", CodeUnsupported},
		{`{"model":"a/b","input":[{"type":"function_call","name":"f"}]}`, "input[0]", CodeMissing},
		{`{"model":"a/b","input":[{"type":"function_call_output","output":"x"}]}`, "input[0].call_id", CodeMissing},
		{`{"model":"a/b","input":"x","max_output_tokens":"many"}`, "max_output_tokens", CodeInvalidType},
		{`{"model":"a/b","input":"x","text":{"format":{"type":"json_schema","schema":{}}}}`, "text.format.name", CodeMissing},
		{`{"model":"a/b","input":"x","text":{"format":{"type":"grammar"}}}`, "text.format.type", CodeUnsupported},
	}
	for _, tc := range cases {
		_, err := ResponsesToChat([]byte(tc.body))
		assertBadRequest(t, tc.body, err, tc.param, tc.code)
	}
}

func assertBadRequest(t *testing.T, body string, err error, param, code string) {
	t.Helper()
	var ae *apierr.Error
	if !errors.As(err, &ae) {
		t.Errorf("%s: got %v, want an *apierr.Error", body, err)
		return
	}
	if ae.StatusCode != 400 || ae.Detail.Param != param || ae.Detail.Code != code || ae.Detail.Message == "" {
		t.Errorf("%s: got %d param=%q code=%q %q, want 400 param=%q code=%q", body, ae.StatusCode,
			ae.Detail.Param, ae.Detail.Code, ae.Detail.Message, param, code)
	}
	if code == CodeUnsupported && !strings.Contains(ae.Detail.Message, param) {
		t.Errorf("%s: message %q does not name %s", body, ae.Detail.Message, param)
	}
}

const chatWithTools = `{"id":"chatcmpl-abc123","object":"chat.completion","created":1750000000,"model":"claude-sonnet-4",
"choices":[{"index":0,"message":{"role":"assistant","content":"Checking both cities.","reasoning_content":"User wants two cities; call the tool twice.",
"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
{"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]},"finish_reason":"tool_calls"}],
"usage":{"prompt_tokens":120,"completion_tokens":80,"total_tokens":200,"prompt_tokens_details":{"cached_tokens":100},"completion_tokens_details":{"reasoning_tokens":30}}}`

func TestChatToResponse(t *testing.T) {
	req := `{"model":"anthropic/claude-sonnet-4","input":"Weather?","instructions":"Be brief.","temperature":0.5,
		"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}],
		"max_output_tokens":500,"metadata":{"trace":"t1"},"reasoning":{"effort":"medium"}}`
	_, echo, err := ResponsesToChatEcho([]byte(req))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, chat string
		echo       *Echo
	}{
		{"tools_reasoning_usage", chatWithTools, echo},
		{"length_no_echo", `{"id":"chatcmpl-2","created":1,"model":"gemini-2.5-pro","choices":[{"index":0,
			"message":{"role":"assistant","content":"Once upon a"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`, nil},
		{"refusal", `{"id":"x9","created":2,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := ChatToResponse([]byte(tc.chat), "anthropic/claude-sonnet-4", tc.echo)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "chat_to_response_"+tc.name+".json", out)
		})
	}
	if _, err := ChatToResponse([]byte(`{"id":`), "m"); err == nil || apierr.As(err).StatusCode != 502 {
		t.Errorf("malformed chat: got %v, want a 502", err)
	}
}

// streamChunks is a chat stream exercising every path: reasoning, text
// interleaved with two tool calls whose argument deltas alternate by index,
// a finish chunk, and a usage chunk with cached and reasoning tokens.
var streamChunks = []string{
	`{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1750000001,"model":"claude","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
	`{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1750000001,"model":"claude","choices":[{"index":0,"delta":{"reasoning_content":"Two cities, "},"finish_reason":null}]}`,
	`{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1750000001,"model":"claude","choices":[{"index":0,"delta":{"reasoning_content":"two calls."},"finish_reason":null}]}`,
	`{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1750000001,"model":"claude","choices":[{"index":0,"delta":{"content":"Checking "},"finish_reason":null}]}`,
	`{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1750000001,"model":"claude","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1750000001,"model":"claude","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1750000001,"model":"claude","choices":[{"index":0,"delta":{"content":"both."},"finish_reason":null}]}`,
	`{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1750000001,"model":"claude","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{\"tz\":"}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1750000001,"model":"claude","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1750000001,"model":"claude","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"CET\"}"}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1750000001,"model":"claude","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	`{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1750000001,"model":"claude","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":40,"total_tokens":90,"prompt_tokens_details":{"cached_tokens":32},"completion_tokens_details":{"reasoning_tokens":12}}}`,
}

// runResponsesStream converts chunks and returns the events in SSE form.
func runResponsesStream(t testing.TB, chunks []string) ([]Event, []byte) {
	_, echo, err := ResponsesToChatEcho([]byte(`{"model":"anthropic/claude-sonnet-4","input":"Weather and time?","stream":true,
		"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}},
		{"type":"function","name":"get_time","parameters":{"type":"object","properties":{"tz":{"type":"string"}}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s := NewResponsesStream("anthropic/claude-sonnet-4", echo)
	var events []Event
	for _, c := range chunks {
		ev, err := s.Chunk([]byte(c))
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev...)
	}
	events = append(events, s.End()...)
	var sse []byte
	for _, e := range events {
		sse = e.AppendSSE(sse)
	}
	return events, sse
}

func TestResponsesStream(t *testing.T) {
	events, sse := runResponsesStream(t, streamChunks)
	golden(t, "responses_stream.sse", sse)
	checkEventOrder(t, events)

	// The final object must say what ChatToResponse would for the same answer.
	var last struct {
		Response struct {
			Status string `json:"status"`
			Output []struct {
				Type      string `json:"type"`
				Arguments string `json:"arguments"`
				Content   []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"output"`
			Usage struct {
				InputTokensDetails struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"input_tokens_details"`
				OutputTokensDetails struct {
					ReasoningTokens int `json:"reasoning_tokens"`
				} `json:"output_tokens_details"`
			} `json:"usage"`
		} `json:"response"`
	}
	final := events[len(events)-1]
	if final.Name != "response.completed" {
		t.Fatalf("last event %s", final.Name)
	}
	if err := json.Unmarshal(final.Data, &last); err != nil {
		t.Fatal(err)
	}
	var kinds, text, args []string
	for _, o := range last.Response.Output {
		kinds = append(kinds, o.Type)
		for _, c := range o.Content {
			text = append(text, c.Text)
		}
		if o.Type == "function_call" {
			args = append(args, o.Arguments)
		}
	}
	if got := strings.Join(kinds, ","); got != "reasoning,message,function_call,message,function_call" {
		t.Errorf("output items %s", got)
	}
	if got := strings.Join(text, ""); got != "Checking both." {
		t.Errorf("text %q", got)
	}
	if got := strings.Join(args, "|"); got != `{"city":"Paris"}|{"tz":"CET"}` {
		t.Errorf("arguments %s", got)
	}
	u := last.Response.Usage
	if u.InputTokensDetails.CachedTokens != 32 || u.OutputTokensDetails.ReasoningTokens != 12 {
		t.Errorf("usage %+v", u)
	}
}

// checkEventOrder asserts the rules clients rely on: increasing sequence
// numbers, type equal to the event name, created/in_progress first, one
// item at a time, and each item's events in the documented order.
func checkEventOrder(t *testing.T, events []Event) {
	t.Helper()
	open := -1
	for i, e := range events {
		var d struct {
			Type        string `json:"type"`
			Seq         int    `json:"sequence_number"`
			OutputIndex *int   `json:"output_index"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if d.Type != e.Name || d.Seq != i {
			t.Fatalf("event %d: type %q name %q seq %d", i, d.Type, e.Name, d.Seq)
		}
		switch {
		case i == 0 && e.Name != "response.created", i == 1 && e.Name != "response.in_progress":
			t.Fatalf("event %d is %s", i, e.Name)
		case e.Name == "response.output_item.added":
			if open != -1 || *d.OutputIndex != lastIndex(events[:i])+1 {
				t.Fatalf("event %d: item %d added while %d open", i, *d.OutputIndex, open)
			}
			open = *d.OutputIndex
		case e.Name == "response.output_item.done":
			if *d.OutputIndex != open {
				t.Fatalf("event %d: item %d done while %d open", i, *d.OutputIndex, open)
			}
			open = -1
		case d.OutputIndex != nil && *d.OutputIndex != open:
			t.Fatalf("event %d (%s) for item %d while %d open", i, e.Name, *d.OutputIndex, open)
		}
	}
	if open != -1 {
		t.Fatalf("item %d never done", open)
	}
}

func lastIndex(events []Event) int {
	n := -1
	for _, e := range events {
		if e.Name == "response.output_item.added" {
			n++
		}
	}
	return n
}

func TestResponsesStreamEdges(t *testing.T) {
	// Cut off by the token limit: response.incomplete, as OpenAI ends it.
	events, _ := runResponsesStream(t, []string{
		`{"id":"c","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Once"},"finish_reason":null}]}`,
		`{"id":"c","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`,
	})
	if last := events[len(events)-1]; last.Name != "response.incomplete" || !bytes.Contains(last.Data, []byte(`"reason":"max_output_tokens"`)) {
		t.Errorf("length: last event %s %s", last.Name, last.Data)
	}
	checkEventOrder(t, events)

	// No chunk at all: the stream still opens and then fails.
	s := NewResponsesStream("m")
	events = s.End()
	if len(events) != 3 || events[2].Name != "response.failed" {
		t.Errorf("empty stream: %v", events)
	}
	if s.End() != nil {
		t.Error("End twice emitted events")
	}

	// Mid-stream failure.
	s = NewResponsesStream("m")
	if _, err := s.Chunk([]byte(`{"id":"c","choices":[{"index":0,"delta":{"content":"a"}}]}`)); err != nil {
		t.Fatal(err)
	}
	events = s.Fail("upstream_error", "overloaded")
	if events[len(events)-1].Name != "response.failed" || !bytes.Contains(events[0].Data, []byte(`"overloaded"`)) {
		t.Errorf("fail: %s", events[0].Data)
	}
	if _, err := s.Chunk([]byte(`{`)); err != nil {
		t.Error("chunk after the end should be ignored")
	}
	if _, err := NewResponsesStream("m").Chunk([]byte(`{`)); err == nil || apierr.As(err).StatusCode != 502 {
		t.Errorf("malformed chunk: %v", err)
	}
}

func TestCompletionToChat(t *testing.T) {
	chat, err := CompletionToChat([]byte(`{"model":"anthropic/claude","prompt":["Say hi"],"max_tokens":16,"temperature":0,
		"top_p":1,"stop":["\n"],"stream":true,"stream_options":{"include_usage":true},"n":1,"logprobs":2,"echo":false,"seed":7}`))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "completion_to_chat.json", chat)

	for _, tc := range []struct{ body, param, code string }{
		{`{"model":"a/b"}`, "prompt", CodeMissing},
		{`{"model":"a/b","prompt":["a","b"]}`, "prompt", CodeUnsupported},
		{`{"model":"a/b","prompt":[[1,2,3]]}`, "prompt", CodeUnsupported},
		{`{"model":"a/b","prompt":"a","suffix":"z"}`, "suffix", CodeUnsupported},
		{`{"model":"a/b","prompt":"a","echo":true}`, "echo", CodeUnsupported},
		{`{"model":"a/b","prompt":"a","stop":5}`, "stop", CodeInvalidType},
		{`{"prompt":"a"}`, "model", CodeMissing},
	} {
		_, err := CompletionToChat([]byte(tc.body))
		assertBadRequest(t, tc.body, err, tc.param, tc.code)
	}
}

func TestChatToCompletion(t *testing.T) {
	out, err := ChatToCompletion([]byte(chatWithTools), "anthropic/claude-sonnet-4")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "chat_to_completion.json", out)
}

func TestCompletionStream(t *testing.T) {
	s := NewCompletionStream("anthropic/claude")
	var sse []byte
	for _, c := range []string{
		`{"id":"chatcmpl-c1","created":5,"model":"claude","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"id":"chatcmpl-c1","created":5,"model":"claude","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`,
		`{"id":"chatcmpl-c1","created":5,"model":"claude","choices":[{"index":0,"delta":{"content":" there"},"finish_reason":null}]}`,
		`{"id":"chatcmpl-c1","created":5,"model":"claude","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`,
		`{"id":"chatcmpl-c1","created":5,"model":"claude","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6,"prompt_tokens_details":{"cached_tokens":1}}}`,
		`[DONE]`,
	} {
		ev, err := s.Chunk([]byte(c))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ev {
			sse = e.AppendSSE(sse)
		}
	}
	sse = append(sse, "data: [DONE]\n\n"...)
	golden(t, "completion_stream.sse", sse)
}
