package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// Event is one server-sent event of a converted stream.
type Event struct {
	// Name is the SSE event name; for the Responses wire it equals the
	// "type" inside Data. Empty for the Completions wire (data lines only).
	Name string
	// Data is the JSON payload, on one line.
	Data []byte
}

// AppendSSE appends the event in wire form: "event: <Name>" (when named),
// "data: <Data>" and the blank line ending the event.
func (e Event) AppendSSE(dst []byte) []byte {
	if e.Name != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, e.Name...)
		dst = append(dst, '\n')
	}
	dst = append(dst, "data: "...)
	dst = append(dst, e.Data...)
	return append(dst, '\n', '\n')
}

// chatChunk is one unified chat.completion.chunk, read leniently.
type chatChunk struct {
	ID      string `json:"id"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			Reasoning        *string `json:"reasoning"`
			ToolCalls        []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *chatUsage `json:"usage"`
}

type itemKind uint8

const (
	kindMessage itemKind = iota
	kindReasoning
	kindCall
)

// streamItem is one output item of the response being streamed.
type streamItem struct {
	kind     itemKind
	outIndex int
	id       string
	text     strings.Builder // message text, reasoning summary or arguments
	call     *callState
	closed   bool
}

// callState is one chat tool call, keyed by its chat index.
type callState struct {
	id, name string
	item     *streamItem
}

// delta is a piece of content for one item, queued while another item is
// still open.
type delta struct {
	kind itemKind
	call *callState
	text string
}

// ResponsesStream converts a unified chat chunk stream into the Responses
// API event stream. It is not safe for concurrent use; one per stream.
//
// The Responses wire streams one output item at a time: added, deltas,
// done, then the next item. Chat chunks may interleave text and several
// tool calls by index, so content for another item than the open one is
// queued until the open item is finished. A text or reasoning item is
// finished as soon as other content arrives (later text opens a new message
// item, which clients concatenate); a tool call is finished once its
// arguments are complete JSON, since nothing can follow a complete object.
// Nothing is dropped or reordered within an item.
type ResponsesStream struct {
	model   string
	echo    *Echo
	resp    *response
	chatID  string
	seq     int
	started bool
	ended   bool

	items   []*streamItem
	active  *streamItem
	pending []delta
	calls   map[int]*callState
	nMsg    int
	nRs     int
	finish  string
	usage   *chatUsage
}

// NewResponsesStream starts a stream conversion. model is the model the
// client asked for (the chunks' model when empty); echo, from
// ResponsesToChatEcho, fills the response's request echo fields.
func NewResponsesStream(model string, echo ...*Echo) *ResponsesStream {
	return &ResponsesStream{model: model, echo: firstEcho(echo), calls: map[int]*callState{}}
}

// Chunk converts one unified chat chunk into the events it completes. A
// chunk that is not JSON is an upstream fault (502 error); "[DONE]" is
// ignored, End finishes the stream.
func (s *ResponsesStream) Chunk(chunk []byte) ([]Event, error) {
	t := bytes.TrimSpace(chunk)
	if s.ended || len(t) == 0 || string(t) == "[DONE]" || string(t) == `"[DONE]"` {
		return nil, nil
	}
	var c chatChunk
	if err := json.Unmarshal(t, &c); err != nil {
		return nil, upstreamMalformed("stream chunk", err)
	}
	var out []Event
	if !s.started {
		out = s.start(c.ID, c.Created, c.Model, out)
	}
	if c.Usage != nil {
		s.usage = c.Usage
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // the Responses API has no n: only choice 0 exists
		}
		d := &ch.Delta
		r := d.ReasoningContent
		if r == nil {
			r = d.Reasoning
		}
		if r != nil && *r != "" {
			out = s.push(delta{kind: kindReasoning, text: *r}, out)
		}
		if d.Content != nil && *d.Content != "" {
			out = s.push(delta{kind: kindMessage, text: *d.Content}, out)
		}
		for j, tc := range d.ToolCalls {
			idx := j
			if tc.Index != nil {
				idx = *tc.Index
			}
			cs := s.calls[idx]
			if cs == nil {
				cs = &callState{id: tc.ID, name: tc.Function.Name}
				if cs.id == "" {
					cs.id = fmt.Sprintf("call_%s_%d", idPart(s.chatID), idx)
				}
				s.calls[idx] = cs
			} else if cs.name == "" {
				cs.name = tc.Function.Name
			}
			out = s.push(delta{kind: kindCall, call: cs, text: tc.Function.Arguments}, out)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			s.finish = *ch.FinishReason
			// Every item is finished: close them now rather than at End,
			// so clients see done events before the usage chunk arrives.
			out = s.closeAll(out)
		}
	}
	return out, nil
}

// End finishes the stream: closes what is open and sends response.completed
// (response.incomplete when the answer was cut off, as OpenAI does) with
// the full response object and usage. A stream that produced no chunk at
// all ends in response.failed.
func (s *ResponsesStream) End() []Event {
	if s.ended {
		return nil
	}
	var out []Event
	if !s.started {
		out = s.start("", 0, "", out)
		out = s.fail("server_error", "the provider's stream ended without any output", out)
		s.ended = true
		return out
	}
	out = s.closeAll(out)
	s.ended = true
	r := s.snapshot()
	r.finish(s.finish)
	r.Usage = convertUsage(s.usage)
	name := "response.completed"
	if r.Status == "incomplete" {
		name = "response.incomplete"
	}
	return s.emit(out, name, "response", r)
}

// Fail ends the stream with response.failed, for an upstream error in the
// middle of the stream: clients then report code and message.
func (s *ResponsesStream) Fail(code, message string) []Event {
	if s.ended {
		return nil
	}
	var out []Event
	if !s.started {
		out = s.start("", 0, "", out)
	}
	s.ended = true
	return s.fail(code, message, out)
}

func (s *ResponsesStream) fail(code, message string, out []Event) []Event {
	r := s.snapshot()
	r.Status = "failed"
	r.Error = &responseError{Code: code, Message: message}
	r.Usage = convertUsage(s.usage)
	return s.emit(out, "response.failed", "response", r)
}

func (s *ResponsesStream) start(id string, created int64, model string, out []Event) []Event {
	s.started = true
	if id == "" {
		id = idPart("")
	}
	s.chatID = id
	if s.model == "" {
		s.model = model
	}
	s.resp = newResponse(responseID(id), created, s.model, s.echo)
	out = s.emit(out, "response.created", "response", s.resp)
	return s.emit(out, "response.in_progress", "response", s.resp)
}

// snapshot is the response object with every item as it stands.
func (s *ResponsesStream) snapshot() *response {
	r := *s.resp
	r.Output = make([]json.RawMessage, 0, len(s.items))
	for _, it := range s.items {
		r.Output = append(r.Output, s.itemJSON(it))
	}
	return &r
}

// push routes a delta: straight to the open item, or queued behind it.
func (s *ResponsesStream) push(d delta, out []Event) []Event {
	if len(s.pending) > 0 && !s.isActive(d) {
		s.pending = append(s.pending, d)
		return out
	}
	out = s.deliver(d, false, out)
	return s.drain(false, out)
}

func (s *ResponsesStream) isActive(d delta) bool {
	a := s.active
	return a != nil && a.kind == d.kind && (d.kind != kindCall || a.call == d.call)
}

// blocked reports that the open item may still receive content: a tool
// call whose arguments are not yet a complete JSON value.
func (s *ResponsesStream) blocked() bool {
	a := s.active
	if a == nil || a.kind != kindCall {
		return false
	}
	args := strings.TrimSpace(a.text.String())
	if args == "" {
		return true
	}
	if last := args[len(args)-1]; last != '}' && last != ']' {
		return true // cheap rejection before the full validity check
	}
	return !json.Valid([]byte(args))
}

// drain delivers queued deltas in order until one must wait again.
func (s *ResponsesStream) drain(force bool, out []Event) []Event {
	for len(s.pending) > 0 {
		d := s.pending[0]
		if !force && !s.isActive(d) && s.blocked() {
			break
		}
		s.pending = s.pending[1:]
		out = s.deliver(d, force, out)
	}
	if len(s.pending) == 0 {
		s.pending = nil // let the backing array go
	}
	return out
}

// deliver emits d into its item, closing the open item and opening d's
// first when they differ.
func (s *ResponsesStream) deliver(d delta, force bool, out []Event) []Event {
	if !s.isActive(d) {
		if !force && s.blocked() {
			s.pending = append(s.pending, d)
			return out
		}
		if d.kind == kindCall && d.call.item != nil {
			// Arguments for a call already closed (an upstream that
			// continued a complete JSON value): keep them for the final
			// object, there is no event to carry them.
			d.call.item.text.WriteString(d.text)
			return out
		}
		out = s.closeActive(out)
		out = s.open(d, out)
	}
	if d.text == "" {
		return out
	}
	it := s.active
	it.text.WriteString(d.text)
	switch it.kind {
	case kindMessage:
		return s.emit(out, "response.output_text.delta", "item_id", it.id, "output_index", it.outIndex,
			"content_index", 0, "delta", d.text, "logprobs", []string{})
	case kindReasoning:
		return s.emit(out, "response.reasoning_summary_text.delta", "item_id", it.id, "output_index", it.outIndex,
			"summary_index", 0, "delta", d.text)
	default:
		return s.emit(out, "response.function_call_arguments.delta", "item_id", it.id, "output_index", it.outIndex,
			"delta", d.text)
	}
}

func (s *ResponsesStream) open(d delta, out []Event) []Event {
	it := &streamItem{kind: d.kind, outIndex: len(s.items), call: d.call}
	switch d.kind {
	case kindMessage:
		it.id = messageID(s.chatID, s.nMsg)
		s.nMsg++
	case kindReasoning:
		it.id = reasoningID(s.chatID, s.nRs)
		s.nRs++
	default:
		it.id = functionCallID(d.call.id)
		d.call.item = it
	}
	s.items = append(s.items, it)
	s.active = it
	out = s.emit(out, "response.output_item.added", "output_index", it.outIndex, "item", s.itemJSON(it))
	switch d.kind {
	case kindMessage:
		out = s.emit(out, "response.content_part.added", "item_id", it.id, "output_index", it.outIndex,
			"content_index", 0, "part", newOutputText(""))
	case kindReasoning:
		out = s.emit(out, "response.reasoning_summary_part.added", "item_id", it.id, "output_index", it.outIndex,
			"summary_index", 0, "part", summaryText{Type: "summary_text"})
	}
	return out
}

func (s *ResponsesStream) closeActive(out []Event) []Event {
	it := s.active
	if it == nil {
		return out
	}
	s.active = nil
	it.closed = true
	text := it.text.String()
	switch it.kind {
	case kindMessage:
		out = s.emit(out, "response.output_text.done", "item_id", it.id, "output_index", it.outIndex,
			"content_index", 0, "text", text, "logprobs", []string{})
		out = s.emit(out, "response.content_part.done", "item_id", it.id, "output_index", it.outIndex,
			"content_index", 0, "part", newOutputText(text))
	case kindReasoning:
		out = s.emit(out, "response.reasoning_summary_text.done", "item_id", it.id, "output_index", it.outIndex,
			"summary_index", 0, "text", text)
		out = s.emit(out, "response.reasoning_summary_part.done", "item_id", it.id, "output_index", it.outIndex,
			"summary_index", 0, "part", summaryText{Type: "summary_text", Text: text})
	default:
		out = s.emit(out, "response.function_call_arguments.done", "item_id", it.id, "output_index", it.outIndex,
			"name", it.call.name, "arguments", text)
	}
	return s.emit(out, "response.output_item.done", "output_index", it.outIndex, "item", s.itemJSON(it))
}

// closeAll flushes the queue (no more content can arrive for the open
// item) and closes the last item.
func (s *ResponsesStream) closeAll(out []Event) []Event {
	out = s.drain(true, out)
	return s.closeActive(out)
}

func (s *ResponsesStream) itemJSON(it *streamItem) json.RawMessage {
	status := "in_progress"
	if it.closed {
		status = "completed"
	}
	switch it.kind {
	case kindMessage:
		content := []json.RawMessage{}
		if it.closed {
			content = append(content, mustMarshal(newOutputText(it.text.String())))
		}
		return mustMarshal(messageItem{ID: it.id, Type: "message", Status: status, Content: content, Role: "assistant"})
	case kindReasoning:
		summary := []summaryText{}
		if it.closed {
			summary = append(summary, summaryText{Type: "summary_text", Text: it.text.String()})
		}
		return mustMarshal(reasoningItem{ID: it.id, Type: "reasoning", Summary: summary})
	default:
		args := ""
		if it.closed {
			args = it.text.String()
		}
		return mustMarshal(functionCallItem{ID: it.id, Type: "function_call", Status: status, Arguments: args,
			CallID: it.call.id, Name: it.call.name})
	}
}

// emit appends one event: {"type":name,"sequence_number":n, kv...} with
// the members in the order given, as OpenAI writes them.
func (s *ResponsesStream) emit(out []Event, name string, kv ...any) []Event {
	b := make([]byte, 0, 128)
	b = append(b, `{"type":`...)
	b = jsonx.AppendString(b, name)
	b = append(b, `,"sequence_number":`...)
	b = fmt.Appendf(b, "%d", s.seq)
	s.seq++
	for i := 0; i+1 < len(kv); i += 2 {
		b = append(b, ',')
		b = jsonx.AppendString(b, kv[i].(string))
		b = append(b, ':')
		switch v := kv[i+1].(type) {
		case string:
			b = jsonx.AppendString(b, v)
		case int:
			b = fmt.Appendf(b, "%d", v)
		case json.RawMessage:
			b = append(b, v...)
		default:
			b = append(b, mustMarshal(v)...)
		}
	}
	b = append(b, '}')
	return append(out, Event{Name: name, Data: b})
}
