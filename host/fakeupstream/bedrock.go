package fakeupstream

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"

	"github.com/wasmgate/gateway/host/eventstream"
	"github.com/wasmgate/gateway/host/upstreamauth"
)

func (s *Server) routesBedrock() {
	s.mux.HandleFunc("POST /model/{modelId}/converse", s.handle(s.authSigV4, func(c *call) { c.bedrockConverse(false) }))
	s.mux.HandleFunc("POST /model/{modelId}/converse-stream", s.handle(s.authSigV4, func(c *call) { c.bedrockConverse(true) }))
}

var sigV4Shape = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=[A-Z0-9]+/\d{8}/[a-z0-9-]+/bedrock/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*, Signature=[0-9a-f]{64}$`)

// authSigV4 checks the Authorization header's shape and, with Options.AWS,
// the signature itself.
func (s *Server) authSigV4(c *call) (int, string) {
	auth := c.r.Header.Get("Authorization")
	if !sigV4Shape.MatchString(auth) || c.r.Header.Get("X-Amz-Date") == "" {
		return http.StatusForbidden, "Authorization header requires a valid AWS4-HMAC-SHA256 signature for service bedrock."
	}
	if s.opts.AWS != nil {
		r := c.r
		if u, ok := r.Context().Value(origURLKey{}).(*url.URL); ok {
			r = r.Clone(r.Context())
			r.URL = u
		}
		if err := upstreamauth.VerifySigV4(r, c.body, *s.opts.AWS, "bedrock"); err != nil {
			return http.StatusForbidden, "The request signature we calculated does not match the signature you provided."
		}
	}
	return 0, ""
}

func (c *call) bedrockUsage(p reply) map[string]any {
	return map[string]any{"inputTokens": p.prompt, "outputTokens": p.completion(), "totalTokens": p.prompt + p.completion(),
		"cacheReadInputTokens": p.cached, "cacheWriteInputTokens": 0}
}

// bedrockPad mimics the "p" padding field Bedrock adds to stream events so
// their size does not reveal content; decoders must ignore it.
const bedrockPad = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"

func (c *call) bedrockConverse(streaming bool) {
	p := c.newReply(str(path(c.in, "toolConfig", "tools", 0, "toolSpec", "name")), false)
	stop := "end_turn"
	if p.tool != nil {
		stop = "tool_use"
	}
	if !streaming {
		content := []any{map[string]any{"text": p.fullText()}}
		if p.tool != nil {
			content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": "tooluse_fake0001", "name": p.tool.name, "input": map[string]any{"echo": "hello"}}})
		}
		c.writeJSON(200, map[string]any{
			"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
			"stopReason": stop, "usage": c.bedrockUsage(p), "metrics": map[string]any{"latencyMs": 42},
		})
		return
	}
	st := c.startStream("application/vnd.amazon.eventstream")
	send := func(m eventstream.Message) bool {
		b, err := eventstream.Append(nil, m)
		if err != nil {
			return false
		}
		return st.write(b)
	}
	ev := func(typ string, v map[string]any) bool {
		v["p"] = bedrockPad
		b, _ := json.Marshal(v)
		return send(eventstream.Event(typ, b))
	}
	throttle := func() {
		send(eventstream.Exception("throttlingException", []byte(`{"message":"Too many requests, please wait before trying again."}`)))
	}
	if c.f.streamError == StreamErrorBeforeContent {
		throttle()
		return
	}
	if !ev("messageStart", map[string]any{"role": "assistant"}) {
		return
	}
	// Bedrock sends no contentBlockStart for text blocks, only for tool use.
	for i, t := range p.text {
		if !ev("contentBlockDelta", map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": t}}) {
			return
		}
		if i == 0 && c.f.streamError == StreamErrorMidStream {
			throttle()
			return
		}
	}
	if !ev("contentBlockStop", map[string]any{"contentBlockIndex": 0}) {
		return
	}
	if p.tool != nil {
		ok := ev("contentBlockStart", map[string]any{"contentBlockIndex": 1, "start": map[string]any{"toolUse": map[string]any{"toolUseId": "tooluse_fake0001", "name": p.tool.name}}})
		for _, frag := range p.tool.argChunks {
			ok = ok && ev("contentBlockDelta", map[string]any{"contentBlockIndex": 1, "delta": map[string]any{"toolUse": map[string]any{"input": frag}}})
		}
		if !ok || !ev("contentBlockStop", map[string]any{"contentBlockIndex": 1}) {
			return
		}
	}
	_ = ev("messageStop", map[string]any{"stopReason": stop}) &&
		ev("metadata", map[string]any{"usage": c.bedrockUsage(p), "metrics": map[string]any{"latencyMs": 42}})
}
