package convert

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzResponsesToChat: any body either converts to a valid JSON chat
// request or fails with a 400; never a panic.
func FuzzResponsesToChat(f *testing.F) {
	for _, s := range []string{
		`{"model":"a/b","input":"hi"}`,
		`{"model":"a/b","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"x"}]}]}`,
		`{"model":"a/b","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:x"}]}],"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"f"},"text":{"format":{"type":"json_schema","name":"n","schema":{}}}}`,
		`{"model":"a/b","input":[{"role":"user","content":null}],"reasoning":{"effort":null}}`,
		`{"model":"a/b","input":[{}]}`, `{"model":"a/b","input":[1]}`, `null`, `{"model":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		chat, err := ResponsesToChat(body)
		if err == nil && !json.Valid(chat) {
			t.Fatalf("invalid chat JSON %s from %s", chat, body)
		}
		if err != nil && chat != nil {
			t.Fatal("error with output")
		}
		_, _ = CompletionToChat(body)
	})
}

// FuzzResponsesStream cuts a chat stream at fuzzed points, edits chunks and
// checks the converter never panics and always emits well-formed events in
// increasing sequence.
func FuzzResponsesStream(f *testing.F) {
	var all []byte
	for _, c := range streamChunks {
		all = append(append(all, c...), '\n')
	}
	f.Add(all)
	f.Add([]byte(`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"{"}},{"index":0,"function":{"arguments":"}"}}]}}]}` + "\n" +
		`{"choices":[{"delta":{"content":"a"}}]}` + "\n" + `{"choices":[{"delta":{"reasoning":"r"},"finish_reason":"length"}]}`))
	f.Add([]byte("[DONE]\n{}\n{\"choices\":null}\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		s := NewResponsesStream("m")
		cs := NewCompletionStream("m")
		var events []Event
		for _, line := range bytes.Split(stream, []byte("\n")) {
			ev, _ := s.Chunk(line)
			events = append(events, ev...)
			_, _ = cs.Chunk(line)
		}
		events = append(events, s.End()...)
		for i, e := range events {
			var d struct {
				Type string `json:"type"`
				Seq  int    `json:"sequence_number"`
			}
			if err := json.Unmarshal(e.Data, &d); err != nil || d.Type != e.Name || d.Seq != i {
				t.Fatalf("event %d malformed: %s", i, e.Data)
			}
		}
		if n := len(events); n < 3 || (events[n-1].Name != "response.completed" &&
			events[n-1].Name != "response.incomplete" && events[n-1].Name != "response.failed") {
			t.Fatalf("stream does not end in a terminal event: %d events", n)
		}
	})
}
