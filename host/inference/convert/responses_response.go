package convert

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// chatUsage is the unified usage; only what the Responses usage reports.
type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// chatResponse is the unified chat.completion, read leniently: adapters put
// reasoning in reasoning_content (some in reasoning).
type chatResponse struct {
	ID      string `json:"id"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content          *string `json:"content"`
			Refusal          *string `json:"refusal"`
			ReasoningContent *string `json:"reasoning_content"`
			Reasoning        *string `json:"reasoning"`
			ToolCalls        []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *chatUsage `json:"usage"`
}

// response is the Responses API object, fields in OpenAI's order.
type response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Background         bool               `json:"background"`
	Error              *responseError     `json:"error"`
	IncompleteDetails  *incompleteDetails `json:"incomplete_details"`
	Instructions       json.RawMessage    `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []json.RawMessage  `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          json.RawMessage    `json:"reasoning"`
	Store              bool               `json:"store"`
	Temperature        float64            `json:"temperature"`
	Text               json.RawMessage    `json:"text"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              json.RawMessage    `json:"tools"`
	TopP               float64            `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *responseUsage     `json:"usage"`
	User               *string            `json:"user"`
	Metadata           json.RawMessage    `json:"metadata"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

type responseUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// Output items. Status is in_progress while streaming, completed after.
type messageItem struct {
	ID      string            `json:"id"`
	Type    string            `json:"type"`
	Status  string            `json:"status"`
	Content []json.RawMessage `json:"content"`
	Role    string            `json:"role"`
}

type outputTextPart struct {
	Type        string   `json:"type"`
	Annotations []string `json:"annotations"`
	Logprobs    []string `json:"logprobs"`
	Text        string   `json:"text"`
}

type refusalPart struct {
	Type    string `json:"type"`
	Refusal string `json:"refusal"`
}

type functionCallItem struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
}

type reasoningItem struct {
	ID      string        `json:"id"`
	Type    string        `json:"type"`
	Summary []summaryText `json:"summary"`
}

type summaryText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// newResponse fills the envelope and the echo fields. Defaults are OpenAI's
// own for a request that did not set them, so SDK code reading them sees
// the same values it would from OpenAI.
func newResponse(id string, created int64, model string, echo *Echo) *response {
	r := &response{ID: id, Object: "response", CreatedAt: created, Status: "in_progress", Model: model,
		Output: []json.RawMessage{}, ParallelToolCalls: true, Temperature: 1, TopP: 1, Truncation: "disabled",
		Instructions: json.RawMessage("null"), Reasoning: json.RawMessage(`{"effort":null,"summary":null}`),
		Text: json.RawMessage(`{"format":{"type":"text"}}`), ToolChoice: json.RawMessage(`"auto"`),
		Tools: json.RawMessage("[]"), Metadata: json.RawMessage("{}")}
	if echo == nil {
		return r
	}
	setRaw := func(dst *json.RawMessage, v json.RawMessage) {
		if !isNull(v) {
			*dst = v
		}
	}
	setRaw(&r.Instructions, echo.Instructions)
	setRaw(&r.Reasoning, echo.Reasoning)
	setRaw(&r.Text, echo.Text)
	setRaw(&r.ToolChoice, echo.ToolChoice)
	setRaw(&r.Tools, echo.Tools)
	setRaw(&r.Metadata, echo.Metadata)
	if echo.ParallelToolCalls != nil {
		r.ParallelToolCalls = *echo.ParallelToolCalls
	}
	if echo.Temperature != nil {
		r.Temperature = *echo.Temperature
	}
	if echo.TopP != nil {
		r.TopP = *echo.TopP
	}
	r.MaxOutputTokens = echo.MaxOutputTokens
	if echo.User != "" {
		u := echo.User
		r.User = &u
	}
	return r
}

// finish sets the terminal status from the chat finish_reason: a cut-off
// answer is "incomplete", as OpenAI reports it.
func (r *response) finish(finishReason string) {
	r.Status = "completed"
	switch finishReason {
	case "length":
		r.Status, r.IncompleteDetails = "incomplete", &incompleteDetails{Reason: "max_output_tokens"}
	case "content_filter":
		r.Status, r.IncompleteDetails = "incomplete", &incompleteDetails{Reason: "content_filter"}
	}
}

func convertUsage(u *chatUsage) *responseUsage {
	if u == nil {
		return nil
	}
	ru := &responseUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if ru.TotalTokens == 0 {
		ru.TotalTokens = ru.InputTokens + ru.OutputTokens
	}
	if d := u.PromptTokensDetails; d != nil {
		ru.InputTokensDetails.CachedTokens = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		ru.OutputTokensDetails.ReasoningTokens = d.ReasoningTokens
	}
	return ru
}

// Item ids derive from the chat id (and the call id) rather than being
// random, so a conversion is a pure function and the ids stay stable.
func responseID(chatID string) string { return "resp_" + idPart(chatID) }
func messageID(chatID string, n int) string {
	if n == 0 {
		return "msg_" + idPart(chatID)
	}
	return fmt.Sprintf("msg_%s_%d", idPart(chatID), n)
}
func reasoningID(chatID string, n int) string {
	if n == 0 {
		return "rs_" + idPart(chatID)
	}
	return fmt.Sprintf("rs_%s_%d", idPart(chatID), n)
}
func functionCallID(callID string) string { return "fc_" + callID }

// idPart is the chat id without its chatcmpl- prefix; an adapter that sends
// no id gets a random one, as a response must have one.
func idPart(chatID string) string {
	const p = "chatcmpl-"
	if len(chatID) > len(p) && chatID[:len(p)] == p {
		return chatID[len(p):]
	}
	if chatID == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}
	return chatID
}

func mustMarshal(v any) json.RawMessage {
	b, err := marshal(v)
	if err != nil {
		// Only the package's own structs come here; they always encode.
		panic(err)
	}
	return b
}

// ChatToResponse converts a unified chat.completion body into a Responses
// API object. model is the model the client asked for (the chat model when
// empty); echo, from ResponsesToChatEcho, fills the request echo fields.
func ChatToResponse(chat []byte, model string, echo ...*Echo) ([]byte, error) {
	var c chatResponse
	if err := json.Unmarshal(chat, &c); err != nil {
		return nil, upstreamMalformed("chat completion", err)
	}
	if model == "" {
		model = c.Model
	}
	if c.ID == "" {
		c.ID = idPart("")
	}
	r := newResponse(responseID(c.ID), c.Created, model, firstEcho(echo))
	finish := ""
	if len(c.Choices) > 0 {
		ch := &c.Choices[0]
		m := &ch.Message
		finish = ch.FinishReason
		reasoning := m.ReasoningContent
		if reasoning == nil {
			reasoning = m.Reasoning
		}
		if reasoning != nil && *reasoning != "" {
			r.Output = append(r.Output, mustMarshal(reasoningItem{ID: reasoningID(c.ID, 0), Type: "reasoning",
				Summary: []summaryText{{Type: "summary_text", Text: *reasoning}}}))
		}
		var content []json.RawMessage
		if m.Content != nil && *m.Content != "" {
			content = append(content, mustMarshal(newOutputText(*m.Content)))
		}
		if m.Refusal != nil && *m.Refusal != "" {
			content = append(content, mustMarshal(refusalPart{Type: "refusal", Refusal: *m.Refusal}))
		}
		if len(content) > 0 {
			r.Output = append(r.Output, mustMarshal(messageItem{ID: messageID(c.ID, 0), Type: "message",
				Status: "completed", Content: content, Role: "assistant"}))
		}
		for _, tc := range m.ToolCalls {
			r.Output = append(r.Output, mustMarshal(functionCallItem{ID: functionCallID(tc.ID), Type: "function_call",
				Status: "completed", Arguments: tc.Function.Arguments, CallID: tc.ID, Name: tc.Function.Name}))
		}
	}
	r.finish(finish)
	r.Usage = convertUsage(c.Usage)
	return marshal(r)
}

func newOutputText(text string) outputTextPart {
	return outputTextPart{Type: "output_text", Annotations: []string{}, Logprobs: []string{}, Text: text}
}

func firstEcho(echo []*Echo) *Echo {
	if len(echo) > 0 {
		return echo[0]
	}
	return nil
}
