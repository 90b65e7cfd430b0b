package main

// The drop-in route (/genai/...) speaks Gemini's own wire to clients:
// ingress_request decodes a native generateContent request into a unified
// chat request, egress_response and egress_stream encode unified answers
// back. These hooks use encoding/json over typed structs: the native
// shapes are deeply nested and optional, and clarity wins over the
// byte-level approach of the adapt_* hot paths (measure before changing).
//
// Ingress input envelope. The drop-in route carries the model and the
// method in the URL path (/genai/v1beta/models/{model}:generateContent or
// :streamGenerateContent), not in the body, so the host wraps the body:
//
//	{"model": "gemini/gemini-2.5-flash", "stream": true, "body": {<GenerateContentRequest>}}
//
// "model" is copied to the unified request as is (the host decides its
// routing form); "stream" is true for streamGenerateContent. A bare
// GenerateContentRequest (no "body" member) is accepted too, without model.

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// Native Gemini types, only the members the translation uses.
type (
	gContent struct {
		Role  string  `json:"role,omitempty"`
		Parts []gPart `json:"parts"`
	}
	gPart struct {
		Text             string           `json:"text,omitempty"`
		Thought          bool             `json:"thought,omitempty"`
		ThoughtSignature string           `json:"thoughtSignature,omitempty"`
		InlineData       *gBlob           `json:"inlineData,omitempty"`
		FileData         *gFileData       `json:"fileData,omitempty"`
		FunctionCall     *gFunctionCall   `json:"functionCall,omitempty"`
		FunctionResponse *gFunctionResult `json:"functionResponse,omitempty"`
	}
	gBlob struct {
		MimeType string `json:"mimeType"`
		Data     string `json:"data"`
	}
	gFileData struct {
		MimeType string `json:"mimeType,omitempty"`
		FileURI  string `json:"fileUri"`
	}
	gFunctionCall struct {
		ID   string          `json:"id,omitempty"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args,omitempty"`
	}
	gFunctionResult struct {
		ID       string          `json:"id,omitempty"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response,omitempty"`
	}
	gRequest struct {
		Contents          []gContent      `json:"contents"`
		SystemInstruction *gContent       `json:"systemInstruction,omitempty"`
		Tools             []gTool         `json:"tools,omitempty"`
		ToolConfig        *gToolConfig    `json:"toolConfig,omitempty"`
		GenerationConfig  *gGenConfig     `json:"generationConfig,omitempty"`
		SafetySettings    json.RawMessage `json:"safetySettings,omitempty"`
		CachedContent     string          `json:"cachedContent,omitempty"`
	}
	gTool struct {
		FunctionDeclarations []gFunctionDecl `json:"functionDeclarations,omitempty"`
	}
	gFunctionDecl struct {
		Name                 string          `json:"name"`
		Description          string          `json:"description,omitempty"`
		Parameters           json.RawMessage `json:"parameters,omitempty"`
		ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
	}
	gToolConfig struct {
		FunctionCallingConfig *struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
		} `json:"functionCallingConfig,omitempty"`
	}
	gGenConfig struct {
		Temperature        *float64        `json:"temperature,omitempty"`
		TopP               *float64        `json:"topP,omitempty"`
		TopK               *float64        `json:"topK,omitempty"`
		MaxOutputTokens    *int            `json:"maxOutputTokens,omitempty"`
		StopSequences      []string        `json:"stopSequences,omitempty"`
		CandidateCount     *int            `json:"candidateCount,omitempty"`
		PresencePenalty    *float64        `json:"presencePenalty,omitempty"`
		FrequencyPenalty   *float64        `json:"frequencyPenalty,omitempty"`
		Seed               *int64          `json:"seed,omitempty"`
		ResponseMimeType   string          `json:"responseMimeType,omitempty"`
		ResponseSchema     json.RawMessage `json:"responseSchema,omitempty"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
		ThinkingConfig     *struct {
			IncludeThoughts bool   `json:"includeThoughts,omitempty"`
			ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
			ThinkingLevel   string `json:"thinkingLevel,omitempty"`
		} `json:"thinkingConfig,omitempty"`
	}
	gCandidate struct {
		Content      gContent `json:"content"`
		FinishReason string   `json:"finishReason,omitempty"`
		Index        int      `json:"index"`
	}
	gUsage struct {
		PromptTokenCount        int `json:"promptTokenCount"`
		CandidatesTokenCount    int `json:"candidatesTokenCount"`
		TotalTokenCount         int `json:"totalTokenCount"`
		CachedContentTokenCount int `json:"cachedContentTokenCount,omitempty"`
		ThoughtsTokenCount      int `json:"thoughtsTokenCount,omitempty"`
	}
	gResponse struct {
		Candidates    []gCandidate `json:"candidates,omitempty"`
		UsageMetadata *gUsage      `json:"usageMetadata,omitempty"`
		ModelVersion  string       `json:"modelVersion,omitempty"`
		ResponseID    string       `json:"responseId,omitempty"`
	}
)

// ingressEnvelope is the ingress_request input (see the file comment).
type ingressEnvelope struct {
	Model  string          `json:"model"`
	Stream bool            `json:"stream"`
	Body   json.RawMessage `json:"body"`
}

// IngressRequest decodes a native generateContent request (in the
// envelope above) into a unified chat request.
func (a *Adapter) IngressRequest(in []byte) (pluginsdk.Output, error) {
	var env ingressEnvelope
	if err := json.Unmarshal(in, &env); err != nil {
		return pluginsdk.Output{}, badRequest("invalid JSON: %v", err)
	}
	body := []byte(env.Body)
	if len(body) == 0 || isNull(body) {
		body = in // a bare GenerateContentRequest
	}
	var req gRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return pluginsdk.Output{}, badRequest("invalid generateContent request: %v", err)
	}
	out, err := ingress(&req, env.Model, env.Stream)
	if err != nil {
		return pluginsdk.Output{}, err
	}
	return pluginsdk.Replace(out), nil
}

// Unified request shapes written by ingress, with map-free encoding.
type (
	uRequest struct {
		Model               string          `json:"model,omitempty"`
		Messages            []uMessage      `json:"messages"`
		Stream              bool            `json:"stream,omitempty"`
		StreamOptions       *uStreamOptions `json:"stream_options,omitempty"`
		Temperature         *float64        `json:"temperature,omitempty"`
		TopP                *float64        `json:"top_p,omitempty"`
		TopK                *float64        `json:"top_k,omitempty"`
		MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
		Stop                []string        `json:"stop,omitempty"`
		N                   *int            `json:"n,omitempty"`
		PresencePenalty     *float64        `json:"presence_penalty,omitempty"`
		FrequencyPenalty    *float64        `json:"frequency_penalty,omitempty"`
		Seed                *int64          `json:"seed,omitempty"`
		ResponseFormat      json.RawMessage `json:"response_format,omitempty"`
		ReasoningEffort     string          `json:"reasoning_effort,omitempty"`
		Tools               []uTool         `json:"tools,omitempty"`
		ToolChoice          json.RawMessage `json:"tool_choice,omitempty"`
		SafetySettings      json.RawMessage `json:"safety_settings,omitempty"`
		CachedContent       string          `json:"cached_content,omitempty"`
	}
	uStreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	uMessage struct {
		Role             string          `json:"role"`
		Content          json.RawMessage `json:"content,omitempty"`
		ReasoningContent string          `json:"reasoning_content,omitempty"`
		ToolCalls        []uToolCall     `json:"tool_calls,omitempty"`
		ToolCallID       string          `json:"tool_call_id,omitempty"`
		Name             string          `json:"name,omitempty"`
	}
	uToolCall struct {
		Index        *int           `json:"index,omitempty"`
		ID           string         `json:"id,omitempty"`
		Type         string         `json:"type,omitempty"`
		Function     uFunction      `json:"function"`
		ExtraContent *uExtraContent `json:"extra_content,omitempty"`
	}
	uFunction struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	}
	uExtraContent struct {
		Google struct {
			ThoughtSignature string `json:"thought_signature,omitempty"`
		} `json:"google"`
	}
	uTool struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters,omitempty"`
		} `json:"function"`
	}
	uPart struct {
		Type       string  `json:"type"`
		Text       string  `json:"text,omitempty"`
		ImageURL   *uURL   `json:"image_url,omitempty"`
		InputAudio *uAudio `json:"input_audio,omitempty"`
		File       *uFile  `json:"file,omitempty"`
	}
	uURL struct {
		URL string `json:"url"`
	}
	uAudio struct {
		Data   string `json:"data"`
		Format string `json:"format"`
	}
	uFile struct {
		FileData string `json:"file_data,omitempty"`
		FileID   string `json:"file_id,omitempty"`
	}
)

func signatureOf(sig string) *uExtraContent {
	if sig == "" {
		return nil
	}
	x := &uExtraContent{}
	x.Google.ThoughtSignature = sig
	return x
}

func ingress(req *gRequest, model string, stream bool) ([]byte, error) {
	u := uRequest{Model: model, Stream: stream, Messages: []uMessage{}}
	if stream {
		// Gemini always reports usage at the end of a stream; ask the
		// unified pipeline for it so egress_stream can do the same.
		u.StreamOptions = &uStreamOptions{IncludeUsage: true}
	}
	if si := req.SystemInstruction; si != nil {
		var sb strings.Builder
		for _, p := range si.Parts {
			sb.WriteString(p.Text)
		}
		if sb.Len() > 0 {
			u.Messages = append(u.Messages, uMessage{Role: "system", Content: jsonString(sb.String())})
		}
	}
	// Calls get ids in conversation order; a functionResponse answers the
	// oldest unanswered call of its name (Gemini pairs them by name and
	// position), unless both carry Gemini's own id.
	pending := map[string][]string{}
	next := 0
	for ci, c := range req.Contents {
		switch c.Role {
		case "model":
			m := uMessage{Role: "assistant"}
			var text, thought strings.Builder
			for _, p := range c.Parts {
				switch {
				case p.FunctionCall != nil:
					id := p.FunctionCall.ID
					if id == "" {
						id = fmt.Sprintf("call_%d", next)
					}
					next++
					pending[p.FunctionCall.Name] = append(pending[p.FunctionCall.Name], id)
					args := string(p.FunctionCall.Args)
					if args == "" {
						args = "{}"
					}
					m.ToolCalls = append(m.ToolCalls, uToolCall{ID: id, Type: "function",
						Function: uFunction{Name: p.FunctionCall.Name, Arguments: args}, ExtraContent: signatureOf(p.ThoughtSignature)})
				case p.Thought:
					thought.WriteString(p.Text)
				default:
					text.WriteString(p.Text)
				}
			}
			if text.Len() > 0 || len(m.ToolCalls) == 0 {
				m.Content = jsonString(text.String())
			}
			m.ReasoningContent = thought.String()
			u.Messages = append(u.Messages, m)
		case "user", "", "function", "tool":
			var parts []uPart
			textOnly := true
			for _, p := range c.Parts {
				switch {
				case p.FunctionResponse != nil:
					fr := p.FunctionResponse
					id := fr.ID
					if q := pending[fr.Name]; id == "" && len(q) > 0 {
						id, pending[fr.Name] = q[0], q[1:]
					} else if id == "" {
						id = fmt.Sprintf("call_%d", next)
						next++
					}
					resp := string(fr.Response)
					if resp == "" {
						resp = "{}"
					}
					u.Messages = append(u.Messages, uMessage{Role: "tool", ToolCallID: id, Name: fr.Name, Content: jsonString(resp)})
				case p.InlineData != nil:
					textOnly = false
					parts = append(parts, mediaPart(p.InlineData.MimeType, "data:"+p.InlineData.MimeType+";base64,"+p.InlineData.Data, p.InlineData.Data))
				case p.FileData != nil:
					textOnly = false
					parts = append(parts, mediaPart(p.FileData.MimeType, p.FileData.FileURI, ""))
				case p.Text != "":
					parts = append(parts, uPart{Type: "text", Text: p.Text})
				}
			}
			if len(parts) == 0 {
				continue
			}
			m := uMessage{Role: "user"}
			if textOnly {
				var sb strings.Builder
				for _, p := range parts {
					sb.WriteString(p.Text)
				}
				m.Content = jsonString(sb.String())
			} else {
				b, err := json.Marshal(parts)
				if err != nil {
					return nil, badRequest("contents[%d]: %v", ci, err)
				}
				m.Content = b
			}
			u.Messages = append(u.Messages, m)
		default:
			return nil, badRequest("contents[%d]: unsupported role %q", ci, c.Role)
		}
	}
	if gc := req.GenerationConfig; gc != nil {
		u.Temperature, u.TopP, u.TopK = gc.Temperature, gc.TopP, gc.TopK
		u.MaxCompletionTokens, u.Stop, u.N = gc.MaxOutputTokens, gc.StopSequences, gc.CandidateCount
		u.PresencePenalty, u.FrequencyPenalty, u.Seed = gc.PresencePenalty, gc.FrequencyPenalty, gc.Seed
		if gc.ResponseMimeType == "application/json" {
			schema := gc.ResponseJSONSchema
			if len(schema) == 0 {
				schema = gc.ResponseSchema
			}
			if len(schema) > 0 {
				u.ResponseFormat = json.RawMessage(`{"type":"json_schema","json_schema":{"name":"response","schema":` + string(schema) + `}}`)
			} else {
				u.ResponseFormat = json.RawMessage(`{"type":"json_object"}`)
			}
		}
		if tc := gc.ThinkingConfig; tc != nil {
			u.ReasoningEffort = effortOf(tc.ThinkingBudget, tc.ThinkingLevel)
		}
	}
	for _, t := range req.Tools {
		for _, fd := range t.FunctionDeclarations {
			var ut uTool
			ut.Type = "function"
			ut.Function.Name, ut.Function.Description = fd.Name, fd.Description
			ut.Function.Parameters = fd.ParametersJSONSchema
			if len(ut.Function.Parameters) == 0 {
				ut.Function.Parameters = fd.Parameters
			}
			u.Tools = append(u.Tools, ut)
		}
	}
	if tc := req.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil {
		fc := tc.FunctionCallingConfig
		switch strings.ToUpper(fc.Mode) {
		case "NONE":
			u.ToolChoice = json.RawMessage(`"none"`)
		case "ANY":
			if len(fc.AllowedFunctionNames) == 1 {
				u.ToolChoice = json.RawMessage(`{"type":"function","function":{"name":` + string(jsonString(fc.AllowedFunctionNames[0])) + `}}`)
			} else {
				u.ToolChoice = json.RawMessage(`"required"`)
			}
		case "AUTO", "VALIDATED":
			u.ToolChoice = json.RawMessage(`"auto"`)
		}
	}
	u.SafetySettings, u.CachedContent = req.SafetySettings, req.CachedContent
	b, err := json.Marshal(u)
	if err != nil {
		return nil, badRequest("encode unified request: %v", err)
	}
	return b, nil
}

// mediaPart maps inline or file data to a unified content part by MIME
// type: images to image_url, audio to input_audio (inline only), anything
// else to file.
func mediaPart(mime, url, inlineData string) uPart {
	switch {
	case strings.HasPrefix(mime, "image/") || mime == "" && inlineData == "":
		return uPart{Type: "image_url", ImageURL: &uURL{URL: url}}
	case strings.HasPrefix(mime, "audio/") && inlineData != "":
		return uPart{Type: "input_audio", InputAudio: &uAudio{Data: inlineData, Format: strings.TrimPrefix(mime, "audio/")}}
	case inlineData != "":
		return uPart{Type: "file", File: &uFile{FileData: url}}
	}
	return uPart{Type: "file", File: &uFile{FileID: url}}
}

// effortOf maps a thinking budget or level back to reasoning_effort, with
// the same thresholds appendThinking uses the other way; dynamic (-1) or
// absent means the model's default, so no effort is set.
func effortOf(budget *int, level string) string {
	switch strings.ToLower(level) {
	case "low", "minimal":
		return "low"
	case "medium":
		return "medium"
	case "high":
		return "high"
	}
	switch {
	case budget == nil || *budget < 0:
		return ""
	case *budget == 0:
		return "none"
	case *budget <= 1024:
		return "low"
	case *budget <= 8192:
		return "medium"
	}
	return "high"
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// EgressResponse encodes a unified chat.completion as a
// GenerateContentResponse.
func (a *Adapter) EgressResponse(in []byte) (pluginsdk.Output, error) {
	var r pluginsdk.ChatResponse
	if err := json.Unmarshal(in, &r); err != nil {
		return pluginsdk.Output{}, pluginsdk.Reject(500, "egress: unified response is not valid: %v", err)
	}
	g := gResponse{ModelVersion: r.Model, ResponseID: strings.TrimPrefix(r.ID, "chatcmpl-"), Candidates: []gCandidate{}}
	for _, c := range r.Choices {
		cand := gCandidate{Index: c.Index, Content: gContent{Role: "model", Parts: []gPart{}}}
		cand.Content.Parts = appendNativeParts(cand.Content.Parts, reasoningOf(c.Message.Extra), contentText(c.Message.Content), c.Message.ToolCalls)
		cand.FinishReason = nativeFinish(c.FinishReason)
		g.Candidates = append(g.Candidates, cand)
	}
	g.UsageMetadata = nativeUsage(r.Usage)
	b, err := json.Marshal(g)
	if err != nil {
		return pluginsdk.Output{}, pluginsdk.Reject(500, "egress: %v", err)
	}
	return pluginsdk.Replace(b), nil
}

// appendNativeParts writes thought, text and function call parts; the
// thought signature kept on a tool call goes back onto its part.
func appendNativeParts(parts []gPart, thought, text string, calls []pluginsdk.ToolCall) []gPart {
	if thought != "" {
		parts = append(parts, gPart{Text: thought, Thought: true})
	}
	if text != "" {
		parts = append(parts, gPart{Text: text})
	}
	for _, tc := range calls {
		args := json.RawMessage(tc.Function.Arguments)
		if !jsonx.Valid(args) {
			args = json.RawMessage(`{}`)
		}
		parts = append(parts, gPart{FunctionCall: &gFunctionCall{Name: tc.Function.Name, Args: args},
			ThoughtSignature: toolSignature(tc.Extra)})
	}
	return parts
}

func toolSignature(extra map[string]pluginsdk.RawJSON) string {
	var x uExtraContent
	if raw, ok := extra["extra_content"]; ok && json.Unmarshal(raw, &x) == nil {
		return x.Google.ThoughtSignature
	}
	return ""
}

func reasoningOf(extra map[string]pluginsdk.RawJSON) string {
	var s string
	if raw, ok := extra["reasoning_content"]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

// contentText reads a unified content value: a string or text parts.
func contentText(raw pluginsdk.RawJSON) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteString(p.Text)
	}
	return sb.String()
}

func nativeFinish(r string) string {
	switch r {
	case "":
		return ""
	case "length":
		return "MAX_TOKENS"
	case "content_filter":
		return "SAFETY"
	}
	return "STOP" // stop, tool_calls: Gemini says STOP for both
}

func nativeUsage(u *pluginsdk.Usage) *gUsage {
	if u == nil {
		return nil
	}
	g := &gUsage{PromptTokenCount: u.PromptTokens, TotalTokenCount: u.TotalTokens, CandidatesTokenCount: u.CompletionTokens}
	if d := u.CompletionTokensDetails; d != nil {
		// Gemini counts thoughts apart from candidates.
		g.ThoughtsTokenCount = d.ReasoningTokens
		g.CandidatesTokenCount -= d.ReasoningTokens
	}
	if d := u.PromptTokensDetails; d != nil {
		g.CachedContentTokenCount = d.CachedTokens
	}
	return g
}

// egressState is egress_stream's per-stream state: tool calls are
// assembled from unified fragments (other providers stream arguments in
// pieces, Gemini clients expect whole calls), and the finish event is
// held back so the usage that follows it in the unified stream can ride
// on it, where Gemini puts usage.
type egressState struct {
	Model  string        `json:"model,omitempty"`
	ID     string        `json:"id,omitempty"`
	Calls  []pendingCall `json:"calls,omitempty"`
	Finish *gResponse    `json:"finish,omitempty"`
}

type pendingCall struct {
	Choice int    `json:"choice"`
	Index  int    `json:"index"`
	Name   string `json:"name,omitempty"`
	Args   string `json:"args,omitempty"`
	Sig    string `json:"sig,omitempty"`
}

// nativeEvent is one element of egress_stream's output array.
type nativeEvent struct {
	Data *gResponse `json:"data"`
}

// EgressStream encodes unified chunks as Gemini stream events.
func (a *Adapter) EgressStream(in pluginsdk.StreamInput) (pluginsdk.Output, error) {
	var st egressState
	if len(in.State) > 0 {
		if err := json.Unmarshal(in.State, &st); err != nil {
			return pluginsdk.Output{}, pluginsdk.Reject(500, "egress: corrupt stream state")
		}
	}
	var chunks []json.RawMessage
	if len(in.Batch) > 0 {
		if err := json.Unmarshal(in.Batch, &chunks); err != nil {
			return pluginsdk.Output{}, pluginsdk.Reject(500, "egress: batch is not a JSON array: %v", err)
		}
	}
	events := []nativeEvent{}
	for _, raw := range chunks {
		var ch pluginsdk.ChatChunk
		if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &ch) != nil {
			continue // "[DONE]" and the like
		}
		events = st.chunk(events, &ch)
	}
	if in.End {
		events = st.flush(events)
	}
	body, err := json.Marshal(events)
	if err != nil {
		return pluginsdk.Output{}, pluginsdk.Reject(500, "egress: %v", err)
	}
	state, _ := json.Marshal(st)
	return pluginsdk.Output{Status: pluginsdk.StatusOK, Body: body, State: state}, nil
}

func (st *egressState) event(cands []gCandidate) *gResponse {
	return &gResponse{Candidates: cands, ModelVersion: st.Model, ResponseID: st.ID}
}

func (st *egressState) chunk(events []nativeEvent, ch *pluginsdk.ChatChunk) []nativeEvent {
	if st.Model == "" {
		st.Model = ch.Model
	}
	if st.ID == "" {
		st.ID = strings.TrimPrefix(ch.ID, "chatcmpl-")
	}
	for _, c := range ch.Choices {
		var text string
		if c.Delta.Content != nil {
			text = *c.Delta.Content
		}
		if parts := appendNativeParts(nil, reasoningOf(c.Delta.Extra), text, nil); len(parts) > 0 {
			events = append(events, nativeEvent{st.event([]gCandidate{{Index: c.Index, Content: gContent{Role: "model", Parts: parts}}})})
		}
		for pos, tc := range c.Delta.ToolCalls {
			idx := pos
			if tc.Index != nil {
				idx = *tc.Index
			}
			st.addCall(c.Index, idx, &tc)
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			cand := gCandidate{Index: c.Index, Content: gContent{Role: "model", Parts: st.takeCalls(c.Index)},
				FinishReason: nativeFinish(*c.FinishReason)}
			if st.Finish == nil {
				st.Finish = st.event(nil)
			}
			st.Finish.Candidates = append(st.Finish.Candidates, cand)
		}
	}
	if ch.Usage != nil {
		ev := st.Finish
		if ev == nil {
			ev = st.event(nil)
		}
		ev.UsageMetadata = nativeUsage(ch.Usage)
		events = append(events, nativeEvent{ev})
		st.Finish = nil
	}
	return events
}

func (st *egressState) addCall(choice, index int, tc *pluginsdk.ToolCall) {
	for i := range st.Calls {
		if pc := &st.Calls[i]; pc.Choice == choice && pc.Index == index {
			if tc.Function.Name != "" {
				pc.Name = tc.Function.Name
			}
			pc.Args += tc.Function.Arguments
			if s := toolSignature(tc.Extra); s != "" {
				pc.Sig = s
			}
			return
		}
	}
	st.Calls = append(st.Calls, pendingCall{Choice: choice, Index: index, Name: tc.Function.Name,
		Args: tc.Function.Arguments, Sig: toolSignature(tc.Extra)})
}

// takeCalls removes the assembled calls of a choice and returns them as
// functionCall parts.
func (st *egressState) takeCalls(choice int) []gPart {
	parts := []gPart{}
	kept := st.Calls[:0]
	for _, pc := range st.Calls {
		if pc.Choice != choice {
			kept = append(kept, pc)
			continue
		}
		args := json.RawMessage(pc.Args)
		if !jsonx.Valid(args) {
			args = json.RawMessage(`{}`)
		}
		parts = append(parts, gPart{FunctionCall: &gFunctionCall{Name: pc.Name, Args: args}, ThoughtSignature: pc.Sig})
	}
	st.Calls = kept
	return parts
}

// flush sends what is held at the end of the stream: calls that never got
// a finish chunk and the held finish event.
func (st *egressState) flush(events []nativeEvent) []nativeEvent {
	for len(st.Calls) > 0 {
		choice := st.Calls[0].Choice
		cand := gCandidate{Index: choice, Content: gContent{Role: "model", Parts: st.takeCalls(choice)}, FinishReason: "STOP"}
		if st.Finish == nil {
			st.Finish = st.event(nil)
		}
		st.Finish.Candidates = append(st.Finish.Candidates, cand)
	}
	if st.Finish != nil {
		events = append(events, nativeEvent{st.Finish})
		st.Finish = nil
	}
	return events
}
