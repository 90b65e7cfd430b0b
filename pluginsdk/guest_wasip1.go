//go:build wasip1

package pluginsdk

import (
	"unsafe"
)

// The glue below is the guest half of ABI v1 (see ABI.md). It is compiled
// only into wasip1 modules, so a plugin author never writes an export.

// input is the reusable input buffer: the host writes each call's input here,
// so no allocation crosses the boundary per call. It is a package variable
// so the GC keeps it alive between calls.
var input []byte

// scratch is reused to encode headers.
var scratch []byte

//go:wasmimport wasmgate_v1 output
func hostOutput(kind uint32, ptr unsafe.Pointer, size uint32)

//go:wasmimport wasmgate_v1 error
func hostError(code uint32, ptr unsafe.Pointer, size uint32)

//go:wasmimport wasmgate_v1 log
func hostLog(level uint32, ptr unsafe.Pointer, size uint32)

//go:wasmexport wasmgate_abi_v1
func abiMarker() {}

//go:wasmexport wasmgate_input
func guestInput(size uint32) uint32 {
	if uint32(cap(input)) < size || input == nil {
		n := uint32(4096)
		for n < size {
			n *= 2
		}
		input = make([]byte, n)
	}
	input = input[:cap(input)]
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(input))))
}

//go:wasmexport wasmgate_call
func guestCall(hook, size uint32) uint32 {
	p := registered
	if p == nil {
		emitError(&Error{Code: 500, Message: "pluginsdk: no plugin registered (call pluginsdk.Register in init)"})
		return uint32(StatusError)
	}
	if size > uint32(len(input)) {
		emitError(&Error{Code: 500, Message: "pluginsdk: input larger than buffer"})
		return uint32(StatusError)
	}
	in := input[:size]
	if Hook(hook) == HookDescribe {
		b, err := EncodeManifest(p)
		if err != nil {
			emitError(AsError(err))
			return uint32(StatusError)
		}
		emit(OutputBody, b)
		return uint32(StatusOK)
	}
	out, err := Dispatch(p, Hook(hook), in)
	if err != nil {
		emitError(AsError(err))
		return uint32(StatusError)
	}
	if out.Body != nil {
		emit(OutputBody, out.Body)
	}
	if out.Response != nil {
		emit(OutputResponse, out.Response)
	}
	if out.State != nil {
		emit(OutputState, out.State)
	}
	if len(out.Headers) > 0 {
		scratch = AppendHeaders(scratch[:0], out.Headers)
		emit(OutputHeaders, scratch)
	}
	return uint32(out.Status)
}

func emit(kind OutputKind, b []byte) {
	hostOutput(uint32(kind), unsafe.Pointer(unsafe.SliceData(b)), uint32(len(b)))
}

func emitError(e *Error) {
	msg := e.Message
	hostError(uint32(e.Code), unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
}

// Log sends a line to the host's logger (level: -4 debug, 0 info, 4 warn,
// 8 error, as in log/slog). Unlike stderr it is not size-capped per line
// by the guest, but the host applies its own cap.
func Log(level int, msg string) {
	hostLog(uint32(int32(level)), unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
}
