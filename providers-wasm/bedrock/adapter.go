// Command bedrock is the provider adapter for Amazon Bedrock (wire family
// "bedrock"). It translates unified (OpenAI-shaped) chat requests to the
// Bedrock Converse API, Converse answers and ConverseStream events back to
// chat completions and chunks, and lists foundation models.
//
// Like every adapter it is a pure translator: the host sends the request,
// signs it with SigV4 after adapt_request (so the URL returned here is
// final), decodes the AWS event-stream framing and hands the decoded events
// to adapt_stream.
//
// native.go implements the drop-in hooks for the /bedrock prefix:
// Converse / ConverseStream requests in, Converse answers and
// ConverseStream events (framed by the host) out.
//
// Model ids and inference profiles: the model id goes into the URL path
// escaped the way the AWS SDKs escape path labels (every byte but A-Z a-z
// 0-9 - _ . ~, so "…-v1:0" is sent as "…-v1%3A0"); the host's signer
// encodes the path once more for the canonical request, as SigV4 wants for
// non-S3 services. When the key config has an "arn" and the model is not
// already an ARN, the ARN is used instead of the model id: a full inference
// profile ARN (".../inference-profile/us.anthropic…" or
// ".../application-inference-profile/abc123") as is, an ARN ending in "/"
// (a prefix such as "arn:aws:bedrock:us-east-1:123:inference-profile/")
// with the model id appended.
package main

import (
	"encoding/json"

	"github.com/wasmgate/gateway/pluginsdk"
)

// Version is the adapter's manifest version.
const Version = "0.1.0"

// Adapter is the Bedrock provider adapter. It holds no per-request state:
// stream state travels through the host, so any instance serves any call.
type Adapter struct{}

// New returns the adapter.
func New() *Adapter { return &Adapter{} }

// Manifest declares the adapter. Hooks are derived from the implemented
// interfaces.
func (*Adapter) Manifest() pluginsdk.Manifest {
	return pluginsdk.Manifest{
		Name:    "adapter-bedrock",
		Version: Version,
		Kind:    pluginsdk.KindProvider,
		Wire:    "bedrock",
		Capabilities: []string{
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestChat,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestListModels,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestEmbedding,
			pluginsdk.CapabilityRequestPrefix + RequestInvoke,
		},
	}
}

// Configure accepts no settings: everything per request comes from the
// routing facts and the key config.
func (*Adapter) Configure(config []byte) error {
	if len(config) == 0 || string(config) == "null" || string(config) == "{}" {
		return nil
	}
	if !json.Valid(config) {
		return &pluginsdk.Error{Code: 400, Message: "adapter-bedrock: config is not valid JSON"}
	}
	return nil
}

// badRequest is the error of a request Bedrock cannot take as sent: the
// host answers the client with it and does not retry.
func badRequest(msg string) error {
	return &pluginsdk.Error{Code: 400, Message: "bedrock: " + msg}
}

// badUpstream is the error of an upstream answer that cannot be translated.
func badUpstream(msg string) error {
	return &pluginsdk.Error{Code: 502, Message: "bedrock: " + msg}
}
