package pluginsdk

// Plugin is what every plugin implements. The hooks a plugin offers are the
// optional interfaces below that it also implements; Register and
// grpcplugin.Serve derive the manifest's hook list from them, so the list
// cannot drift from the code.
//
// Inputs are only valid during the call: a plugin that keeps bytes (for
// example in stream state) must copy them. Outputs are copied by the host
// at once, so a plugin may return slices of reusable buffers.
type Plugin interface {
	// Manifest describes the plugin. Hooks may be left empty: it is filled
	// from the implemented interfaces.
	Manifest() Manifest
	// Configure receives the JSON config from the plugin spec ("null" or
	// empty when none). It is called on every instance before any hook and
	// again on reconfiguration; an error fails the load.
	Configure(config []byte) error
}

// PreRequester implements pre_request: input is a unified request.
type PreRequester interface {
	PreRequest(req []byte) (Output, error)
}

// PostResponder implements post_response: input is a unified response.
type PostResponder interface {
	PostResponse(resp []byte) (Output, error)
}

// StreamBatcher implements stream_batch over unified chunks.
type StreamBatcher interface {
	StreamBatch(in StreamInput) (Output, error)
}

// RequestAdapter implements adapt_request: unified request in, JSON
// UpstreamRequest spec out.
type RequestAdapter interface {
	AdaptRequest(req []byte) (Output, error)
}

// ResponseAdapter implements adapt_response: JSON UpstreamResponse in,
// unified response out.
type ResponseAdapter interface {
	AdaptResponse(resp []byte) (Output, error)
}

// StreamAdapter implements adapt_stream: upstream events in, unified chunks
// (JSON array) out.
type StreamAdapter interface {
	AdaptStream(in StreamInput) (Output, error)
}

// IngressDecoder implements ingress_request: a native-format request from a
// drop-in route in, unified request out.
type IngressDecoder interface {
	IngressRequest(native []byte) (Output, error)
}

// EgressEncoder implements egress_response: unified response in, native
// response out.
type EgressEncoder interface {
	EgressResponse(unified []byte) (Output, error)
}

// EgressStreamEncoder implements egress_stream: unified chunks in, native
// stream events (JSON array of event objects) out.
type EgressStreamEncoder interface {
	EgressStream(in StreamInput) (Output, error)
}

// HooksOf lists the hooks p implements, in Hook order.
func HooksOf(p Plugin) []string {
	var hs []string
	add := func(ok bool, h Hook) {
		if ok {
			hs = append(hs, h.String())
		}
	}
	_, ok := p.(PreRequester)
	add(ok, HookPreRequest)
	_, ok = p.(PostResponder)
	add(ok, HookPostResponse)
	_, ok = p.(StreamBatcher)
	add(ok, HookStreamBatch)
	_, ok = p.(RequestAdapter)
	add(ok, HookAdaptRequest)
	_, ok = p.(ResponseAdapter)
	add(ok, HookAdaptResponse)
	_, ok = p.(StreamAdapter)
	add(ok, HookAdaptStream)
	_, ok = p.(IngressDecoder)
	add(ok, HookIngressRequest)
	_, ok = p.(EgressEncoder)
	add(ok, HookEgressResponse)
	_, ok = p.(EgressStreamEncoder)
	add(ok, HookEgressStream)
	return hs
}

// FullManifest returns p's manifest with ABI and hooks filled in.
func FullManifest(p Plugin) Manifest {
	m := p.Manifest()
	m.ABI = ABIVersion
	if len(m.Hooks) == 0 {
		m.Hooks = HooksOf(p)
	}
	return m
}

// Dispatch runs one hook of p over input; it is the single code path both
// runtimes' guest sides use, so a plugin behaves the same under either.
// For stream hooks input is a stream frame.
func Dispatch(p Plugin, h Hook, input []byte) (Output, error) {
	switch h {
	case HookConfigure:
		return Output{Status: StatusNoOutput}, p.Configure(input)
	case HookPreRequest:
		if x, ok := p.(PreRequester); ok {
			return x.PreRequest(input)
		}
	case HookPostResponse:
		if x, ok := p.(PostResponder); ok {
			return x.PostResponse(input)
		}
	case HookAdaptRequest:
		if x, ok := p.(RequestAdapter); ok {
			return x.AdaptRequest(input)
		}
	case HookAdaptResponse:
		if x, ok := p.(ResponseAdapter); ok {
			return x.AdaptResponse(input)
		}
	case HookIngressRequest:
		if x, ok := p.(IngressDecoder); ok {
			return x.IngressRequest(input)
		}
	case HookEgressResponse:
		if x, ok := p.(EgressEncoder); ok {
			return x.EgressResponse(input)
		}
	case HookStreamBatch, HookAdaptStream, HookEgressStream:
		in, err := ParseStreamFrame(input)
		if err != nil {
			return Output{}, &Error{Code: 500, Message: err.Error()}
		}
		switch h {
		case HookStreamBatch:
			if x, ok := p.(StreamBatcher); ok {
				return x.StreamBatch(in)
			}
		case HookAdaptStream:
			if x, ok := p.(StreamAdapter); ok {
				return x.AdaptStream(in)
			}
		case HookEgressStream:
			if x, ok := p.(EgressStreamEncoder); ok {
				return x.EgressStream(in)
			}
		}
	}
	// A host only calls hooks the manifest lists; answering pass-through
	// keeps an old host talking to a newer plugin safe.
	return Pass(), nil
}
