package main

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// chatResponse translates a GenerateContentResponse into chat.completion.
func chatResponse(dst, body []byte, model string) ([]byte, error) {
	var cands, usage, feedback []byte
	id, version := "", ""
	forEachMember(body, func(k, v []byte) bool {
		switch string(k) {
		case "candidates":
			cands = v
		case "usageMetadata":
			usage = v
		case "promptFeedback":
			feedback = v
		case "modelVersion":
			version = unquote(v)
		case "responseId":
			id = unquote(v)
		}
		return true
	})
	if e := get(body, "error"); e != nil {
		return nil, streamError(e)
	}
	if version != "" {
		model = version
	}
	dst = append(dst, `{"id":`...)
	dst = jsonx.AppendString(dst, completionID(id))
	dst = append(dst, `,"object":"chat.completion","created":`...)
	dst = strconv.AppendInt(dst, now(), 10)
	dst = append(dst, `,"model":`...)
	dst = jsonx.AppendString(dst, model)
	dst = append(dst, `,"choices":[`...)
	n := 0
	var buf [8]part
	parts := buf[:0]
	forEachElem(cands, func(i int, c []byte) {
		dst = appendComma(dst)
		dst, parts = appendChoice(dst, c, i, parts)
		n++
	})
	if n == 0 && feedback != nil {
		// The prompt itself was blocked: no candidates, only a reason.
		dst = append(dst, `{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"content_filter"}`...)
	}
	dst = append(dst, ']')
	if usage != nil {
		dst = append(dst, `,"usage":`...)
		dst = appendUsage(dst, usage)
	}
	return append(dst, '}'), nil
}

// completionID derives the unified id from Google's responseId, so logs on
// both sides can be matched; a random one when absent.
func completionID(responseID string) string {
	if responseID != "" {
		return "chatcmpl-" + responseID
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "chatcmpl-" + hex.EncodeToString(b[:])
}

// part is one Gemini content part, read in a single pass over its
// members: scanning a part once per question would walk its text again
// each time, and texts are most of the bytes.
type part struct {
	text, call, sig []byte // raw values; nil when absent
	thought         bool
}

func readPart(p []byte) part {
	var pt part
	forEachMember(p, func(k, v []byte) bool {
		switch string(k) {
		case "text":
			if isString(v) {
				pt.text = v
			}
		case "thought":
			pt.thought = string(v) == "true"
		case "functionCall":
			if isObject(v) {
				pt.call = v
			}
		case "thoughtSignature":
			pt.sig = v
		}
		return true
	})
	return pt
}

// readParts reads a candidate's parts into buf (reused by the caller).
func readParts(buf []part, c []byte) []part {
	forEachElem(get(get(c, "content"), "parts"), func(_ int, p []byte) {
		buf = append(buf, readPart(p))
	})
	return buf
}

// appendChoice writes one choice of a candidate.
func appendChoice(dst, c []byte, pos int, buf []part) ([]byte, []part) {
	parts := readParts(buf[:0], c)
	var idx, finish []byte
	forEachMember(c, func(k, v []byte) bool {
		switch string(k) {
		case "index":
			idx = v
		case "finishReason":
			finish = v
		}
		return true
	})
	dst = append(dst, `{"index":`...)
	if idx != nil {
		dst = append(dst, idx...)
	} else {
		dst = strconv.AppendInt(dst, int64(pos), 10)
	}
	dst = append(dst, `,"message":{"role":"assistant","content":`...)
	dst = appendTexts(dst, parts, false, "null")
	if hasText(parts, true) {
		dst = append(dst, `,"reasoning_content":`...)
		dst = appendTexts(dst, parts, true, `""`)
	}
	calls := 0
	for _, p := range parts {
		if p.call == nil {
			continue
		}
		if calls == 0 {
			dst = append(dst, `,"tool_calls":[`...)
		} else {
			dst = append(dst, ',')
		}
		dst = appendToolCall(dst, p.call, p.sig, calls, false)
		calls++
	}
	if calls > 0 {
		dst = append(dst, ']')
	}
	dst = append(dst, `},"finish_reason":`...)
	dst = jsonx.AppendString(dst, finishReason(unquote(finish), calls > 0))
	return append(dst, '}'), parts
}

// hasText reports whether parts hold non-empty text of the kind asked
// (thought or answer).
func hasText(parts []part, thought bool) bool {
	for _, p := range parts {
		if len(p.text) > 2 && p.thought == thought {
			return true
		}
	}
	return false
}

// appendTexts joins the texts of one kind into one JSON string by
// concatenating their escaped contents; empty when there is none.
func appendTexts(dst []byte, parts []part, thought bool, empty string) []byte {
	if !hasText(parts, thought) {
		return append(dst, empty...)
	}
	dst = append(dst, '"')
	for _, p := range parts {
		if p.text != nil && p.thought == thought {
			dst = append(dst, inner(p.text)...)
		}
	}
	return append(dst, '"')
}

// appendToolCall writes a unified tool call for a functionCall. Gemini has
// no call ids, so they are derived from the call's position ("call_0"):
// deterministic, and enough for the next request, where the adapter maps
// a tool message back to the function name by the latest call with that
// id. The thought signature rides along as
// extra_content.google.thought_signature (the field Google's own OpenAI
// compatibility layer uses), which clients echo back untouched.
func appendToolCall(dst, fc, sig []byte, index int, withIndex bool) []byte {
	dst = append(dst, '{')
	if withIndex {
		dst = append(dst, `"index":`...)
		dst = strconv.AppendInt(dst, int64(index), 10)
		dst = append(dst, ',')
	}
	dst = append(dst, `"id":"call_`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	dst = append(dst, `","type":"function","function":{"name":`...)
	if name := get(fc, "name"); isString(name) {
		dst = append(dst, name...)
	} else {
		dst = append(dst, `""`...)
	}
	dst = append(dst, `,"arguments":`...)
	if args := get(fc, "args"); args != nil {
		dst = jsonx.AppendString(dst, string(args))
	} else {
		dst = append(dst, `"{}"`...)
	}
	dst = append(dst, '}')
	if isString(sig) {
		dst = append(dst, `,"extra_content":{"google":{"thought_signature":`...)
		dst = append(dst, sig...)
		dst = append(dst, "}}"...)
	}
	return append(dst, '}')
}

// finishReason maps Gemini's finishReason. A turn that called functions
// finishes with tool_calls whatever Gemini says (it says STOP), since that
// is what OpenAI clients test to run the tools.
func finishReason(r string, calls bool) string {
	switch r {
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE":
		return "content_filter"
	}
	if calls {
		return "tool_calls"
	}
	return "stop"
}

// appendUsage maps usageMetadata. Thought tokens are billed as output, so
// they are part of completion_tokens and reported again as reasoning
// tokens; tool-use prompt tokens (grounding, code execution) are input.
func appendUsage(dst, u []byte) []byte {
	var prompt, cand, thoughts, cached, toolUse int64
	forEachMember(u, func(k, v []byte) bool {
		n, _ := strconv.ParseInt(string(v), 10, 64)
		switch string(k) {
		case "promptTokenCount":
			prompt = n
		case "candidatesTokenCount":
			cand = n
		case "thoughtsTokenCount":
			thoughts = n
		case "cachedContentTokenCount":
			cached = n
		case "toolUsePromptTokenCount":
			toolUse = n
		}
		return true
	})
	prompt += toolUse
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, prompt, 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, cand+thoughts, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, prompt+cand+thoughts, 10)
	if cached > 0 {
		dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
		dst = strconv.AppendInt(dst, cached, 10)
		dst = append(dst, '}')
	}
	if thoughts > 0 {
		dst = append(dst, `,"completion_tokens_details":{"reasoning_tokens":`...)
		dst = strconv.AppendInt(dst, thoughts, 10)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// streamError maps a Google error object ({"code","status","message"}) to
// a plugin error whose code is the HTTP status it stands for, so the host
// retries or falls back when it arrives before any content.
func streamError(e []byte) error {
	code := int(getInt(e, "code"))
	switch getString(e, "status") {
	case "RESOURCE_EXHAUSTED":
		code = 429
	case "UNAVAILABLE":
		code = 503
	case "DEADLINE_EXCEEDED":
		code = 504
	}
	switch {
	case code == 429 || code == 503 || code == 504:
	case code >= 400 && code < 500:
	default:
		code = 500
	}
	msg := getString(e, "message")
	if msg == "" {
		msg = "upstream reported an error"
	}
	return &pluginsdk.Error{Code: code, Message: msg}
}
