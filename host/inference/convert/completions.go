package convert

import (
	"bytes"
	"encoding/json"
	"strings"
)

// completionsIgnored are Completions fields with no effect worth refusing a
// request over: logprobs are simply not returned (logprobs: null).
var completionsIgnored = map[string]bool{"logprobs": true, "best_of": true}

// CompletionToChat converts a legacy Completions request body into a chat
// request with one user message holding the prompt. Errors are
// *apierr.Error 400s naming the field.
func CompletionToChat(body []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, badRequest(CodeInvalidJSON, "", "request body must be a JSON object")
	}
	out := &chatRequest{}
	if err := decodeAs(top["model"], &out.Model, "model", "a string"); err != nil || out.Model == "" {
		return nil, badRequest(CodeMissing, "model", `field "model" is required, as "<provider>/<model>"`)
	}
	prompt, err := completionPrompt(top["prompt"])
	if err != nil {
		return nil, err
	}
	out.Messages = []chatMessage{{Role: "user", Content: jsonString(prompt)}}
	if v := top["suffix"]; !isNull(v) {
		return nil, unsupported("suffix", "insertion (fill-in-the-middle) has no chat equivalent")
	}
	if v := top["echo"]; !isNull(v) && string(bytes.TrimSpace(v)) != "false" {
		return nil, unsupported("echo", "chat models do not echo the prompt")
	}
	if v := top["max_tokens"]; !isNull(v) {
		var n int
		if err := decodeAs(v, &n, "max_tokens", "an integer"); err != nil {
			return nil, err
		}
		// max_tokens, not max_completion_tokens: it is the field every
		// chat adapter has read the longest, and means the same here.
		out.MaxTokens = &n
	}
	if v := top["n"]; !isNull(v) {
		var n int
		if err := decodeAs(v, &n, "n", "an integer"); err != nil {
			return nil, err
		}
		out.N = &n
	}
	for _, f := range []struct {
		name string
		dst  **float64
	}{{"temperature", &out.Temperature}, {"top_p", &out.TopP}} {
		if v := top[f.name]; !isNull(v) {
			var x float64
			if err := decodeAs(v, &x, f.name, "a number"); err != nil {
				return nil, err
			}
			*f.dst = &x
		}
	}
	if v := top["stop"]; !isNull(v) {
		var s any
		if err := decodeAs(v, &s, "stop", "a string or an array of strings"); err != nil {
			return nil, err
		}
		switch s.(type) {
		case string, []any:
		default:
			return nil, invalidType("stop", "a string or an array of strings")
		}
		out.Stop = v
	}
	if v := top["stream"]; !isNull(v) {
		if err := decodeAs(v, &out.Stream, "stream", "a boolean"); err != nil {
			return nil, err
		}
	}
	if v := top["stream_options"]; !isNull(v) && out.Stream {
		var so chatStreamOptions
		if err := decodeAs(v, &so, "stream_options", "an object"); err != nil {
			return nil, err
		}
		// The client decides: Completions streams carry usage only when
		// asked, like OpenAI's.
		out.StreamOptions = &so
	}
	if v := top["user"]; !isNull(v) {
		if err := decodeAs(v, &out.User, "user", "a string"); err != nil {
			return nil, err
		}
	}
	for k, v := range top {
		switch k {
		case "model", "prompt", "suffix", "echo", "max_tokens", "n", "temperature", "top_p", "stop", "stream",
			"stream_options", "user":
			continue
		}
		if completionsIgnored[k] {
			continue
		}
		if out.Extra == nil {
			out.Extra = map[string]json.RawMessage{}
		}
		out.Extra[k] = v // provider parameters (top_k...), frequency_penalty, seed...
	}
	chat, err := out.encode()
	if err != nil {
		return nil, badRequest(CodeInvalidJSON, "", "request could not be converted: %v", err)
	}
	return chat, nil
}

// completionPrompt reads prompt: a string or an array holding one string.
// Several prompts would be several independent completions in one call,
// and token-array prompts mean nothing to another provider's tokenizer.
func completionPrompt(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", badRequest(CodeMissing, "prompt", `field "prompt" is required`)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var arr []json.RawMessage
	if err := decodeAs(raw, &arr, "prompt", "a string or an array of one string"); err != nil {
		return "", err
	}
	if len(arr) != 1 {
		return "", unsupported("prompt", "only a single prompt can be converted to chat; send one request per prompt")
	}
	if err := json.Unmarshal(arr[0], &s); err != nil {
		return "", unsupported("prompt", "token-array prompts cannot be converted; send the prompt as text")
	}
	return s, nil
}

// completion is the text_completion object and chunk.
type completion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *chatUsageOut      `json:"usage,omitempty"`
}

type completionChoice struct {
	Text         string  `json:"text"`
	Index        int     `json:"index"`
	Logprobs     *string `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

// chatUsageOut is the Completions usage: chat's, with details only when
// the provider reported them.
type chatUsageOut struct {
	PromptTokens            int `json:"prompt_tokens"`
	CompletionTokens        int `json:"completion_tokens"`
	TotalTokens             int `json:"total_tokens"`
	PromptTokensDetails     any `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails any `json:"completion_tokens_details,omitempty"`
}

func completionUsage(u *chatUsage) *chatUsageOut {
	if u == nil {
		return nil
	}
	o := &chatUsageOut{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if o.TotalTokens == 0 {
		o.TotalTokens = o.PromptTokens + o.CompletionTokens
	}
	if u.PromptTokensDetails != nil {
		o.PromptTokensDetails = u.PromptTokensDetails
	}
	if u.CompletionTokensDetails != nil {
		o.CompletionTokensDetails = u.CompletionTokensDetails
	}
	return o
}

func completionID(chatID string) string { return "cmpl-" + idPart(chatID) }

// completionFinish maps chat finish reasons onto the Completions ones
// (stop, length, content_filter); a tool call cannot happen without tools.
func completionFinish(r string) *string {
	switch r {
	case "":
		return nil
	case "tool_calls", "function_call":
		r = "stop"
	}
	return &r
}

// ChatToCompletion converts a unified chat.completion body into a
// text_completion object. model is the model the client asked for (the
// chat model when empty).
func ChatToCompletion(chat []byte, model string) ([]byte, error) {
	var c chatResponse
	if err := json.Unmarshal(chat, &c); err != nil {
		return nil, upstreamMalformed("chat completion", err)
	}
	if model == "" {
		model = c.Model
	}
	out := completion{ID: completionID(c.ID), Object: "text_completion", Created: c.Created, Model: model,
		Choices: make([]completionChoice, 0, len(c.Choices)), Usage: completionUsage(c.Usage)}
	for i, ch := range c.Choices {
		var text strings.Builder
		if ch.Message.Content != nil {
			text.WriteString(*ch.Message.Content)
		}
		fr := completionFinish(ch.FinishReason)
		if fr == nil {
			stop := "stop"
			fr = &stop
		}
		out.Choices = append(out.Choices, completionChoice{Text: text.String(), Index: i, FinishReason: fr})
	}
	return marshal(out)
}

// CompletionStream converts unified chat chunks into text_completion
// chunks, one for one. Events are unnamed (the Completions wire uses plain
// data lines); the host ends the stream with "data: [DONE]" as for chat.
type CompletionStream struct {
	model string
	id    string
}

// NewCompletionStream starts a stream conversion; model is the model the
// client asked for (the chunks' model when empty).
func NewCompletionStream(model string) *CompletionStream { return &CompletionStream{model: model} }

// Chunk converts one chat chunk. Role-only chunks, which carry nothing a
// Completions client could use, produce no event; the usage chunk becomes a
// chunk with no choices, as OpenAI sends it.
func (s *CompletionStream) Chunk(chunk []byte) ([]Event, error) {
	t := bytes.TrimSpace(chunk)
	if len(t) == 0 || string(t) == "[DONE]" || string(t) == `"[DONE]"` {
		return nil, nil
	}
	var c chatChunk
	if err := json.Unmarshal(t, &c); err != nil {
		return nil, upstreamMalformed("stream chunk", err)
	}
	if s.id == "" {
		// One id for the whole stream even if an adapter varies it.
		s.id = completionID(c.ID)
	}
	model := s.model
	if model == "" {
		model = c.Model
	}
	out := completion{ID: s.id, Object: "text_completion", Created: c.Created, Model: model, Choices: []completionChoice{}}
	for _, ch := range c.Choices {
		text := ""
		if ch.Delta.Content != nil {
			text = *ch.Delta.Content
		}
		var fr *string
		if ch.FinishReason != nil {
			fr = completionFinish(*ch.FinishReason)
		}
		if text == "" && fr == nil {
			continue
		}
		out.Choices = append(out.Choices, completionChoice{Text: text, Index: ch.Index, FinishReason: fr})
	}
	if c.Usage != nil {
		out.Usage = completionUsage(c.Usage)
	}
	if len(out.Choices) == 0 && out.Usage == nil {
		return nil, nil
	}
	b, err := marshal(out)
	if err != nil {
		return nil, err
	}
	return []Event{{Data: b}}, nil
}
