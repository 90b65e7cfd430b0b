// Command anthropic is the provider adapter for the Anthropic Messages wire
// (api.anthropic.com/v1 and compatible endpoints). It translates the
// gateway's unified, OpenAI-shaped chat requests, responses and stream
// chunks to and from Messages, and implements the ingress/egress hooks that
// let Anthropic-native clients talk to any provider through the /anthropic
// drop-in prefix.
//
// Built as a wasip1 reactor module (make build -> bin/plugins/
// adapter-anthropic.wasm) or natively as a go-plugin subprocess.
package main

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// anthropicVersion is the API version the mapping is written against; the
// Messages API requires the header on every call.
const anthropicVersion = "2023-06-01"

// Adapter implements the adapt_*, ingress_request, egress_response and
// egress_stream hooks. It is stateless between calls: per-stream state
// travels in the host-kept state blob, so any instance can serve any batch.
type Adapter struct {
	// now stamps "created" on unified responses and chunks; tests fix it.
	now func() time.Time
	// skipValidation trusts the host to hand over well-formed JSON (the
	// gateway validates everything it passes), saving the up-front
	// jsonx.Valid, a full scan of the input. The readers still never index
	// out of range on malformed input; they just do not diagnose it.
	skipValidation bool
}

// valid reports whether b may be processed.
func (a *Adapter) valid(b []byte) bool { return a.skipValidation || jsonx.Valid(b) }

// New returns the adapter with the real clock (the host gives wasm guests
// a real walltime).
func New() *Adapter { return &Adapter{now: time.Now} }

// Manifest declares the provider adapter. "request:responses" is absent on
// purpose: the host converts Responses API calls to chat first.
func (a *Adapter) Manifest() pluginsdk.Manifest {
	return pluginsdk.Manifest{
		Name:    "adapter-anthropic",
		Version: "1.0.0",
		Kind:    pluginsdk.KindProvider,
		Wire:    "anthropic",
		Capabilities: []string{
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestChat,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestCountTokens,
			pluginsdk.CapabilityRequestPrefix + pluginsdk.RequestListModels,
		},
	}
}

// Configure accepts {"validate_input": false} to skip the input check (see
// skipValidation); everything per key (base URL, secrets) is the host's.
func (a *Adapter) Configure(config []byte) error {
	a.skipValidation = false
	if len(bytes.TrimSpace(config)) == 0 || string(config) == "null" {
		return nil
	}
	var c struct {
		ValidateInput *bool `json:"validate_input"`
	}
	if err := json.Unmarshal(config, &c); err != nil {
		return badRequest("config: %v", err)
	}
	a.skipValidation = c.ValidateInput != nil && !*c.ValidateInput
	return nil
}

// badRequest is a rejection the client caused (its request cannot be
// expressed on the Messages wire).
func badRequest(format string, args ...any) error {
	return pluginsdk.Reject(400, format, args...)
}

// badUpstream reports an upstream answer the adapter cannot read.
func badUpstream(format string, args ...any) error {
	return pluginsdk.Reject(502, format, args...)
}
