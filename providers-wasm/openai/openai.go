// Command openai is the provider adapter for the OpenAI wire family: OpenAI
// itself and every OpenAI-compatible provider id of the catalog (groq,
// mistral, openrouter, perplexity, vllm, ollama, ...).
//
// Its manifest declares capability "passthrough", so for chat, completions,
// responses and embeddings the host sends the client's bytes itself and
// never enters this module. The hooks exist for the callers that cannot use
// the passthrough (a request plugin that needs a spec, the drop-in /openai
// prefix): they are identity translations kept as cheap as possible —
// jsonx scanning and byte appends, no encoding/json on any hook.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o adapter-openai.wasm ./providers-wasm/openai
package main

import (
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
	"github.com/wasmgate/gateway/pluginsdk/openaiwire"
)

// Adapter is the OpenAI-wire adapter. It keeps one output buffer across
// calls; a wasm instance runs one call at a time and the host copies every
// output at once, so reusing it is safe and saves an allocation per call.
type Adapter struct {
	out []byte
}

// New returns the adapter.
func New() *Adapter { return &Adapter{} }

// Manifest describes the adapter.
func (a *Adapter) Manifest() pluginsdk.Manifest {
	return pluginsdk.Manifest{
		Name: "adapter-openai", Version: "1.0.0", Kind: pluginsdk.KindProvider, Wire: "openai",
		Capabilities: []string{
			pluginsdk.CapabilityPassthrough,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestChat,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestCompletion,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestResponses,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestEmbedding,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestListModels,
		},
	}
}

// Configure accepts no settings: every provider difference arrives per
// request (provider id, base URL, key config).
func (a *Adapter) Configure([]byte) error { return nil }

// requestInput is the part of AdaptRequestInput the adapter reads, as raw
// spans of the input (strings still escaped: they are copied back into JSON
// as they are, so they never need decoding).
type requestInput struct {
	reqType, provider, model []byte
	stream                   bool
	keyConfig, body          []byte
}

func parseRequestInput(in []byte) (requestInput, bool) {
	var r requestInput
	ok := jsonx.ForEachMember(in, 0, func(k []byte, s, e int) {
		switch string(k) {
		case "request_type":
			r.reqType, _ = jsonx.StringAt(in, s, e)
		case "provider":
			r.provider, _ = jsonx.StringAt(in, s, e)
		case "model":
			r.model, _ = jsonx.StringAt(in, s, e)
		case "stream":
			r.stream = string(in[s:e]) == "true"
		case "key_config":
			r.keyConfig = in[s:e]
		case "body":
			r.body = in[s:e]
		}
	})
	return r, ok
}

// resourcePath maps a request type to its OpenAI resource path, relative to
// the provider's base URL (which carries the version segment, e.g. /v1).
func resourcePath(reqType string) (method, path string, ok bool) {
	switch reqType {
	case pluginsdk.RequestChat:
		return "POST", "/chat/completions", true
	case pluginsdk.RequestCompletion:
		return "POST", "/completions", true
	case pluginsdk.RequestResponses:
		return "POST", "/responses", true
	case pluginsdk.RequestEmbedding:
		return "POST", "/embeddings", true
	case pluginsdk.RequestListModels:
		return "GET", "/models", true
	}
	return "", "", false
}

// AdaptRequest returns the upstream spec: the unified body as is with
// "model" set to the resolved model, sent to the type's resource path.
//
// Provider quirks, by provider id:
//   - perplexity: its base URL has no /v1 segment (https://api.perplexity.ai);
//     paths stay relative, so nothing is prefixed and the host's join is right.
//   - vllm: a server runs one model; when the request names none (the key
//     has no alias for it), key_config.model_name is used.
func (a *Adapter) AdaptRequest(in []byte) (pluginsdk.Output, error) {
	r, ok := parseRequestInput(in)
	if !ok {
		return pluginsdk.Output{}, pluginsdk.Reject(400, "adapter-openai: adapt_request input is not a JSON object")
	}
	method, path, ok := resourcePath(string(r.reqType))
	if !ok {
		return pluginsdk.Output{}, pluginsdk.Reject(400, "adapter-openai: unsupported request type %q", r.reqType)
	}
	model := r.model
	if len(model) == 0 && string(r.provider) == "vllm" && len(r.keyConfig) > 0 {
		if s, e, ok := jsonx.ObjectField(r.keyConfig, 0, "model_name"); ok {
			model, _ = jsonx.StringAt(r.keyConfig, s, e)
		}
	}
	b := a.out[:0]
	b = append(b, `{"method":"`...)
	b = append(b, method...)
	b = append(b, `","path":"`...)
	b = append(b, path...)
	b = append(b, '"')
	if method == "POST" {
		body := r.body
		if len(body) == 0 || body[0] != '{' {
			return pluginsdk.Output{}, pluginsdk.Reject(400, "adapter-openai: request body is not a JSON object")
		}
		if len(model) > 0 {
			// model is still JSON-escaped, so quoting it is valid JSON.
			q := make([]byte, 0, len(model)+2)
			q = append(append(append(q, '"'), model...), '"')
			if body, ok = jsonx.SetField(body, "model", q); !ok {
				return pluginsdk.Output{}, pluginsdk.Reject(400, "adapter-openai: request body is not a JSON object")
			}
		}
		b = append(b, `,"body":`...)
		b = append(b, body...)
		if r.stream {
			b = append(b, `,"stream":true`...)
		}
	}
	b = append(b, '}')
	a.out = b
	return pluginsdk.Replace(b), nil
}

// AdaptResponse is the identity: the upstream body already is the unified
// response. Only the body member of the input is returned.
func (a *Adapter) AdaptResponse(in []byte) (pluginsdk.Output, error) {
	s, e, ok := jsonx.Field(in, "body")
	if !ok {
		return pluginsdk.Output{}, pluginsdk.Reject(502, "adapter-openai: adapt_response input has no body")
	}
	switch in[s] {
	case '{', '[':
		return pluginsdk.Replace(in[s:e]), nil
	}
	// The host quotes a non-JSON body; a 2xx answer that is not JSON is an
	// upstream fault, not something to hand the client as a response.
	return pluginsdk.Output{}, pluginsdk.Reject(502, "adapter-openai: upstream answered a body that is not a JSON object")
}

// AdaptStream maps a batch of upstream SSE events to chunks: each data
// object is the chunk as is, "[DONE]" is dropped (the host writes its own
// terminator), and an error event aborts the stream with the status it
// stands for, so before any content the host can retry or fall back.
func (a *Adapter) AdaptStream(in pluginsdk.StreamInput) (pluginsdk.Output, error) {
	// jsonx trusts its input; one validating scan (no reflection) makes
	// sure a malformed batch is an error and never reaches the client as a
	// broken chunk. The host frames valid JSON, so this is defence in depth
	// on a path the passthrough capability makes rare.
	if !jsonx.Valid(in.Batch) {
		return pluginsdk.Output{}, openaiwire.ErrMalformed
	}
	b, err := openaiwire.AppendStreamChunks(a.out[:0], in.Batch)
	a.out = b
	if err != nil {
		return pluginsdk.Output{}, err
	}
	if len(b) == 0 {
		return pluginsdk.Drop(), nil
	}
	return pluginsdk.Replace(b), nil
}

// IngressRequest: the drop-in /openai prefix speaks the unified wire
// already, so the native request continues unchanged.
func (a *Adapter) IngressRequest([]byte) (pluginsdk.Output, error) { return pluginsdk.Pass(), nil }

// EgressResponse is the identity for the drop-in /openai prefix.
func (a *Adapter) EgressResponse([]byte) (pluginsdk.Output, error) { return pluginsdk.Pass(), nil }

// EgressStream is the identity for the drop-in /openai prefix.
func (a *Adapter) EgressStream(pluginsdk.StreamInput) (pluginsdk.Output, error) {
	return pluginsdk.Pass(), nil
}
