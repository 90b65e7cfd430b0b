// Command gemini is the provider adapter for Google's Gemini wire, serving
// two provider ids: "gemini" (Generative Language API, API key added by the
// host as x-goog-api-key) and "vertex" (Vertex AI, OAuth bearer token added
// by the host). It translates unified (OpenAI-shaped) requests into
// generateContent / embedContent / countTokens / models calls and the
// answers back, including SSE streams, and offers the native Gemini wire on
// the drop-in route through ingress_request / egress_response /
// egress_stream.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o adapter-gemini.wasm ./providers-wasm/gemini
// (a native build is the same adapter as a go-plugin subprocess).
//
// See README.md for the field mapping, the thought-signature extension and
// the ingress input envelope.
package main

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/wasmgate/gateway/pluginsdk"
)

// Adapter is the plugin. It keeps one output buffer across calls: a wasm
// instance runs one call at a time and the host copies outputs at once.
type Adapter struct {
	out []byte
	// validate checks adapt_* inputs with json.Valid before scanning. The
	// host builds those inputs with json.Marshal, which already validates
	// every embedded body, so the check is defence in depth; it is about
	// two thirds of the hook's time (see README.md, Performance), and a
	// deployment that trusts its host may turn it off.
	validate bool
}

// New returns the adapter with input validation on.
func New() *Adapter { return &Adapter{validate: true} }

// config is the optional plugin config.
type config struct {
	// ValidateInput (default true): see Adapter.validate.
	ValidateInput *bool `json:"validate_input"`
}

const configSchema = `{"type":"object","properties":{"validate_input":{"type":"boolean","default":true,
"description":"check adapt_* inputs with json.Valid (the host already sends valid JSON; off saves ~2/3 of the hook time)"}}}`

// now is the clock for "created" fields; tests pin it for golden files.
var now = func() int64 { return time.Now().Unix() }

// Manifest describes the adapter; the hook list comes from the methods.
func (a *Adapter) Manifest() pluginsdk.Manifest {
	return pluginsdk.Manifest{
		Name: "adapter-gemini", Version: "1.0.0", Kind: pluginsdk.KindProvider, Wire: "gemini",
		ConfigSchema: pluginsdk.RawJSON(configSchema),
		Capabilities: []string{
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestChat,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestEmbedding,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestCountTokens,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestListModels,
		},
	}
}

// Configure reads the optional config. Everything routing-specific
// arrives with each call (provider, base URL, key config), not here.
func (a *Adapter) Configure(raw []byte) error {
	a.validate = true
	if len(bytes.TrimSpace(raw)) == 0 || isNull(bytes.TrimSpace(raw)) {
		return nil
	}
	var c config
	if err := json.Unmarshal(raw, &c); err != nil {
		return pluginsdk.Reject(400, "adapter-gemini config: %v", err)
	}
	if c.ValidateInput != nil {
		a.validate = *c.ValidateInput
	}
	return nil
}

// adaptInput holds the fields of an AdaptRequestInput / AdaptResponseInput
// envelope, read by scanning rather than decoding (Body stays raw).
type adaptInput struct {
	requestType string
	provider    string
	model       string
	stream      bool
	baseURL     string
	keyConfig   []byte
	body        []byte
	// encodingFormat is the unified request's encoding_format, which the
	// host passes to adapt_response for embeddings (base64 vs float).
	encodingFormat string
}

func parseEnvelope(in []byte) (adaptInput, error) {
	var ai adaptInput
	ok := forEachMember(in, func(k, v []byte) bool {
		switch string(k) {
		case "request_type":
			ai.requestType = unquote(v)
		case "provider":
			ai.provider = unquote(v)
		case "model":
			ai.model = unquote(v)
		case "stream":
			ai.stream = string(v) == "true"
		case "base_url":
			ai.baseURL = unquote(v)
		case "key_config":
			if isObject(v) {
				ai.keyConfig = v
			}
		case "body":
			ai.body = v
		case "encoding_format":
			ai.encodingFormat = unquote(v)
		}
		return true
	})
	if !ok {
		return ai, pluginsdk.Reject(500, "adapter input is not a JSON object")
	}
	return ai, nil
}

// AdaptRequest builds the upstream request spec for a unified request.
func (a *Adapter) AdaptRequest(in []byte) (pluginsdk.Output, error) {
	if a.validate && !validJSON(in) {
		return pluginsdk.Output{}, badRequest("request body is not valid JSON")
	}
	ai, err := parseEnvelope(in)
	if err != nil {
		return pluginsdk.Output{}, err
	}
	out, err := adaptRequest(a.out[:0], &ai)
	if err != nil {
		return pluginsdk.Output{}, err
	}
	a.out = out
	return pluginsdk.Replace(out), nil
}

// AdaptResponse translates a 2xx upstream answer into the unified shape.
func (a *Adapter) AdaptResponse(in []byte) (pluginsdk.Output, error) {
	if a.validate && !validJSON(in) {
		return pluginsdk.Output{}, badUpstream("upstream answer is not valid JSON")
	}
	ai, err := parseEnvelope(in)
	if err != nil {
		return pluginsdk.Output{}, err
	}
	if ai.body == nil || !isObject(ai.body) {
		return pluginsdk.Output{}, badUpstream("upstream answer is not a JSON object")
	}
	var out []byte
	switch ai.requestType {
	case pluginsdk.RequestChat, "":
		out, err = chatResponse(a.out[:0], ai.body, ai.model)
	case pluginsdk.RequestEmbedding:
		out, err = embeddingResponse(a.out[:0], ai.body, ai.model, ai.encodingFormat)
	case pluginsdk.RequestCountTokens:
		out, err = countTokensResponse(a.out[:0], ai.body)
	case pluginsdk.RequestListModels:
		out, err = listModelsResponse(a.out[:0], ai.body)
	default:
		return pluginsdk.Output{}, badRequest("adapter-gemini does not translate %q requests", ai.requestType)
	}
	if err != nil {
		return pluginsdk.Output{}, err
	}
	a.out = out
	return pluginsdk.Replace(out), nil
}

// AdaptStream translates a batch of SSE events of streamGenerateContent.
func (a *Adapter) AdaptStream(in pluginsdk.StreamInput) (pluginsdk.Output, error) {
	if b := bytes.TrimSpace(in.Batch); len(b) == 0 || isNull(b) {
		// The last call of a stream may carry no events, only the end flag.
		in.Batch = []byte("[]")
	}
	if a.validate && !validJSON(in.Batch) {
		return pluginsdk.Output{}, badUpstream("stream batch is not valid JSON")
	}
	st, err := decodeStreamState(in.State)
	if err != nil {
		return pluginsdk.Output{}, err
	}
	out, err := adaptStream(a.out[:0], &st, in.Batch, in.End)
	if err != nil {
		return pluginsdk.Output{}, err
	}
	a.out = out
	return pluginsdk.Output{Status: pluginsdk.StatusOK, Body: out, State: st.encode(nil)}, nil
}
