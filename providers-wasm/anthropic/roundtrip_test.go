package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
)

// A Messages request through ingress_request and then adapt_request reaches
// Anthropic as the client sent it (the drop-in route must be lossless).
func TestRoundTripRequest(t *testing.T) {
	a := testAdapter()
	native := readGolden(t, "testdata/ingress/full.json").Input
	out, err := a.IngressRequest(native)
	unified := must(t, out, err)
	in, _ := json.Marshal(pluginsdk.AdaptRequestInput{RequestType: "chat.completion", Model: "claude-sonnet-4-20250514", Stream: true, Body: unified})
	out, err = a.AdaptRequest(in)
	spec := must(t, out, err)
	var s pluginsdk.UpstreamRequest
	if err := json.Unmarshal(spec, &s); err != nil {
		t.Fatal(err)
	}
	// The only normal-form differences: is_error false is the default, and
	// a tool_result's string content stays a string.
	var m map[string]any
	_ = json.Unmarshal(native, &m)
	msgs := m["messages"].([]any)
	delete(msgs[2].(map[string]any)["content"].([]any)[0].(map[string]any), "is_error")
	want, _ := json.Marshal(m)
	assertJSONEqual(t, "round trip", want, s.Body)
}

// A Messages response through adapt_response and egress_response comes
// back as Anthropic sent it, tool input and usage included.
func TestRoundTripResponse(t *testing.T) {
	a := testAdapter()
	msg := readTestdata(t, "fake_message_tool_thinking.json")
	in, _ := json.Marshal(pluginsdk.AdaptResponseInput{RequestType: "chat.completion", Status: 200, Body: msg})
	out, err := a.AdaptResponse(in)
	unified := must(t, out, err)
	out, err = a.EgressResponse(unified)
	back := must(t, out, err)
	// service_tier has no unified equivalent.
	want := strings.Replace(string(msg), `,"service_tier":"standard"`, "", 1)
	assertJSONEqual(t, "round trip", []byte(want), back)
}

// A recorded stream through adapt_stream and egress_stream rebuilds the
// same message: same blocks, text, tool input, signature, stop reason and
// usage, whatever the batching.
func TestRoundTripStream(t *testing.T) {
	a := testAdapter()
	for _, file := range []string{"fake_stream_tool_thinking.sse", "fake_stream_text.sse", "two_tools.sse"} {
		events := readSSE(t, readTestdata(t, file))
		var orig []json.RawMessage
		for _, ev := range events {
			b, _ := json.Marshal(map[string]any{"event": ev.Event, "data": ev.Data})
			orig = append(orig, b)
		}
		for _, n := range []int{1, 3, 0} {
			chunks := runStream(t, a.AdaptStream, splitBatches(t, events, n))
			var batches [][]byte
			for _, c := range chunks {
				batches = append(batches, arrayOf([]json.RawMessage{c}))
			}
			back := runStream(t, a.EgressStream, batches)
			assertJSONEqual(t, file, accumulate(t, orig), accumulate(t, back))
		}
	}
}

// accumulate folds native stream events into the final message the way an
// SDK does: blocks by index, deltas appended, usage merged.
func accumulate(t *testing.T, events []json.RawMessage) []byte {
	t.Helper()
	type blk struct {
		Type, Text, Thinking, Signature, ID, Name, Input string
	}
	var msg struct {
		ID, Model, Stop string
		Blocks          []*blk
		In, Out, CR, CW float64
	}
	for _, raw := range events {
		var ev struct {
			Event string         `json:"event"`
			Data  map[string]any `json:"data"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		d := ev.Data
		usage := func(u any) {
			m, _ := u.(map[string]any)
			for k, v := range m {
				f, _ := v.(float64)
				switch k {
				case "input_tokens":
					msg.In = f
				case "output_tokens":
					msg.Out = f
				case "cache_read_input_tokens":
					msg.CR = f
				case "cache_creation_input_tokens":
					msg.CW = f
				}
			}
		}
		switch ev.Event {
		case "message_start":
			m := d["message"].(map[string]any)
			msg.ID, msg.Model = m["id"].(string), m["model"].(string)
			usage(m["usage"])
		case "content_block_start":
			cb := d["content_block"].(map[string]any)
			b := &blk{Type: cb["type"].(string)}
			b.ID, _ = cb["id"].(string)
			b.Name, _ = cb["name"].(string)
			msg.Blocks = append(msg.Blocks, b)
		case "content_block_delta":
			b := msg.Blocks[int(d["index"].(float64))]
			dl := d["delta"].(map[string]any)
			for k, v := range dl {
				s, _ := v.(string)
				switch k {
				case "text":
					b.Text += s
				case "thinking":
					b.Thinking += s
				case "signature":
					b.Signature += s
				case "partial_json":
					b.Input += s
				}
			}
		case "message_delta":
			msg.Stop, _ = d["delta"].(map[string]any)["stop_reason"].(string)
			usage(d["usage"])
		}
	}
	out, _ := json.Marshal(msg)
	return out
}
