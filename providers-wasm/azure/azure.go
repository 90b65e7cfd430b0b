// Command azure is the provider adapter for Azure OpenAI (wire "azure").
//
// Requests and answers are the OpenAI wire; what differs is addressing:
// the deployment (the model id after the key's aliases) is in the URL and
// every call carries ?api-version. The adapter therefore returns full URLs:
//
//	chat         POST {endpoint}/openai/deployments/{model}/chat/completions?api-version=V
//	completions  POST {endpoint}/openai/deployments/{model}/completions?api-version=V
//	embeddings   POST {endpoint}/openai/deployments/{model}/embeddings?api-version=V
//	responses    POST {endpoint}/openai/v1/responses?api-version=preview (model in the body)
//	list models  GET  {endpoint}/openai/models?api-version=V
//
// endpoint is key_config.endpoint, else the provider's base URL; V is
// key_config.api_version, else 2024-10-21 (the current GA version). The
// host adds the api-key header or an Entra ID bearer token.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o adapter-azure.wasm ./providers-wasm/azure
package main

import (
	"net/url"
	"strings"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
	"github.com/wasmgate/gateway/pluginsdk/openaiwire"
)

// DefaultAPIVersion is used when the key config names none.
const DefaultAPIVersion = "2024-10-21"

// Adapter is the Azure OpenAI adapter; out is reused across calls (one
// call at a time per instance, outputs copied by the host at once).
type Adapter struct {
	out []byte
}

// New returns the adapter.
func New() *Adapter { return &Adapter{} }

// Manifest describes the adapter. No passthrough: the host could not build
// Azure's URLs itself.
func (a *Adapter) Manifest() pluginsdk.Manifest {
	return pluginsdk.Manifest{
		Name: "adapter-azure", Version: "1.0.0", Kind: pluginsdk.KindProvider, Wire: "azure",
		Capabilities: []string{
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestChat,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestCompletion,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestResponses,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestEmbedding,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestListModels,
		},
	}
}

// Configure accepts no settings: endpoints come with each key.
func (a *Adapter) Configure([]byte) error { return nil }

type requestInput struct {
	reqType, model, baseURL []byte
	stream                  bool
	keyConfig, body         []byte
}

func parseRequestInput(in []byte) (requestInput, bool) {
	var r requestInput
	ok := jsonx.ForEachMember(in, 0, func(k []byte, s, e int) {
		switch string(k) {
		case "request_type":
			r.reqType, _ = jsonx.StringAt(in, s, e)
		case "model":
			r.model, _ = jsonx.StringAt(in, s, e)
		case "base_url":
			r.baseURL, _ = jsonx.StringAt(in, s, e)
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

// unescape decodes a JSON string's raw content; ok=false on a bad escape.
func unescape(raw []byte) (string, bool) {
	b, ok := jsonx.AppendUnescaped(nil, raw)
	return string(b), ok
}

// keyConfigString reads a string member of the key config.
func keyConfigString(kc []byte, key string) string {
	if len(kc) == 0 || kc[0] != '{' {
		return ""
	}
	s, e, ok := jsonx.ObjectField(kc, 0, key)
	if !ok {
		return ""
	}
	raw, ok := jsonx.StringAt(kc, s, e)
	if !ok {
		return ""
	}
	v, _ := unescape(raw)
	return strings.TrimSpace(v)
}

// resourceEndpoint is the Azure resource URL without a trailing slash. An
// endpoint pasted with the /openai suffix (as some portal pages show it)
// is accepted too, so the paths below never double it.
func resourceEndpoint(r requestInput) (string, error) {
	ep := keyConfigString(r.keyConfig, "endpoint")
	if ep == "" {
		ep, _ = unescape(r.baseURL)
	}
	ep = strings.TrimRight(strings.TrimSpace(ep), "/")
	ep = strings.TrimSuffix(ep, "/openai")
	if ep == "" {
		return "", pluginsdk.Reject(400, "adapter-azure: no Azure OpenAI endpoint: set azure_key_config.endpoint on the key (e.g. https://<resource>.openai.azure.com) or the provider's base_url")
	}
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", pluginsdk.Reject(400, "adapter-azure: azure_key_config.endpoint %q is not an http(s) URL", ep)
	}
	return ep, nil
}

// AdaptRequest builds the Azure URL for the request type; the body is the
// OpenAI body with "model" set (deployments ignore it, the v1 Responses
// API needs it), nothing removed.
func (a *Adapter) AdaptRequest(in []byte) (pluginsdk.Output, error) {
	r, ok := parseRequestInput(in)
	if !ok {
		return pluginsdk.Output{}, pluginsdk.Reject(400, "adapter-azure: adapt_request input is not a JSON object")
	}
	ep, err := resourceEndpoint(r)
	if err != nil {
		return pluginsdk.Output{}, err
	}
	version := keyConfigString(r.keyConfig, "api_version")
	if version == "" {
		version = DefaultAPIVersion
	}
	model, ok := unescape(r.model)
	if !ok {
		return pluginsdk.Output{}, pluginsdk.Reject(400, "adapter-azure: model is not a valid JSON string")
	}
	reqType := string(r.reqType)
	var target, method string
	switch reqType {
	case pluginsdk.RequestChat, pluginsdk.RequestCompletion, pluginsdk.RequestEmbedding:
		if model == "" {
			return pluginsdk.Output{}, pluginsdk.Reject(400, "adapter-azure: the model must name the Azure deployment (directly or through a key alias)")
		}
		res := map[string]string{pluginsdk.RequestChat: "/chat/completions", pluginsdk.RequestCompletion: "/completions",
			pluginsdk.RequestEmbedding: "/embeddings"}[reqType]
		method = "POST"
		target = ep + "/openai/deployments/" + url.PathEscape(model) + res + "?api-version=" + url.QueryEscape(version)
	case pluginsdk.RequestResponses:
		// The Responses API lives on the v1 surface, addressed by model in
		// the body rather than by deployment path.
		method = "POST"
		target = ep + "/openai/v1/responses?api-version=preview"
	case pluginsdk.RequestListModels:
		method = "GET"
		target = ep + "/openai/models?api-version=" + url.QueryEscape(version)
	default:
		return pluginsdk.Output{}, pluginsdk.Reject(400, "adapter-azure: unsupported request type %q", r.reqType)
	}
	b := a.out[:0]
	b = append(b, `{"method":"`...)
	b = append(b, method...)
	b = append(b, `","url":`...)
	b = jsonx.AppendString(b, target)
	if method == "POST" {
		body := r.body
		if len(body) == 0 || body[0] != '{' {
			return pluginsdk.Output{}, pluginsdk.Reject(400, "adapter-azure: request body is not a JSON object")
		}
		if len(r.model) > 0 {
			q := make([]byte, 0, len(r.model)+2)
			q = append(append(append(q, '"'), r.model...), '"')
			if body, ok = jsonx.SetField(body, "model", q); !ok {
				return pluginsdk.Output{}, pluginsdk.Reject(400, "adapter-azure: request body is not a JSON object")
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

// AdaptResponse is the identity except for list_models, whose Azure answer
// (models with capabilities, lifecycle dates...) becomes the unified
// {"object":"list","data":[{"id":...,"object":"model"}]}.
func (a *Adapter) AdaptResponse(in []byte) (pluginsdk.Output, error) {
	var reqType, body []byte
	jsonx.ForEachMember(in, 0, func(k []byte, s, e int) {
		switch string(k) {
		case "request_type":
			reqType, _ = jsonx.StringAt(in, s, e)
		case "body":
			body = in[s:e]
		}
	})
	if len(body) == 0 || body[0] != '{' {
		return pluginsdk.Output{}, pluginsdk.Reject(502, "adapter-azure: upstream answered a body that is not a JSON object")
	}
	if string(reqType) != pluginsdk.RequestListModels {
		return pluginsdk.Replace(body), nil
	}
	if !jsonx.Valid(body) {
		return pluginsdk.Output{}, openaiwire.ErrMalformed
	}
	s, _, ok := jsonx.ObjectField(body, 0, "data")
	b := append(a.out[:0], `{"object":"list","data":[`...)
	n := 0
	if ok {
		jsonx.ForEachElement(body, s, func(es, ee int) {
			is, ie, ok := jsonx.ObjectField(body, es, "id")
			if !ok || body[is] != '"' || ie-is <= 2 {
				return
			}
			if n > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = append(b, body[is:ie]...)
			b = append(b, `,"object":"model","owned_by":"azure"}`...)
			n++
		})
	}
	b = append(b, "]}"...)
	a.out = b
	return pluginsdk.Replace(b), nil
}

// AdaptStream maps upstream events to chunks as the OpenAI adapter does.
// Azure's content-filter chunks (empty choices, prompt_filter_results) pass
// as they are: OpenAI clients ignore what they do not know.
func (a *Adapter) AdaptStream(in pluginsdk.StreamInput) (pluginsdk.Output, error) {
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
