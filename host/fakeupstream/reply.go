package fakeupstream

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
)

// reply is the deterministic answer to a generation request.
type reply struct {
	text      []string
	tool      *toolCall
	thinking  []string
	prompt    int
	reasoning int
	cached    int
}

type toolCall struct {
	id, name  string
	args      string
	argChunks []string
}

// completion counts text chunks, tool argument fragments and thinking.
func (p reply) completion() int {
	n := len(p.text) + p.reasoning
	if p.tool != nil {
		n += len(p.tool.argChunks)
	}
	return n
}

func (p reply) fullText() string {
	s := ""
	for _, t := range p.text {
		s += t
	}
	return s
}

func (p reply) fullThinking() string {
	s := ""
	for _, t := range p.thinking {
		s += t
	}
	return s
}

// newReply builds the answer; toolName is the first offered tool ("" for
// none) and think says whether the request asked for reasoning output.
func (c *call) newReply(toolName string, think bool) reply {
	p := reply{
		text:   []string{"hello", " from", " " + string(c.s.family)},
		prompt: tokensFor(c.body),
		cached: c.s.opts.CachedTokens,
	}
	if toolName != "" {
		p.tool = &toolCall{id: "call_fake_0001", name: toolName, args: `{"echo":"hello"}`, argChunks: []string{`{"echo":`, `"hello"}`}}
	}
	if think {
		p.thinking = []string{"Let me", " think."}
		p.reasoning = 2
	}
	return p
}

// tokensFor is ceil(len/4): stable for a given body, roughly real-sized.
func tokensFor(b []byte) int { return (len(b) + 3) / 4 }

// path walks decoded JSON: strings index objects, ints index arrays.
func path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func str(v any) string { s, _ := v.(string); return s }

func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case nil:
		return false
	case string:
		return x != ""
	}
	return true
}

// embedding is a deterministic unit-ish vector derived from the input.
func embedding(input string, dims int) []float32 {
	h := fnv.New64a()
	h.Write([]byte(input))
	seed := h.Sum64()
	v := make([]float32, dims)
	for i := range v {
		seed = seed*6364136223846793005 + 1442695040888963407
		v[i] = float32(int64(seed>>40)%2000-1000) / 1000
	}
	return v
}

// base64Floats is OpenAI's encoding_format=base64: little-endian float32s.
func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// inputStrings normalises embedding input (string or list of strings).
func inputStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return nil
}

// writeError answers in the family's error envelope.
func (s *Server) writeError(c *call, status int, msg string) {
	switch s.family {
	case OpenAI:
		typ, code := "invalid_request_error", any(nil)
		switch {
		case status == 401:
			typ, code = "invalid_request_error", "invalid_api_key"
		case status == 429:
			typ, code = "rate_limit_exceeded", "rate_limit_exceeded"
		case status >= 500:
			typ = "server_error"
		}
		c.writeJSON(status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
	case Anthropic:
		c.writeJSON(status, anthropicError(status, msg))
	case Gemini:
		c.writeJSON(status, map[string]any{"error": map[string]any{"code": status, "message": msg, "status": googleStatus(status)}})
	case Bedrock:
		c.w.Header().Set("X-Amzn-ErrorType", bedrockErrorType(status)+":http://internal.amazon.com/coral/com.amazon.bedrock/")
		c.w.Header().Set("X-Amzn-RequestId", "00000000-0000-4000-8000-000000000000")
		c.writeJSON(status, map[string]any{"message": msg})
	case Cohere:
		c.writeJSON(status, map[string]any{"id": "err_fake", "message": msg})
	default:
		http.Error(c.w, msg, status)
	}
}

func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

func anthropicError(status int, msg string) map[string]any {
	return map[string]any{"type": "error", "error": map[string]any{"type": anthropicErrorType(status), "message": msg}}
}

func googleStatus(status int) string {
	switch status {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 503:
		return "UNAVAILABLE"
	}
	return "INTERNAL"
}

func bedrockErrorType(status int) string {
	switch status {
	case 400:
		return "ValidationException"
	case 403:
		return "AccessDeniedException"
	case 404:
		return "ResourceNotFoundException"
	case 408:
		return "ModelTimeoutException"
	case 424:
		return "ModelErrorException"
	case 429:
		return "ThrottlingException"
	case 503:
		return "ServiceUnavailableException"
	}
	return "InternalServerException"
}
