package fakeupstream

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Gemini paths put the method after a colon in the last segment
// ("models/gemini-2.0-flash:generateContent"), which ServeMux patterns cannot
// split, so one handler per prefix parses it.
func (s *Server) routesGemini() {
	s.mux.HandleFunc("POST /v1beta/models/{rest}", s.handle(s.authGeminiKey, (*call).gemini))
	s.mux.HandleFunc("POST /v1/models/{rest}", s.handle(s.authGeminiKey, (*call).gemini))
	s.mux.HandleFunc("POST /v1/projects/{project}/locations/{location}/publishers/google/models/{rest}", s.handle(s.authVertex, (*call).gemini))
	s.mux.HandleFunc("POST /v1beta1/projects/{project}/locations/{location}/publishers/google/models/{rest}", s.handle(s.authVertex, (*call).gemini))
}

// authGeminiKey accepts x-goog-api-key or ?key=.
func (s *Server) authGeminiKey(c *call) (int, string) {
	key := c.r.Header.Get("x-goog-api-key")
	if key == "" {
		key = c.r.URL.Query().Get("key")
	}
	if key == "" || (s.opts.APIKey != "" && key != s.opts.APIKey) {
		return http.StatusBadRequest, "API key not valid. Please pass a valid API key."
	}
	return 0, ""
}

// authVertex wants an OAuth bearer token.
func (s *Server) authVertex(c *call) (int, string) {
	tok, ok := strings.CutPrefix(c.r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" || (s.opts.BearerToken != "" && tok != s.opts.BearerToken) {
		return http.StatusUnauthorized, "Request had invalid authentication credentials. Expected OAuth 2 access token."
	}
	return 0, ""
}

func (c *call) gemini() {
	model, method, ok := strings.Cut(c.r.PathValue("rest"), ":")
	if !ok || model == "" {
		c.s.writeError(c, 404, "method not found")
		return
	}
	switch method {
	case "generateContent":
		c.geminiGenerate(model, false)
	case "streamGenerateContent":
		c.geminiGenerate(model, true)
	case "countTokens":
		c.writeJSON(200, map[string]any{"totalTokens": tokensFor(c.body)})
	case "embedContent":
		var parts []string
		for _, p := range asSlice(path(c.in, "content", "parts")) {
			parts = append(parts, str(path(p, "text")))
		}
		dims := c.s.opts.EmbeddingDims
		if d, ok := c.in["outputDimensionality"].(float64); ok && d > 0 && d <= 4096 {
			dims = int(d)
		}
		c.writeJSON(200, map[string]any{"embedding": map[string]any{"values": embedding(strings.Join(parts, ""), dims)}})
	default:
		c.s.writeError(c, 404, "method "+method+" not found")
	}
}

func asSlice(v any) []any { a, _ := v.([]any); return a }

func (c *call) geminiUsage(p reply) map[string]any {
	cand := p.completion() - p.reasoning
	u := map[string]any{"promptTokenCount": p.prompt, "candidatesTokenCount": cand, "totalTokenCount": p.prompt + cand + p.reasoning}
	if p.cached > 0 {
		u["cachedContentTokenCount"] = p.cached
	}
	if p.reasoning > 0 {
		u["thoughtsTokenCount"] = p.reasoning
	}
	return u
}

const fakeThoughtSignature = "CiQBVKhc7ZmFrZS10aG91Z2h0LXNpZ25hdHVyZQ=="

func (c *call) geminiGenerate(model string, streaming bool) {
	think := truthy(path(c.in, "generationConfig", "thinkingConfig", "includeThoughts"))
	p := c.newReply(str(path(c.in, "tools", 0, "functionDeclarations", 0, "name")), think)
	finish := "STOP"
	resp := func(parts []any, finish string, usage map[string]any) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		r := map[string]any{"candidates": []any{cand}, "modelVersion": model, "responseId": "fake-response-0001"}
		if usage != nil {
			r["usageMetadata"] = usage
		}
		return r
	}
	toolPart := func() map[string]any {
		return map[string]any{"functionCall": map[string]any{"name": p.tool.name, "args": map[string]any{"echo": "hello"}}, "thoughtSignature": fakeThoughtSignature}
	}
	if !streaming {
		var parts []any
		if think {
			parts = append(parts, map[string]any{"text": p.fullThinking(), "thought": true})
		}
		parts = append(parts, map[string]any{"text": p.fullText()})
		if p.tool != nil {
			parts = append(parts, toolPart())
		}
		c.writeJSON(200, resp(parts, finish, c.geminiUsage(p)))
		return
	}
	// Without alt=sse the stream is one JSON array written piecewise.
	sse := c.r.URL.Query().Get("alt") == "sse"
	var st *stream
	first := true
	emit := func(v any) bool {
		b, _ := json.Marshal(v)
		if sse {
			// Google ends SSE events with CRLF pairs; clients must accept it.
			return st.write(append(append([]byte("data: "), b...), "\r\n\r\n"...))
		}
		prefix := ",\r\n"
		if first {
			prefix, first = "[", false
		}
		return st.write(append([]byte(prefix), b...))
	}
	if sse {
		st = c.startStream("text/event-stream")
	} else {
		st = c.startStream("application/json")
		defer func() {
			if st.alive {
				if first {
					st.write([]byte("["))
				}
				st.write([]byte("]"))
			}
		}()
	}
	gerr := map[string]any{"error": map[string]any{"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}
	if c.f.streamError == StreamErrorBeforeContent {
		emit(gerr)
		return
	}
	partial := reply{prompt: p.prompt, cached: p.cached}
	if think {
		for _, t := range p.thinking {
			if !emit(resp([]any{map[string]any{"text": t, "thought": true}}, "", nil)) {
				return
			}
		}
		partial.reasoning = p.reasoning
	}
	for i, t := range p.text {
		partial.text = append(partial.text, t)
		last := i == len(p.text)-1 && p.tool == nil
		f, u := "", c.geminiUsage(partial)
		if last {
			f = finish
		}
		if !emit(resp([]any{map[string]any{"text": t}}, f, u)) {
			return
		}
		if i == 0 && c.f.streamError == StreamErrorMidStream {
			emit(gerr)
			return
		}
	}
	if p.tool != nil {
		// Gemini sends a function call whole, never in fragments.
		emit(resp([]any{toolPart()}, finish, c.geminiUsage(p)))
	}
}
