package main

// The drop-in hooks: a Cohere v2 chat request from the /cohere prefix is
// decoded into a unified chat request (ingress_request), and the unified
// answer of whatever provider served it is encoded back into a v2 chat
// response or v2 stream events (egress_response, egress_stream).
//
// Unlike the adapt_* hooks these decode with encoding/json: they translate
// whole requests between two similar shapes, and clarity wins over the
// last microsecond here.

import (
	"encoding/json"
	"strings"

	"github.com/wasmgate/gateway/pluginsdk"
)

// nativeRequest is the part of a v2 chat request the gateway maps.
type nativeRequest struct {
	Model            string            `json:"model"`
	Messages         []json.RawMessage `json:"messages"`
	Tools            json.RawMessage   `json:"tools,omitempty"`
	ToolChoice       string            `json:"tool_choice,omitempty"`
	Stream           bool              `json:"stream,omitempty"`
	Temperature      *float64          `json:"temperature,omitempty"`
	P                *float64          `json:"p,omitempty"`
	MaxTokens        *int64            `json:"max_tokens,omitempty"`
	StopSequences    []string          `json:"stop_sequences,omitempty"`
	Seed             *int64            `json:"seed,omitempty"`
	FrequencyPenalty *float64          `json:"frequency_penalty,omitempty"`
	PresencePenalty  *float64          `json:"presence_penalty,omitempty"`
	ResponseFormat   *struct {
		Type       string          `json:"type"`
		JSONSchema json.RawMessage `json:"json_schema,omitempty"`
	} `json:"response_format,omitempty"`
}

type nativeMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolPlan   string          `json:"tool_plan,omitempty"`
}

type contentPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text,omitempty"`
	ImageURL json.RawMessage `json:"image_url,omitempty"`
	Document *struct {
		Data json.RawMessage `json:"data"`
	} `json:"document,omitempty"`
}

// IngressRequest implements ingress_request.
func (a *Adapter) IngressRequest(in []byte) (pluginsdk.Output, error) {
	var r nativeRequest
	if err := json.Unmarshal(in, &r); err != nil {
		return pluginsdk.Output{}, reject(400, "invalid v2 chat request: %v", err)
	}
	if len(r.Messages) == 0 {
		return pluginsdk.Output{}, reject(400, "messages is required")
	}
	u := map[string]any{"model": r.Model}
	msgs := make([]any, 0, len(r.Messages))
	for _, raw := range r.Messages {
		var m nativeMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return pluginsdk.Output{}, reject(400, "invalid message: %v", err)
		}
		um := map[string]any{"role": m.Role}
		content, err := ingressContent(m.Content)
		if err != nil {
			return pluginsdk.Output{}, err
		}
		if content != nil {
			um["content"] = content
		}
		if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" {
			um["tool_calls"] = m.ToolCalls // the same shape as OpenAI's
			if content == nil {
				um["content"] = nil
			}
		}
		if m.ToolCallID != "" {
			um["tool_call_id"] = m.ToolCallID
		}
		msgs = append(msgs, um)
	}
	u["messages"] = msgs
	if len(r.Tools) > 0 && string(r.Tools) != "null" {
		u["tools"] = r.Tools // v2 tools are OpenAI function tools
	}
	switch r.ToolChoice {
	case "REQUIRED":
		u["tool_choice"] = "required"
	case "NONE":
		u["tool_choice"] = "none"
	}
	if r.Stream {
		u["stream"] = true
		// v2 streams end with usage in message-end: ask for the same.
		u["stream_options"] = map[string]bool{"include_usage": true}
	}
	setIf(u, "temperature", r.Temperature)
	setIf(u, "top_p", r.P)
	setIf(u, "max_tokens", r.MaxTokens)
	setIf(u, "seed", r.Seed)
	setIf(u, "frequency_penalty", r.FrequencyPenalty)
	setIf(u, "presence_penalty", r.PresencePenalty)
	if len(r.StopSequences) > 0 {
		u["stop"] = r.StopSequences
	}
	if rf := r.ResponseFormat; rf != nil && rf.Type == "json_object" {
		if len(rf.JSONSchema) > 0 && string(rf.JSONSchema) != "null" {
			u["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "response", "schema": rf.JSONSchema}}
		} else {
			u["response_format"] = map[string]string{"type": "json_object"}
		}
	}
	out, err := json.Marshal(u)
	if err != nil {
		return pluginsdk.Output{}, reject(500, "encode unified request: %v", err)
	}
	return pluginsdk.Replace(out), nil
}

func setIf[T any](m map[string]any, k string, v *T) {
	if v != nil {
		m[k] = *v
	}
}

// ingressContent maps v2 content (a string or parts) to unified content;
// documents become text, the only form every provider takes.
func ingressContent(raw json.RawMessage) (any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, reject(400, "content must be a string or an array of parts")
	}
	out := make([]any, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case "text":
			out = append(out, map[string]string{"type": "text", "text": p.Text})
		case "image_url":
			out = append(out, map[string]any{"type": "image_url", "image_url": p.ImageURL})
		case "document":
			if p.Document != nil {
				out = append(out, map[string]string{"type": "text", "text": string(p.Document.Data)})
			}
		default:
			return nil, reject(400, "content part type %q is not supported", p.Type)
		}
	}
	return out, nil
}

// unifiedResponse is the part of a chat.completion egress reads.
type unifiedResponse struct {
	ID      string `json:"id"`
	Choices []struct {
		Message struct {
			Content          json.RawMessage   `json:"content"`
			ReasoningContent string            `json:"reasoning_content"`
			ToolCalls        []json.RawMessage `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *unifiedUsage `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

type unifiedUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// nativeFinish maps a unified finish_reason to v2's.
func nativeFinish(fr string) string {
	switch fr {
	case "length":
		return "MAX_TOKENS"
	case "tool_calls", "function_call":
		return "TOOL_CALL"
	}
	return "COMPLETE"
}

func nativeUsage(u *unifiedUsage) map[string]any {
	var in, out int64
	if u != nil {
		in, out = u.PromptTokens, u.CompletionTokens
	}
	counts := map[string]int64{"input_tokens": in, "output_tokens": out}
	return map[string]any{"billed_units": counts, "tokens": counts}
}

// textOf flattens unified content (a string or text parts).
func textOf(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []contentPart
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// EgressResponse implements egress_response: a unified chat.completion
// (or error envelope) in, a v2 chat response (or v2 error) out.
func (a *Adapter) EgressResponse(in []byte) (pluginsdk.Output, error) {
	var r unifiedResponse
	if err := json.Unmarshal(in, &r); err != nil {
		return pluginsdk.Output{}, reject(500, "egress: unified response is not valid: %v", err)
	}
	if r.Error != nil {
		out, _ := json.Marshal(map[string]string{"message": r.Error.Message})
		return pluginsdk.Replace(out), nil
	}
	msg := map[string]any{"role": "assistant"}
	finish := "COMPLETE"
	if len(r.Choices) > 0 {
		c := r.Choices[0]
		if t := textOf(c.Message.Content); t != "" {
			msg["content"] = []any{map[string]string{"type": "text", "text": t}}
		}
		if len(c.Message.ToolCalls) > 0 {
			calls := make([]any, 0, len(c.Message.ToolCalls))
			for _, tc := range c.Message.ToolCalls {
				calls = append(calls, nativeToolCall(tc))
			}
			msg["tool_calls"] = calls
			if c.Message.ReasoningContent != "" {
				msg["tool_plan"] = c.Message.ReasoningContent
			}
		}
		finish = nativeFinish(c.FinishReason)
	}
	out, err := json.Marshal(map[string]any{"id": r.ID, "message": msg, "finish_reason": finish, "usage": nativeUsage(r.Usage)})
	if err != nil {
		return pluginsdk.Output{}, reject(500, "encode v2 response: %v", err)
	}
	return pluginsdk.Replace(out), nil
}

// nativeToolCall keeps only the members v2 knows (unified tool calls may
// carry index or provider extras).
func nativeToolCall(raw json.RawMessage) map[string]any {
	var tc struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	_ = json.Unmarshal(raw, &tc)
	return map[string]any{"id": tc.ID, "type": "function", "function": map[string]string{"name": tc.Function.Name, "arguments": tc.Function.Arguments}}
}

// egressState is egress_stream's per-stream state.
type egressState struct {
	ID      string `json:"id,omitempty"`
	Started bool   `json:"s,omitempty"`
	// Text is the index of the open text content block (-1 none); Next is
	// the index the next block gets.
	Text int `json:"x"`
	Next int `json:"n"`
	// Tool maps the open unified tool-call index to its v2 index.
	Tool     int           `json:"t"`
	ToolOpen bool          `json:"to,omitempty"`
	ToolNext int           `json:"tn"`
	Finish   string        `json:"f,omitempty"`
	Usage    *unifiedUsage `json:"u,omitempty"`
	Done     bool          `json:"d,omitempty"`
}

type unifiedChunk struct {
	ID      string `json:"id"`
	Choices []struct {
		Delta struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *unifiedUsage `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// streamWriter collects native events: {"event": type, "data": {...}}.
type streamWriter struct{ evs []any }

func (w *streamWriter) ev(typ string, data map[string]any) {
	data["type"] = typ
	w.evs = append(w.evs, map[string]any{"event": typ, "data": data})
}

func msgDelta(m map[string]any) map[string]any { return map[string]any{"message": m} }

// EgressStream implements egress_stream: unified chunks in, v2 stream
// events out (message-start, content-*, tool-call-*, message-end).
func (a *Adapter) EgressStream(in pluginsdk.StreamInput) (pluginsdk.Output, error) {
	st := egressState{Text: -1}
	if len(in.State) > 0 && json.Unmarshal(in.State, &st) != nil {
		return pluginsdk.Output{}, reject(500, "egress: corrupt stream state")
	}
	var chunks []unifiedChunk
	if len(in.Batch) > 0 {
		if err := json.Unmarshal(in.Batch, &chunks); err != nil {
			return pluginsdk.Output{}, reject(500, "egress: batch is not an array of chunks: %v", err)
		}
	}
	var w streamWriter
	for _, ch := range chunks {
		if st.Done {
			break
		}
		if ch.Error != nil {
			st.close(&w)
			w.ev("message-end", map[string]any{"delta": map[string]any{"finish_reason": "ERROR", "error": ch.Error.Message}})
			st.Done = true
			break
		}
		if !st.Started {
			st.Started, st.ID = true, ch.ID
			w.ev("message-start", map[string]any{"id": ch.ID, "delta": msgDelta(map[string]any{"role": "assistant",
				"content": []any{}, "tool_plan": "", "tool_calls": []any{}, "citations": []any{}})})
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != nil && *c.Delta.Content != "" {
				if st.ToolOpen {
					st.close(&w)
				}
				if st.Text < 0 {
					st.Text = st.Next
					st.Next++
					w.ev("content-start", map[string]any{"index": st.Text, "delta": msgDelta(map[string]any{"content": map[string]string{"type": "text", "text": ""}})})
				}
				w.ev("content-delta", map[string]any{"index": st.Text, "delta": msgDelta(map[string]any{"content": map[string]string{"text": *c.Delta.Content}})})
			}
			for _, tc := range c.Delta.ToolCalls {
				if tc.ID != "" || tc.Function.Name != "" || !st.ToolOpen || tc.Index != st.Tool {
					st.close(&w)
					st.ToolOpen, st.Tool = true, tc.Index
					w.ev("tool-call-start", map[string]any{"index": st.ToolNext, "delta": msgDelta(map[string]any{"tool_calls": map[string]any{
						"id": tc.ID, "type": "function", "function": map[string]string{"name": tc.Function.Name, "arguments": tc.Function.Arguments}}})})
					continue
				}
				if tc.Function.Arguments != "" {
					w.ev("tool-call-delta", map[string]any{"index": st.ToolNext, "delta": msgDelta(map[string]any{"tool_calls": map[string]any{
						"function": map[string]string{"arguments": tc.Function.Arguments}}})})
				}
			}
			if c.FinishReason != nil && *c.FinishReason != "" {
				st.Finish = *c.FinishReason
			}
		}
		if ch.Usage != nil {
			st.Usage = ch.Usage
		}
		// message-end carries both the finish reason and the usage, which
		// come in separate unified chunks: wait for the usage chunk.
		if st.Finish != "" && st.Usage != nil {
			st.end(&w)
		}
	}
	if in.End && st.Started && !st.Done {
		st.end(&w)
	}
	state, _ := json.Marshal(st)
	if len(w.evs) == 0 {
		return pluginsdk.Output{Status: pluginsdk.StatusNoOutput, State: state}, nil
	}
	body, err := json.Marshal(w.evs)
	if err != nil {
		return pluginsdk.Output{}, reject(500, "encode v2 events: %v", err)
	}
	return pluginsdk.Output{Status: pluginsdk.StatusOK, Body: body, State: state}, nil
}

// close ends the open text block or tool call.
func (st *egressState) close(w *streamWriter) {
	if st.Text >= 0 {
		w.ev("content-end", map[string]any{"index": st.Text})
		st.Text = -1
	}
	if st.ToolOpen {
		w.ev("tool-call-end", map[string]any{"index": st.ToolNext})
		st.ToolOpen = false
		st.ToolNext++
	}
}

func (st *egressState) end(w *streamWriter) {
	st.close(w)
	w.ev("message-end", map[string]any{"delta": map[string]any{"finish_reason": nativeFinish(st.Finish), "usage": nativeUsage(st.Usage)}})
	st.Done = true
}
