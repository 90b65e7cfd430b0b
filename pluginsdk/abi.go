package pluginsdk

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ABIVersion is the major version of the plugin ABI this package speaks. A
// host refuses modules of any other major, so a breaking change bumps it.
const ABIVersion = 1

// Names fixed by ABI v1. They are part of the contract with already-built
// modules: never rename them, add a new major instead.
const (
	// ExportMarker is the export whose presence declares ABI v1. The host
	// looks for it in the compiled module before instantiating anything.
	ExportMarker = "wasmgate_abi_v1"
	// ExportInput returns a pointer to the guest-owned input buffer that can
	// hold at least the requested number of bytes.
	ExportInput = "wasmgate_input"
	// ExportCall runs one hook over the bytes the host wrote into the input
	// buffer and returns a Status.
	ExportCall = "wasmgate_call"
	// ImportModule is the versioned module name of the host imports.
	ImportModule = "wasmgate_v1"
	// ImportOutput is host import output(kind, ptr, len): the host copies the
	// bytes at once, so the guest may reuse its buffer right after.
	ImportOutput = "output"
	// ImportError is host import error(code, ptr, len) carrying the error of
	// a call that returns StatusError.
	ImportError = "error"
	// ImportLog is host import log(level, ptr, len) forwarding a log line.
	ImportLog = "log"
)

// Status is the result of a hook call. A trap is never a status: it kills
// the instance and the host reports it as a runtime failure.
type Status uint32

const (
	// StatusOK means the call produced output (body, response, state...).
	StatusOK Status = 0
	// StatusError means the plugin rejects (pre_request), replaces the
	// response with an error (post_response) or aborts the stream.
	StatusError Status = 1
	// StatusNoOutput means there is nothing to emit: a stream batch is
	// dropped; for other hooks it means the same as StatusPassThrough.
	StatusNoOutput Status = 2
	// StatusPassThrough means the input continues unchanged. The host may
	// then skip copying anything back.
	StatusPassThrough Status = 3
)

// String is the status name used in ABI.md.
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusError:
		return "error"
	case StatusNoOutput:
		return "no_output"
	case StatusPassThrough:
		return "pass_through"
	}
	return fmt.Sprintf("status(%d)", uint32(s))
}

// OutputKind tells the host which part of the result an output import call
// carries; a call may emit several kinds.
type OutputKind uint32

const (
	// OutputBody is the replacement body: modified request or response,
	// a JSON array of chunks, an upstream request spec, a native payload.
	OutputBody OutputKind = 0
	// OutputResponse is a short-circuit response from pre_request: the host
	// answers it without calling upstream.
	OutputResponse OutputKind = 1
	// OutputState is the new opaque per-stream state blob.
	OutputState OutputKind = 2
	// OutputHeaders is a JSON object of string headers to add (upstream
	// request for pre_request, client response otherwise).
	OutputHeaders OutputKind = 3
)

// Hook identifies a hook in the ExportCall dispatch. The numeric values are
// part of ABI v1.
type Hook uint32

const (
	// HookDescribe returns the Manifest as JSON through OutputBody.
	HookDescribe Hook = 0
	// HookConfigure receives the plugin's JSON config; called once per
	// instance before any other hook, and again on reconfiguration.
	HookConfigure Hook = 1
	// HookPreRequest sees the unified request before routing.
	HookPreRequest Hook = 2
	// HookPostResponse sees the unified response (or error envelope).
	HookPostResponse Hook = 3
	// HookStreamBatch sees a batch of unified stream chunks (stream frame).
	HookStreamBatch Hook = 4
	// HookAdaptRequest turns a unified request into an UpstreamRequest spec.
	HookAdaptRequest Hook = 5
	// HookAdaptResponse turns an UpstreamResponse into a unified response.
	HookAdaptResponse Hook = 6
	// HookAdaptStream turns a batch of upstream stream events into unified
	// chunks (stream frame).
	HookAdaptStream Hook = 7
	// HookIngressRequest decodes a native-format request (drop-in route)
	// into a unified request.
	HookIngressRequest Hook = 8
	// HookEgressResponse encodes a unified response into the native format.
	HookEgressResponse Hook = 9
	// HookEgressStream encodes unified chunks into native stream events
	// (stream frame).
	HookEgressStream Hook = 10

	hookCount = 11
)

var hookNames = [hookCount]string{
	"describe", "configure", "pre_request", "post_response", "stream_batch",
	"adapt_request", "adapt_response", "adapt_stream",
	"ingress_request", "egress_response", "egress_stream",
}

// String returns the manifest name of the hook.
func (h Hook) String() string {
	if h < hookCount {
		return hookNames[h]
	}
	return fmt.Sprintf("hook(%d)", uint32(h))
}

// ParseHook maps a manifest hook name to its Hook.
func ParseHook(name string) (Hook, bool) {
	for i, n := range hookNames {
		if n == name {
			return Hook(i), true
		}
	}
	return 0, false
}

// IsStream reports whether the hook's input is a stream frame.
func (h Hook) IsStream() bool {
	return h == HookStreamBatch || h == HookAdaptStream || h == HookEgressStream
}

// Kind is what a plugin is for.
type Kind string

// Plugin kinds.
const (
	KindProvider  Kind = "provider"
	KindGuardrail Kind = "guardrail"
	KindTransform Kind = "transform"
)

// Capabilities a manifest may declare.
const (
	// CapabilityPassthrough: the adapter's upstream wire equals the unified
	// (OpenAI) wire, so the host may skip the guest and pass bytes through.
	CapabilityPassthrough = "passthrough"
)

// Manifest is what HookDescribe returns. The host reads it once per load.
type Manifest struct {
	ABI          int      `json:"abi"`
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	Kind         Kind     `json:"kind"`
	Hooks        []string `json:"hooks"`
	Wire         string   `json:"wire,omitempty"`
	Capabilities []string `json:"capabilities,omitempty"`
	// ConfigSchema is a JSON Schema of the config HookConfigure accepts.
	ConfigSchema RawJSON `json:"config_schema,omitempty"`
}

// Implements reports whether the manifest lists the hook.
func (m *Manifest) Implements(h Hook) bool {
	name := h.String()
	for _, n := range m.Hooks {
		if n == name {
			return true
		}
	}
	return false
}

// HasCapability reports whether the manifest declares the capability.
func (m *Manifest) HasCapability(c string) bool {
	for _, n := range m.Capabilities {
		if n == c {
			return true
		}
	}
	return false
}

// Output is the result of one hook call, the same for wasm and go-plugin.
type Output struct {
	Status Status
	// Body replaces the hook's input (see OutputBody).
	Body []byte
	// Response is a short-circuit response (pre_request only).
	Response []byte
	// State is the per-stream state after a stream hook. Nil means empty:
	// a plugin that wants to keep its state returns in.State.
	State []byte
	// Headers to add; see OutputHeaders.
	Headers map[string]string
}

// Pass continues with the input unchanged.
func Pass() Output { return Output{Status: StatusPassThrough} }

// Replace continues with body instead of the input.
func Replace(body []byte) Output { return Output{Status: StatusOK, Body: body} }

// Respond short-circuits a pre_request hook with a unified response.
func Respond(response []byte) Output { return Output{Status: StatusOK, Response: response} }

// Drop drops a stream batch.
func Drop() Output { return Output{Status: StatusNoOutput} }

// Error is how a plugin rejects a request, replaces a response with an error
// or aborts a stream. Code is an HTTP status (400 when unset). Only Code and
// Message cross the ABI, so error identity does not survive the trip.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Error formats as "code: message".
func (e *Error) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

// Reject builds an *Error with an HTTP status code.
func Reject(code int, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// AsError converts any error returned by a plugin into an *Error; errors
// that are not *Error become code 500 because they signal a plugin bug
// rather than a deliberate rejection.
func AsError(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		if pe.Code == 0 {
			return &Error{Code: 400, Message: pe.Message}
		}
		return pe
	}
	return &Error{Code: 500, Message: err.Error()}
}

// StreamInput is the decoded stream frame given to stream hooks.
type StreamInput struct {
	// State is the blob the plugin emitted after the previous batch of
	// this stream (empty on the first batch). The host keeps it, so any
	// instance can take any batch.
	State []byte
	// Batch is the batch payload: a JSON array of unified chunks for
	// stream_batch/egress_stream, a JSON array of upstream events for
	// adapt_stream.
	Batch []byte
	// End is set on the last batch of the stream; a plugin holding back
	// data must flush it now.
	End bool
}

// Stream frame layout (little endian):
//
//	u32 flags (bit 0: end of stream) | u32 state length | state | batch
const (
	streamFlagEnd    = 1
	streamHeaderSize = 8
)

// StreamHeader returns the 8-byte header of a stream frame, letting a host
// write header, state and batch into guest memory without concatenating.
func StreamHeader(stateLen int, end bool) [streamHeaderSize]byte {
	var h [streamHeaderSize]byte
	var flags uint32
	if end {
		flags |= streamFlagEnd
	}
	binary.LittleEndian.PutUint32(h[0:], flags)
	binary.LittleEndian.PutUint32(h[4:], uint32(stateLen))
	return h
}

// AppendStreamFrame appends the encoded frame of in to dst.
func AppendStreamFrame(dst []byte, in StreamInput) []byte {
	h := StreamHeader(len(in.State), in.End)
	dst = append(dst, h[:]...)
	dst = append(dst, in.State...)
	return append(dst, in.Batch...)
}

// ParseStreamFrame decodes a stream frame without copying.
func ParseStreamFrame(b []byte) (StreamInput, error) {
	if len(b) < streamHeaderSize {
		return StreamInput{}, errors.New("stream frame: short header")
	}
	flags := binary.LittleEndian.Uint32(b[0:])
	n := binary.LittleEndian.Uint32(b[4:])
	if uint64(n) > uint64(len(b)-streamHeaderSize) {
		return StreamInput{}, errors.New("stream frame: state length out of range")
	}
	st := b[streamHeaderSize : streamHeaderSize+int(n)]
	return StreamInput{State: st, Batch: b[streamHeaderSize+int(n):], End: flags&streamFlagEnd != 0}, nil
}
