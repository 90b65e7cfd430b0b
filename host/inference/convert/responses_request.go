package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Echo is the part of a Responses request that the Response object repeats
// back (tools, tool_choice, sampling, text format...): the official SDKs
// read these fields, and finalResponse() in the node SDK parses
// function-call arguments against the echoed tools.
type Echo struct {
	Instructions      json.RawMessage
	Tools             json.RawMessage
	ToolChoice        json.RawMessage
	ParallelToolCalls *bool
	Temperature       *float64
	TopP              *float64
	MaxOutputTokens   *int
	Text              json.RawMessage
	Reasoning         json.RawMessage
	Metadata          json.RawMessage
	User              string
}

// chatRequest is the chat request produced; field order is the wire order.
type chatRequest struct {
	Model               string                     `json:"model"`
	Messages            []chatMessage              `json:"messages"`
	Tools               []chatTool                 `json:"tools,omitempty"`
	ToolChoice          json.RawMessage            `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool                      `json:"parallel_tool_calls,omitempty"`
	MaxCompletionTokens *int                       `json:"max_completion_tokens,omitempty"`
	MaxTokens           *int                       `json:"max_tokens,omitempty"`
	Temperature         *float64                   `json:"temperature,omitempty"`
	TopP                *float64                   `json:"top_p,omitempty"`
	N                   *int                       `json:"n,omitempty"`
	Stop                json.RawMessage            `json:"stop,omitempty"`
	Stream              bool                       `json:"stream,omitempty"`
	StreamOptions       *chatStreamOptions         `json:"stream_options,omitempty"`
	ReasoningEffort     string                     `json:"reasoning_effort,omitempty"`
	ResponseFormat      json.RawMessage            `json:"response_format,omitempty"`
	User                string                     `json:"user,omitempty"`
	Extra               map[string]json.RawMessage `json:"-"`
}

type chatStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCalls  []chatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function chatToolFunction `json:"function"`
}

type chatToolFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string          `json:"type"`
	Function chatFunctionDef `json:"function"`
}

type chatFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// encode writes the request with the pass-through fields appended, so a
// provider-specific parameter (top_k, thinking...) reaches the adapter as it
// would on a chat request.
func (r *chatRequest) encode() ([]byte, error) {
	b, err := marshal(r)
	if err != nil || len(r.Extra) == 0 {
		return b, err
	}
	x, err := marshal(r.Extra)
	if err != nil {
		return nil, err
	}
	b = append(b[:len(b)-1], ',')
	return append(b, x[1:]...), nil
}

// Responses request fields: handled, ignored on purpose, or refused because
// they need state or tools only OpenAI runs. Anything else is passed on.
var (
	responsesIgnored = map[string]bool{
		// Nothing is stored by the gateway; the echo says store=false.
		"store": true,
		// include asks for extra output (encrypted reasoning, logprobs) a
		// chat provider cannot produce; omitting it is what OpenAI does too
		// when the item does not apply.
		"include": true, "truncation": true, "service_tier": true,
		"prompt_cache_key": true, "safety_identifier": true, "stream_options": true,
		"top_logprobs": true, "max_tool_calls": true,
	}
	responsesRefused = map[string]string{
		"previous_response_id": "the gateway keeps no responses; send the whole conversation in input",
		"conversation":         "the gateway keeps no conversations; send the whole conversation in input",
		"prompt":               "stored prompt templates live at OpenAI; send instructions and input instead",
	}
)

// ResponsesToChat converts a Responses API request body into a chat
// completions request body. Errors are *apierr.Error 400s naming the field.
func ResponsesToChat(body []byte) ([]byte, error) {
	chat, _, err := ResponsesToChatEcho(body)
	return chat, err
}

// ResponsesToChatEcho is ResponsesToChat also returning the request fields
// the Response object echoes, for ChatToResponse and NewResponsesStream.
func ResponsesToChatEcho(body []byte) ([]byte, *Echo, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, nil, badRequest(CodeInvalidJSON, "", "request body must be a JSON object")
	}
	out := &chatRequest{}
	echo := &Echo{}
	if err := decodeAs(top["model"], &out.Model, "model", "a string"); err != nil || out.Model == "" {
		return nil, nil, badRequest(CodeMissing, "model", `field "model" is required, as "<provider>/<model>"`)
	}
	for k, v := range top {
		if why, refused := responsesRefused[k]; refused && !isNull(v) {
			return nil, nil, unsupported(k, why)
		}
	}
	if v := top["background"]; !isNull(v) && string(bytes.TrimSpace(v)) != "false" {
		return nil, nil, unsupported("background", "background responses need stored state; use stream instead")
	}

	// instructions first: it is the system prompt of this turn.
	if v := top["instructions"]; !isNull(v) {
		var s string
		if err := decodeAs(v, &s, "instructions", "a string"); err != nil {
			return nil, nil, err
		}
		echo.Instructions = v
		if s != "" {
			out.Messages = append(out.Messages, chatMessage{Role: "system", Content: jsonString(s)})
		}
	}
	msgs, err := inputMessages(top["input"])
	if err != nil {
		return nil, nil, err
	}
	out.Messages = append(out.Messages, msgs...)

	if v := top["tools"]; !isNull(v) {
		if out.Tools, err = chatTools(v); err != nil {
			return nil, nil, err
		}
		echo.Tools = v
	}
	if v := top["tool_choice"]; !isNull(v) {
		if out.ToolChoice, err = chatToolChoice(v); err != nil {
			return nil, nil, err
		}
		echo.ToolChoice = v
	}
	if v := top["parallel_tool_calls"]; !isNull(v) {
		var b bool
		if err := decodeAs(v, &b, "parallel_tool_calls", "a boolean"); err != nil {
			return nil, nil, err
		}
		out.ParallelToolCalls, echo.ParallelToolCalls = &b, &b
	}
	if v := top["max_output_tokens"]; !isNull(v) {
		var n int
		if err := decodeAs(v, &n, "max_output_tokens", "an integer"); err != nil {
			return nil, nil, err
		}
		out.MaxCompletionTokens, echo.MaxOutputTokens = &n, &n
	}
	for _, f := range []struct {
		name string
		dst  **float64
		echo **float64
	}{{"temperature", &out.Temperature, &echo.Temperature}, {"top_p", &out.TopP, &echo.TopP}} {
		if v := top[f.name]; !isNull(v) {
			var x float64
			if err := decodeAs(v, &x, f.name, "a number"); err != nil {
				return nil, nil, err
			}
			*f.dst, *f.echo = &x, &x
		}
	}
	if v := top["stream"]; !isNull(v) {
		if err := decodeAs(v, &out.Stream, "stream", "a boolean"); err != nil {
			return nil, nil, err
		}
		if out.Stream {
			// response.completed carries usage, so the chat stream must
			// end with a usage chunk whatever the client asked.
			out.StreamOptions = &chatStreamOptions{IncludeUsage: true}
		}
	}
	if v := top["reasoning"]; !isNull(v) {
		var r struct {
			Effort *string `json:"effort"`
		}
		if err := decodeAs(v, &r, "reasoning", "an object"); err != nil {
			return nil, nil, err
		}
		if r.Effort != nil {
			out.ReasoningEffort = *r.Effort
		}
		echo.Reasoning = v
	}
	if v := top["text"]; !isNull(v) {
		if out.ResponseFormat, err = chatResponseFormat(v); err != nil {
			return nil, nil, err
		}
		echo.Text = v
	}
	if v := top["metadata"]; !isNull(v) {
		var m map[string]any
		if err := decodeAs(v, &m, "metadata", "an object of strings"); err != nil {
			return nil, nil, err
		}
		// Echoed only: chat metadata means "stored completion tags" to
		// OpenAI and nothing to the chat-only providers this serves.
		echo.Metadata = v
	}
	if v := top["user"]; !isNull(v) {
		if err := decodeAs(v, &out.User, "user", "a string"); err != nil {
			return nil, nil, err
		}
		echo.User = out.User
	}
	for k, v := range top {
		switch k {
		case "model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "max_output_tokens",
			"temperature", "top_p", "stream", "reasoning", "text", "metadata", "user", "background":
			continue
		}
		if responsesIgnored[k] {
			continue
		}
		if _, refused := responsesRefused[k]; refused {
			continue // null: same as absent
		}
		if out.Extra == nil {
			out.Extra = map[string]json.RawMessage{}
		}
		out.Extra[k] = v
	}
	chat, err := out.encode()
	if err != nil {
		return nil, nil, badRequest(CodeInvalidJSON, "", "request could not be converted: %v", err)
	}
	return chat, echo, nil
}

func jsonString(s string) json.RawMessage {
	b, _ := marshal(s)
	return b
}

// inputItem is any element of input; which fields apply depends on Type.
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// inputMessages converts input (a string, or an array of items) to chat
// messages.
func inputMessages(raw json.RawMessage) ([]chatMessage, error) {
	if isNull(raw) {
		return nil, badRequest(CodeMissing, "input", `field "input" is required`)
	}
	if t := bytes.TrimSpace(raw); t[0] == '"' {
		var s string
		if err := decodeAs(raw, &s, "input", "a string or an array of input items"); err != nil {
			return nil, err
		}
		return []chatMessage{{Role: "user", Content: jsonString(s)}}, nil
	}
	var items []json.RawMessage
	if err := decodeAs(raw, &items, "input", "a string or an array of input items"); err != nil {
		return nil, err
	}
	var out []chatMessage
	for i, rawItem := range items {
		param := fmt.Sprintf("input[%d]", i)
		var it inputItem
		if err := decodeAs(rawItem, &it, param, "an input item object"); err != nil {
			return nil, err
		}
		switch it.Type {
		case "", "message":
			m, err := inputMessage(&it, param)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return nil, badRequest(CodeMissing, param, "%s: a function_call item needs call_id and name", param)
			}
			tc := chatToolCall{ID: it.CallID, Type: "function", Function: chatToolFunction{Name: it.Name, Arguments: it.Arguments}}
			// One assistant turn: consecutive calls, and the text the
			// assistant said just before them, are one chat message, as
			// providers with strict turn order (Anthropic) require.
			if n := len(out); n > 0 && out[n-1].Role == "assistant" {
				out[n-1].ToolCalls = append(out[n-1].ToolCalls, tc)
			} else {
				out = append(out, chatMessage{Role: "assistant", ToolCalls: []chatToolCall{tc}})
			}
		case "function_call_output":
			if it.CallID == "" {
				return nil, badRequest(CodeMissing, param+".call_id", "%s.call_id is required", param)
			}
			text, err := outputText(it.Output, param+".output")
			if err != nil {
				return nil, err
			}
			out = append(out, chatMessage{Role: "tool", ToolCallID: it.CallID, Content: jsonString(text)})
		case "reasoning":
			// Reasoning replayed from an earlier turn is OpenAI's own
			// (often encrypted) state; other providers cannot take it, and
			// the answer it led to is in the following items.
		case "item_reference":
			return nil, unsupported(param+".type", "item_reference points at a stored item; send the item itself")
		default:
			return nil, unsupported(param+".type", fmt.Sprintf("input item type %q exists only on OpenAI", it.Type))
		}
	}
	if len(out) == 0 {
		return nil, badRequest(CodeMissing, "input", "input has no message to answer")
	}
	return out, nil
}

// inputMessage converts one message item; developer becomes system because
// chat-only providers know no developer role.
func inputMessage(it *inputItem, param string) (chatMessage, error) {
	role := it.Role
	switch role {
	case "user", "system", "assistant":
	case "developer":
		role = "system"
	case "":
		return chatMessage{}, badRequest(CodeMissing, param+".role", "%s.role is required", param)
	default:
		return chatMessage{}, badRequest(CodeInvalidType, param+".role",
			"%s.role must be user, system, developer or assistant, not %q", param, it.Role)
	}
	if isNull(it.Content) {
		return chatMessage{}, badRequest(CodeMissing, param+".content", "%s.content is required", param)
	}
	if bytes.TrimSpace(it.Content)[0] == '"' {
		var s string
		if err := decodeAs(it.Content, &s, param+".content", "a string or an array of content parts"); err != nil {
			return chatMessage{}, err
		}
		return chatMessage{Role: role, Content: jsonString(s)}, nil
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Refusal  string `json:"refusal"`
		ImageURL string `json:"image_url"`
		FileID   string `json:"file_id"`
		Detail   string `json:"detail"`
	}
	if err := decodeAs(it.Content, &parts, param+".content", "a string or an array of content parts"); err != nil {
		return chatMessage{}, err
	}
	type imageURL struct {
		URL    string `json:"url"`
		Detail string `json:"detail,omitempty"`
	}
	type chatPart struct {
		Type     string    `json:"type"`
		Text     string    `json:"text,omitempty"`
		ImageURL *imageURL `json:"image_url,omitempty"`
	}
	var out []chatPart
	var joined strings.Builder
	hasImage := false
	for j, p := range parts {
		pp := fmt.Sprintf("%s.content[%d]", param, j)
		switch p.Type {
		case "input_text", "output_text", "text":
			out = append(out, chatPart{Type: "text", Text: p.Text})
			joined.WriteString(p.Text)
		case "refusal":
			// A refusal replayed in an assistant turn is what it said.
			out = append(out, chatPart{Type: "text", Text: p.Refusal})
			joined.WriteString(p.Refusal)
		case "input_image":
			if role != "user" {
				return chatMessage{}, unsupported(pp+".type", "images are accepted in user messages only")
			}
			if p.ImageURL == "" {
				if p.FileID != "" {
					return chatMessage{}, unsupported(pp+".file_id", "file ids refer to OpenAI file storage; send image_url (https or data URL)")
				}
				return chatMessage{}, badRequest(CodeMissing, pp+".image_url", "%s.image_url is required", pp)
			}
			d := p.Detail
			if d == "auto" {
				d = ""
			}
			out = append(out, chatPart{Type: "image_url", ImageURL: &imageURL{URL: p.ImageURL, Detail: d}})
			hasImage = true
		default:
			return chatMessage{}, unsupported(pp+".type", fmt.Sprintf("content part type %q cannot be converted", p.Type))
		}
	}
	if !hasImage {
		// Plain text is the one shape every adapter takes for every role.
		return chatMessage{Role: role, Content: jsonString(joined.String())}, nil
	}
	b, err := marshal(out)
	if err != nil {
		return chatMessage{}, err
	}
	return chatMessage{Role: role, Content: b}, nil
}

// outputText reads a function_call_output's output: a string, or an array of
// text parts (images in tool results have no chat equivalent).
func outputText(raw json.RawMessage, param string) (string, error) {
	if isNull(raw) {
		return "", badRequest(CodeMissing, param, "%s is required", param)
	}
	if bytes.TrimSpace(raw)[0] == '"' {
		var s string
		err := decodeAs(raw, &s, param, "a string or an array of text parts")
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := decodeAs(raw, &parts, param, "a string or an array of text parts"); err != nil {
		return "", err
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "input_text" && p.Type != "output_text" && p.Type != "text" {
			return "", unsupported(fmt.Sprintf("%s[%d].type", param, j), "tool results can carry text only")
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// chatTools converts function tools; every other tool type (web_search,
// file_search, code_interpreter, computer_use, mcp, custom...) is run by
// OpenAI itself and cannot be offered to another provider.
func chatTools(raw json.RawMessage) ([]chatTool, error) {
	var tools []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	if err := decodeAs(raw, &tools, "tools", "an array of tools"); err != nil {
		return nil, err
	}
	out := make([]chatTool, 0, len(tools))
	for i, t := range tools {
		if t.Type != "function" {
			return nil, unsupported(fmt.Sprintf("tools[%d].type", i),
				fmt.Sprintf("tool type %q is run by OpenAI; only function tools can be converted", t.Type))
		}
		if t.Name == "" {
			return nil, badRequest(CodeMissing, fmt.Sprintf("tools[%d].name", i), "tools[%d].name is required", i)
		}
		p := t.Parameters
		if isNull(p) {
			p = nil
		}
		out = append(out, chatTool{Type: "function", Function: chatFunctionDef{Name: t.Name, Description: t.Description, Parameters: p}})
	}
	return out, nil
}

// chatToolChoice maps the Responses tool_choice shapes to chat's.
func chatToolChoice(raw json.RawMessage) (json.RawMessage, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "none", "auto", "required":
			return raw, nil
		}
		return nil, badRequest(CodeInvalidType, "tool_choice", `tool_choice must be "none", "auto", "required" or {"type":"function","name":...}`)
	}
	var c struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := decodeAs(raw, &c, "tool_choice", "a string or an object"); err != nil {
		return nil, err
	}
	if c.Type != "function" {
		return nil, unsupported("tool_choice.type", fmt.Sprintf("tool_choice type %q cannot be converted; use a function tool", c.Type))
	}
	if c.Name == "" {
		return nil, badRequest(CodeMissing, "tool_choice.name", "tool_choice.name is required")
	}
	type fn struct {
		Name string `json:"name"`
	}
	return marshal(struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}{"function", fn{c.Name}})
}

// chatResponseFormat maps text.format to response_format.
func chatResponseFormat(raw json.RawMessage) (json.RawMessage, error) {
	var t struct {
		Format json.RawMessage `json:"format"`
	}
	if err := decodeAs(raw, &t, "text", "an object"); err != nil {
		return nil, err
	}
	if isNull(t.Format) {
		return nil, nil
	}
	var f struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	}
	if err := decodeAs(t.Format, &f, "text.format", "an object"); err != nil {
		return nil, err
	}
	switch f.Type {
	case "text":
		return nil, nil
	case "json_object":
		return json.RawMessage(`{"type":"json_object"}`), nil
	case "json_schema":
		if f.Name == "" {
			return nil, badRequest(CodeMissing, "text.format.name", "text.format.name is required for json_schema")
		}
		if isNull(f.Schema) {
			return nil, badRequest(CodeMissing, "text.format.schema", "text.format.schema is required for json_schema")
		}
		js := struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Schema      json.RawMessage `json:"schema"`
			Strict      *bool           `json:"strict,omitempty"`
		}{f.Name, f.Description, f.Schema, f.Strict}
		return marshal(struct {
			Type       string `json:"type"`
			JSONSchema any    `json:"json_schema"`
		}{"json_schema", js})
	}
	return nil, unsupported("text.format.type", fmt.Sprintf("format type %q is unknown", f.Type))
}
