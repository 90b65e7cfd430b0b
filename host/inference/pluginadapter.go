package inference

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// PluginInvoker is the part of a loaded plugin (plugins.Entry) an adapter needs.
type PluginInvoker interface {
	Name() string
	Manifest() pluginsdk.Manifest
	Invoke(ctx context.Context, hook pluginsdk.Hook, in plugins.Input) (pluginsdk.Output, error)
}

// PluginAdapter runs a provider adapter plugin (wasm or subprocess).
type PluginAdapter struct {
	p PluginInvoker
}

// NewPluginAdapter wraps a loaded provider plugin.
func NewPluginAdapter(p PluginInvoker) *PluginAdapter { return &PluginAdapter{p: p} }

// Name implements Adapter.
func (a *PluginAdapter) Name() string { return a.p.Name() }

// Passthrough implements Adapter.
func (a *PluginAdapter) Passthrough() bool {
	m := a.p.Manifest()
	return m.HasCapability(pluginsdk.CapabilityPassthrough)
}

// Supports implements Adapter.
func (a *PluginAdapter) Supports(requestType string) bool {
	m := a.p.Manifest()
	return m.HasCapability(pluginsdk.CapabilityRequestPrefix + requestType)
}

// AdaptRequest implements Adapter.
func (a *PluginAdapter) AdaptRequest(ctx context.Context, in *AdaptRequestInput) (*UpstreamRequest, error) {
	raw, err := appendAdaptRequestInput(make([]byte, 0, len(in.Body)+len(in.KeyConfig)+256), in)
	if err != nil {
		return nil, fmt.Errorf("encode adapt_request input: %w", err)
	}
	out, err := a.p.Invoke(ctx, pluginsdk.HookAdaptRequest, plugins.Input{Body: raw})
	if err != nil {
		return nil, err
	}
	if out.Status == pluginsdk.StatusPassThrough || out.Status == pluginsdk.StatusNoOutput || len(out.Body) == 0 {
		return nil, fmt.Errorf("adapter %s returned no upstream request", a.p.Name())
	}
	var spec UpstreamRequest
	if err := decodeUpstreamRequest(out.Body, &spec); err != nil {
		return nil, fmt.Errorf("adapter %s returned an invalid upstream request: %w", a.p.Name(), err)
	}
	return &spec, nil
}

// AdaptResponse implements Adapter.
func (a *PluginAdapter) AdaptResponse(ctx context.Context, in *AdaptResponseInput) ([]byte, error) {
	raw, err := appendAdaptResponseInput(make([]byte, 0, len(in.Body)+256), in)
	if err != nil {
		return nil, fmt.Errorf("encode adapt_response input: %w", err)
	}
	out, err := a.p.Invoke(ctx, pluginsdk.HookAdaptResponse, plugins.Input{Body: raw})
	if err != nil {
		return nil, err
	}
	if out.Status == pluginsdk.StatusPassThrough || len(out.Body) == 0 {
		return in.Body, nil
	}
	if !jsonx.Valid(out.Body) {
		return nil, fmt.Errorf("adapter %s returned a response that is not JSON", a.p.Name())
	}
	return out.Body, nil
}

// AdaptStream implements Adapter.
func (a *PluginAdapter) AdaptStream(ctx context.Context, state []byte, events []UpstreamEvent, end bool) ([]json.RawMessage, []byte, error) {
	batch := appendEvents(nil, events)
	out, err := a.p.Invoke(ctx, pluginsdk.HookAdaptStream, plugins.Input{Body: batch, State: state, End: end})
	if err != nil {
		return nil, state, err
	}
	newState := out.State
	if out.Status == pluginsdk.StatusNoOutput || len(bytes.TrimSpace(out.Body)) == 0 {
		return nil, newState, nil
	}
	var chunks []json.RawMessage
	ok := jsonx.ForEachElement(out.Body, 0, func(s, e int) {
		chunks = append(chunks, json.RawMessage(out.Body[s:e]))
	})
	if !ok {
		return nil, newState, fmt.Errorf("adapter %s returned stream chunks that are not a JSON array", a.p.Name())
	}
	return chunks, newState, nil
}

// appendEvents encodes a stream batch for adapt_stream by hand, to the byte
// as json.Marshal would (see pluginjson.go): Marshal re-scans
// every event's data to compact it, which profiles showed as the largest
// host-side cost of a translated stream. Data is JSON already (rawJSON
// quotes anything else), so it is copied as is.
func appendEvents(dst []byte, events []UpstreamEvent) []byte {
	n := 2
	for i := range events {
		n += len(events[i].Data) + len(events[i].Event) + 40
	}
	dst = slices.Grow(dst, n)
	dst = append(dst, '[')
	for i := range events {
		ev := &events[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		if ev.Event != "" {
			dst = append(dst, `"event":`...)
			dst = appendJSONString(dst, ev.Event)
			dst = append(dst, ',')
		}
		dst = append(dst, `"data":`...)
		if len(ev.Data) == 0 {
			dst = append(dst, "null"...)
		} else {
			dst = append(dst, ev.Data...)
		}
		if ev.Exception {
			dst = append(dst, `,"exception":true`...)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// IngressRequest implements NativeCodec. A pass-through answer (the OpenAI
// adapter, whose native wire is the unified wire) is the identity.
func (a *PluginAdapter) IngressRequest(ctx context.Context, native []byte) ([]byte, error) {
	out, err := a.p.Invoke(ctx, pluginsdk.HookIngressRequest, plugins.Input{Body: native})
	if err != nil {
		return nil, err
	}
	if out.Status == pluginsdk.StatusPassThrough || len(out.Body) == 0 {
		return native, nil
	}
	if !json.Valid(out.Body) {
		return nil, fmt.Errorf("adapter %s returned an ingress request that is not JSON", a.p.Name())
	}
	return out.Body, nil
}

// EgressResponse implements NativeCodec.
func (a *PluginAdapter) EgressResponse(ctx context.Context, unified []byte) ([]byte, error) {
	out, err := a.p.Invoke(ctx, pluginsdk.HookEgressResponse, plugins.Input{Body: unified})
	if err != nil {
		return nil, err
	}
	if out.Status == pluginsdk.StatusPassThrough || len(out.Body) == 0 {
		return unified, nil
	}
	if !json.Valid(out.Body) {
		return nil, fmt.Errorf("adapter %s returned a native response that is not JSON", a.p.Name())
	}
	return out.Body, nil
}

// EgressStream implements NativeCodec: unified chunks in, native events
// out. A pass-through answer gives the chunks back unchanged, each as a
// data-only event.
func (a *PluginAdapter) EgressStream(ctx context.Context, state []byte, chunks []json.RawMessage, end bool) ([]json.RawMessage, []byte, error) {
	batch := []byte("[]")
	if len(chunks) > 0 {
		var err error
		if batch, err = json.Marshal(chunks); err != nil {
			return nil, state, fmt.Errorf("encode egress batch: %w", err)
		}
	}
	out, err := a.p.Invoke(ctx, pluginsdk.HookEgressStream, plugins.Input{Body: batch, State: state, End: end})
	if err != nil {
		return nil, state, err
	}
	if out.Status == pluginsdk.StatusPassThrough {
		evs := make([]json.RawMessage, 0, len(chunks))
		for _, ch := range chunks {
			evs = append(evs, mustJSON(map[string]json.RawMessage{"data": ch}))
		}
		return evs, state, nil
	}
	if out.Status == pluginsdk.StatusNoOutput || len(bytes.TrimSpace(out.Body)) == 0 {
		return nil, out.State, nil
	}
	var evs []json.RawMessage
	if !jsonx.ForEachElement(out.Body, 0, func(s, e int) { evs = append(evs, json.RawMessage(out.Body[s:e])) }) {
		return nil, out.State, fmt.Errorf("adapter %s returned native stream events that are not a JSON array", a.p.Name())
	}
	return evs, out.State, nil
}

// Native implements NativeCodec: the drop-in routes need all three
// ingress/egress hooks.
func (a *PluginAdapter) Native() bool {
	m := a.p.Manifest()
	return m.Implements(pluginsdk.HookIngressRequest) && m.Implements(pluginsdk.HookEgressResponse) &&
		m.Implements(pluginsdk.HookEgressStream)
}
