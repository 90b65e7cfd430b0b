// Package plugins is the host side of wasmgate plugins: the Plugin interface
// both runtimes (wazero in host/plugins/wasm, go-plugin subprocesses in
// host/plugins/process) implement, the typed errors a failing plugin
// produces, per-plugin statistics, and the Manager that loads plugins from
// specs and swaps them atomically on reload.
//
// The package does not import the runtimes: a Manager is given one Loader
// per runtime, which keeps the runtimes testable alone and lets the host
// choose which ones to build in.
package plugins

import (
	"context"
	"errors"
	"fmt"

	"github.com/wasmgate/gateway/pluginsdk"
)

// Input is one hook call's input. For stream hooks Body is the batch and
// State/End complete the stream frame; a runtime frames them itself so the
// wasm runtime can write the parts into guest memory without concatenating.
type Input struct {
	Body  []byte
	State []byte
	End   bool
}

// Invoker runs one hook of a loaded plugin. Hooks the manifest does not list
// are answered with pass-through without reaching the plugin.
type Invoker interface {
	Invoke(ctx context.Context, hook pluginsdk.Hook, in Input) (pluginsdk.Output, error)
}

// Plugin is a loaded plugin, whatever its runtime. Every method is safe for
// concurrent use. Errors are *Error.
type Plugin interface {
	Invoker
	// Manifest is what the plugin's describe hook returned at load.
	Manifest() pluginsdk.Manifest
	PreRequest(ctx context.Context, req []byte) (pluginsdk.Output, error)
	PostResponse(ctx context.Context, resp []byte) (pluginsdk.Output, error)
	StreamBatch(ctx context.Context, in pluginsdk.StreamInput) (pluginsdk.Output, error)
	AdaptRequest(ctx context.Context, req []byte) (pluginsdk.Output, error)
	AdaptResponse(ctx context.Context, resp []byte) (pluginsdk.Output, error)
	AdaptStream(ctx context.Context, in pluginsdk.StreamInput) (pluginsdk.Output, error)
	IngressRequest(ctx context.Context, native []byte) (pluginsdk.Output, error)
	EgressResponse(ctx context.Context, unified []byte) (pluginsdk.Output, error)
	EgressStream(ctx context.Context, in pluginsdk.StreamInput) (pluginsdk.Output, error)
	// Close releases instances or the subprocess. Calls after Close fail
	// with KindClosed.
	Close() error
}

// Hooks implements Plugin's named hook methods on top of an Invoker, so a
// runtime writes only Invoke. Embed it and set it with BindHooks.
type Hooks struct {
	inv Invoker
}

// BindHooks returns Hooks calling inv.
func BindHooks(inv Invoker) Hooks { return Hooks{inv: inv} }

func stream(in pluginsdk.StreamInput) Input {
	return Input{Body: in.Batch, State: in.State, End: in.End}
}

// PreRequest runs pre_request.
func (h Hooks) PreRequest(ctx context.Context, req []byte) (pluginsdk.Output, error) {
	return h.inv.Invoke(ctx, pluginsdk.HookPreRequest, Input{Body: req})
}

// PostResponse runs post_response.
func (h Hooks) PostResponse(ctx context.Context, resp []byte) (pluginsdk.Output, error) {
	return h.inv.Invoke(ctx, pluginsdk.HookPostResponse, Input{Body: resp})
}

// StreamBatch runs stream_batch.
func (h Hooks) StreamBatch(ctx context.Context, in pluginsdk.StreamInput) (pluginsdk.Output, error) {
	return h.inv.Invoke(ctx, pluginsdk.HookStreamBatch, stream(in))
}

// AdaptRequest runs adapt_request.
func (h Hooks) AdaptRequest(ctx context.Context, req []byte) (pluginsdk.Output, error) {
	return h.inv.Invoke(ctx, pluginsdk.HookAdaptRequest, Input{Body: req})
}

// AdaptResponse runs adapt_response.
func (h Hooks) AdaptResponse(ctx context.Context, resp []byte) (pluginsdk.Output, error) {
	return h.inv.Invoke(ctx, pluginsdk.HookAdaptResponse, Input{Body: resp})
}

// AdaptStream runs adapt_stream.
func (h Hooks) AdaptStream(ctx context.Context, in pluginsdk.StreamInput) (pluginsdk.Output, error) {
	return h.inv.Invoke(ctx, pluginsdk.HookAdaptStream, stream(in))
}

// IngressRequest runs ingress_request.
func (h Hooks) IngressRequest(ctx context.Context, native []byte) (pluginsdk.Output, error) {
	return h.inv.Invoke(ctx, pluginsdk.HookIngressRequest, Input{Body: native})
}

// EgressResponse runs egress_response.
func (h Hooks) EgressResponse(ctx context.Context, unified []byte) (pluginsdk.Output, error) {
	return h.inv.Invoke(ctx, pluginsdk.HookEgressResponse, Input{Body: unified})
}

// EgressStream runs egress_stream.
func (h Hooks) EgressStream(ctx context.Context, in pluginsdk.StreamInput) (pluginsdk.Output, error) {
	return h.inv.Invoke(ctx, pluginsdk.HookEgressStream, stream(in))
}

// ErrorKind classifies a plugin error so the host can pick its answer.
type ErrorKind string

// Error kinds. KindRejected is the plugin's own decision (its status code
// should reach the client); every other kind is a runtime failure the host
// answers with a 5xx envelope, or skips when the spec says fail_open.
const (
	KindRejected      ErrorKind = "rejected"
	KindTrap          ErrorKind = "trap"
	KindPanic         ErrorKind = "panic"
	KindOutOfMemory   ErrorKind = "out_of_memory"
	KindTimeout       ErrorKind = "timeout"
	KindCrash         ErrorKind = "crash"
	KindInputTooLarge ErrorKind = "input_too_large"
	KindUnavailable   ErrorKind = "unavailable"
	KindClosed        ErrorKind = "closed"
	KindBadOutput     ErrorKind = "bad_output"
)

// Error is the error every plugin call returns. It always names the plugin
// and the hook.
type Error struct {
	Plugin string
	Hook   string
	Kind   ErrorKind
	// Code is the plugin's HTTP status for KindRejected, else 0.
	Code    int
	Message string
	Err     error
}

// Error formats as: plugin "name" hook: kind (code): message: cause.
func (e *Error) Error() string {
	s := fmt.Sprintf("plugin %q %s: %s", e.Plugin, e.Hook, e.Kind)
	if e.Kind == KindRejected {
		s += fmt.Sprintf(" (%d)", e.Code)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap exposes the runtime cause (a wazero or gRPC error).
func (e *Error) Unwrap() error { return e.Err }

// Failure reports whether the error is a runtime failure rather than the
// plugin's own rejection.
func (e *Error) Failure() bool { return e.Kind != KindRejected }

// HTTPStatus is the status the host should answer: the plugin's code for a
// rejection, 413 for oversized input, 504 for a timeout, else 502.
func (e *Error) HTTPStatus() int {
	switch e.Kind {
	case KindRejected:
		if e.Code >= 400 && e.Code <= 599 {
			return e.Code
		}
		return 400
	case KindInputTooLarge:
		return 413
	case KindTimeout:
		return 504
	}
	return 502
}

// IsFailure reports whether err is a plugin runtime failure.
func IsFailure(err error) bool {
	var pe *Error
	return errors.As(err, &pe) && pe.Failure()
}

// GuestError turns a plugin's error status into a KindRejected *Error.
func GuestError(plugin string, hook pluginsdk.Hook, code int, msg string) *Error {
	return &Error{Plugin: plugin, Hook: hook.String(), Kind: KindRejected, Code: code, Message: msg}
}
