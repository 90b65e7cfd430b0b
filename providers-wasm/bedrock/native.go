package main

// The drop-in hooks: a Converse / ConverseStream request from the
// /bedrock prefix is decoded into a unified chat request
// (ingress_request), and the unified answer of whatever provider served it
// is encoded back into a Converse response or ConverseStream events
// (egress_response, egress_stream). The host frames the events in AWS
// event-stream: each native event is {"event": type, "data": {...}}, or
// {"exception": type, "data": {"message": ...}} for a modelled exception.
//
// Unlike the adapt_* hooks these decode with encoding/json: they map whole
// requests between two different shapes, where clarity wins.

import (
	"encoding/json"
	"strings"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// ingressEnvelope is the ingress_request input: the model id comes from the
// URL path (/model/{modelId}/converse), the stream flag from the operation.
type ingressEnvelope struct {
	Model  string          `json:"model"`
	Stream bool            `json:"stream"`
	Body   json.RawMessage `json:"body"`
}

type cvRequest struct {
	Messages []struct {
		Role    string      `json:"role"`
		Content []cvContent `json:"content"`
	} `json:"messages"`
	System          []cvContent `json:"system"`
	InferenceConfig *struct {
		MaxTokens     *int64   `json:"maxTokens"`
		MaxNewTokens  *int64   `json:"max_new_tokens"` // Nova's InvokeModel spelling
		Temperature   *float64 `json:"temperature"`
		TopP          *float64 `json:"topP"`
		StopSequences []string `json:"stopSequences"`
	} `json:"inferenceConfig"`
	ToolConfig *struct {
		Tools []struct {
			ToolSpec *struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				InputSchema struct {
					JSON json.RawMessage `json:"json"`
				} `json:"inputSchema"`
			} `json:"toolSpec"`
		} `json:"tools"`
		ToolChoice *struct {
			Auto *struct{} `json:"auto"`
			Any  *struct{} `json:"any"`
			Tool *struct {
				Name string `json:"name"`
			} `json:"tool"`
		} `json:"toolChoice"`
	} `json:"toolConfig"`
}

type cvContent struct {
	Text  *string `json:"text,omitempty"`
	Image *struct {
		Format string `json:"format"`
		Source struct {
			Bytes string `json:"bytes"`
		} `json:"source"`
	} `json:"image,omitempty"`
	ToolUse *struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"toolUse,omitempty"`
	ToolResult *struct {
		ToolUseID string      `json:"toolUseId"`
		Content   []cvContent `json:"content"`
	} `json:"toolResult,omitempty"`
	JSON json.RawMessage `json:"json,omitempty"`
}

// IngressRequest implements ingress_request.
func (*Adapter) IngressRequest(in []byte) (pluginsdk.Output, error) {
	var env ingressEnvelope
	if err := json.Unmarshal(in, &env); err != nil {
		return pluginsdk.Output{}, badRequest("invalid ingress input: " + err.Error())
	}
	var r cvRequest
	if err := json.Unmarshal(env.Body, &r); err != nil {
		return pluginsdk.Output{}, badRequest("invalid Converse request: " + err.Error())
	}
	if len(r.Messages) == 0 {
		return pluginsdk.Output{}, badRequest("messages is required")
	}
	u := map[string]any{"model": env.Model}
	var msgs []any
	if sys := textOfContent(r.System); sys != "" {
		msgs = append(msgs, map[string]any{"role": "system", "content": sys})
	}
	for _, m := range r.Messages {
		var parts []any
		var calls []any
		for _, c := range m.Content {
			switch {
			case c.Text != nil:
				parts = append(parts, map[string]string{"type": "text", "text": *c.Text})
			case c.Image != nil:
				url := "data:image/" + c.Image.Format + ";base64," + c.Image.Source.Bytes
				parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]string{"url": url}})
			case c.ToolUse != nil:
				args := string(c.ToolUse.Input)
				if args == "" || args == "null" {
					args = "{}"
				}
				calls = append(calls, map[string]any{"id": c.ToolUse.ToolUseID, "type": "function",
					"function": map[string]string{"name": c.ToolUse.Name, "arguments": args}})
			case c.ToolResult != nil:
				// A tool result is its own unified message, in order.
				msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": c.ToolResult.ToolUseID,
					"content": textOfContent(c.ToolResult.Content)})
			}
		}
		if len(parts) == 0 && len(calls) == 0 {
			continue
		}
		um := map[string]any{"role": m.Role}
		if len(parts) > 0 {
			um["content"] = parts
		} else {
			um["content"] = nil
		}
		if len(calls) > 0 {
			um["tool_calls"] = calls
		}
		msgs = append(msgs, um)
	}
	u["messages"] = msgs
	if ic := r.InferenceConfig; ic != nil {
		if ic.MaxTokens != nil {
			u["max_tokens"] = *ic.MaxTokens
		} else if ic.MaxNewTokens != nil {
			u["max_tokens"] = *ic.MaxNewTokens
		}
		if ic.Temperature != nil {
			u["temperature"] = *ic.Temperature
		}
		if ic.TopP != nil {
			u["top_p"] = *ic.TopP
		}
		if len(ic.StopSequences) > 0 {
			u["stop"] = ic.StopSequences
		}
	}
	if tc := r.ToolConfig; tc != nil {
		var tools []any
		for _, t := range tc.Tools {
			if t.ToolSpec == nil {
				continue
			}
			params := t.ToolSpec.InputSchema.JSON
			if len(params) == 0 {
				params = json.RawMessage(`{"type":"object"}`)
			}
			fn := map[string]any{"name": t.ToolSpec.Name, "parameters": params}
			if t.ToolSpec.Description != "" {
				fn["description"] = t.ToolSpec.Description
			}
			tools = append(tools, map[string]any{"type": "function", "function": fn})
		}
		if len(tools) > 0 {
			u["tools"] = tools
		}
		if ch := tc.ToolChoice; ch != nil {
			switch {
			case ch.Any != nil:
				u["tool_choice"] = "required"
			case ch.Tool != nil:
				u["tool_choice"] = map[string]any{"type": "function", "function": map[string]string{"name": ch.Tool.Name}}
			}
		}
	}
	if env.Stream {
		u["stream"] = true
		// ConverseStream ends with a metadata event carrying usage.
		u["stream_options"] = map[string]bool{"include_usage": true}
	}
	out, err := json.Marshal(u)
	if err != nil {
		return pluginsdk.Output{}, badRequest("encode unified request: " + err.Error())
	}
	return pluginsdk.Replace(out), nil
}

// textOfContent joins the text (and JSON, as text) of content blocks.
func textOfContent(cs []cvContent) string {
	var b strings.Builder
	for _, c := range cs {
		switch {
		case c.Text != nil:
			b.WriteString(*c.Text)
		case len(c.JSON) > 0:
			b.Write(c.JSON)
		}
	}
	return b.String()
}

type uUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

func (u *uUsage) native() map[string]int64 {
	if u == nil {
		return map[string]int64{"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}
	}
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	return map[string]int64{"inputTokens": u.PromptTokens, "outputTokens": u.CompletionTokens, "totalTokens": total}
}

// converseStop maps a unified finish_reason to a Converse stopReason.
func converseStop(fr string) string {
	switch fr {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "content_filtered"
	}
	return "end_turn"
}

type uToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// EgressResponse implements egress_response: a unified chat.completion
// (or error envelope) in, a Converse response (or {"message"}) out.
func (*Adapter) EgressResponse(in []byte) (pluginsdk.Output, error) {
	var r struct {
		Choices []struct {
			Message struct {
				Content   json.RawMessage `json:"content"`
				ToolCalls []uToolCall     `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage *uUsage `json:"usage"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(in, &r); err != nil {
		return pluginsdk.Output{}, badUpstream("egress: unified response is not valid: " + err.Error())
	}
	if r.Error != nil {
		out, _ := json.Marshal(map[string]string{"message": r.Error.Message})
		return pluginsdk.Replace(out), nil
	}
	content := []any{}
	stop := "end_turn"
	if len(r.Choices) > 0 {
		c := r.Choices[0]
		if t := unifiedText(c.Message.Content); t != "" {
			content = append(content, map[string]string{"text": t})
		}
		for _, tc := range c.Message.ToolCalls {
			content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": tc.ID, "name": tc.Function.Name,
				"input": argsObject(tc.Function.Arguments)}})
		}
		stop = converseStop(c.FinishReason)
	}
	out, err := json.Marshal(map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
		"stopReason": stop, "usage": r.Usage.native(), "metrics": map[string]int{"latencyMs": 0},
	})
	if err != nil {
		return pluginsdk.Output{}, badUpstream("encode Converse response: " + err.Error())
	}
	return pluginsdk.Replace(out), nil
}

// argsObject is a tool call's arguments as the JSON document Converse
// wants; unparseable arguments become an empty object.
func argsObject(args string) json.RawMessage {
	if jsonx.Valid([]byte(args)) && strings.HasPrefix(strings.TrimSpace(args), "{") {
		return json.RawMessage(args)
	}
	return json.RawMessage(`{}`)
}

func unifiedText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// nativeState is egress_stream's per-stream state.
type nativeState struct {
	Started bool `json:"s,omitempty"`
	// Open is the open content block's index (-1 none), OpenTool whether
	// it is a tool use (of unified tool index Tool); Next is the index
	// the next block gets.
	Open     int     `json:"o"`
	OpenTool bool    `json:"ot,omitempty"`
	Tool     int     `json:"t"`
	Next     int     `json:"n"`
	Stop     string  `json:"r,omitempty"`
	Stopped  bool    `json:"st,omitempty"`
	Usage    *uUsage `json:"u,omitempty"`
	Done     bool    `json:"d,omitempty"`
}

type nativeWriter struct{ evs []any }

func (w *nativeWriter) ev(typ string, data any) {
	w.evs = append(w.evs, map[string]any{"event": typ, "data": data})
}

// EgressStream implements egress_stream: unified chunks in, ConverseStream
// events out (messageStart, contentBlock*, messageStop, metadata).
func (*Adapter) EgressStream(in pluginsdk.StreamInput) (pluginsdk.Output, error) {
	st := nativeState{Open: -1}
	if len(in.State) > 0 && json.Unmarshal(in.State, &st) != nil {
		return pluginsdk.Output{}, badUpstream("egress: corrupt stream state")
	}
	var chunks []struct {
		Choices []struct {
			Delta struct {
				Content   *string     `json:"content"`
				ToolCalls []uToolCall `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *uUsage `json:"usage"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if len(in.Batch) > 0 {
		if err := json.Unmarshal(in.Batch, &chunks); err != nil {
			return pluginsdk.Output{}, badUpstream("egress: batch is not an array of chunks: " + err.Error())
		}
	}
	var w nativeWriter
	for _, ch := range chunks {
		if st.Done {
			break
		}
		if ch.Error != nil {
			// A modelled exception: the SDK raises it from the stream.
			w.evs = append(w.evs, map[string]any{"exception": "modelStreamErrorException", "data": map[string]string{"message": ch.Error.Message}})
			st.Done = true
			break
		}
		if !st.Started {
			st.Started = true
			w.ev("messageStart", map[string]string{"role": "assistant"})
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != nil && *c.Delta.Content != "" {
				if st.Open >= 0 && st.OpenTool {
					st.closeBlock(&w)
				}
				if st.Open < 0 {
					// Bedrock starts text blocks without contentBlockStart.
					st.Open, st.OpenTool = st.Next, false
					st.Next++
				}
				w.ev("contentBlockDelta", map[string]any{"contentBlockIndex": st.Open, "delta": map[string]string{"text": *c.Delta.Content}})
			}
			for _, tc := range c.Delta.ToolCalls {
				if tc.ID != "" || tc.Function.Name != "" || !st.OpenTool || tc.Index != st.Tool {
					st.closeBlock(&w)
					st.Open, st.OpenTool, st.Tool = st.Next, true, tc.Index
					st.Next++
					w.ev("contentBlockStart", map[string]any{"contentBlockIndex": st.Open,
						"start": map[string]any{"toolUse": map[string]string{"toolUseId": tc.ID, "name": tc.Function.Name}}})
				}
				if tc.Function.Arguments != "" {
					w.ev("contentBlockDelta", map[string]any{"contentBlockIndex": st.Open,
						"delta": map[string]any{"toolUse": map[string]string{"input": tc.Function.Arguments}}})
				}
			}
			if c.FinishReason != nil && *c.FinishReason != "" && !st.Stopped {
				st.closeBlock(&w)
				st.Stop, st.Stopped = converseStop(*c.FinishReason), true
				w.ev("messageStop", map[string]string{"stopReason": st.Stop})
			}
		}
		if ch.Usage != nil {
			st.Usage = ch.Usage
			if st.Stopped {
				st.finish(&w)
			}
		}
	}
	if in.End && st.Started && !st.Done {
		st.finish(&w)
	}
	state, _ := json.Marshal(st)
	if len(w.evs) == 0 {
		return pluginsdk.Output{Status: pluginsdk.StatusNoOutput, State: state}, nil
	}
	body, err := json.Marshal(w.evs)
	if err != nil {
		return pluginsdk.Output{}, badUpstream("encode ConverseStream events: " + err.Error())
	}
	return pluginsdk.Output{Status: pluginsdk.StatusOK, Body: body, State: state}, nil
}

func (st *nativeState) closeBlock(w *nativeWriter) {
	if st.Open >= 0 {
		w.ev("contentBlockStop", map[string]int{"contentBlockIndex": st.Open})
		st.Open, st.OpenTool = -1, false
	}
}

// finish ends the stream: messageStop (if no finish reason came) and the
// metadata event with usage.
func (st *nativeState) finish(w *nativeWriter) {
	if !st.Stopped {
		st.closeBlock(w)
		st.Stop, st.Stopped = "end_turn", true
		w.ev("messageStop", map[string]string{"stopReason": st.Stop})
	}
	w.ev("metadata", map[string]any{"usage": st.Usage.native(), "metrics": map[string]int{"latencyMs": 0}})
	st.Done = true
}
