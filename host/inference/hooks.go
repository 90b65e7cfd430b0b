package inference

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// PluginChain returns the request plugins implementing a hook, in order.
type PluginChain func(hook pluginsdk.Hook) []*plugins.Entry

// preResult is what the pre_request chain decided.
type preResult struct {
	body     []byte
	response []byte            // short-circuit answer
	headers  map[string]string // added to the upstream request
}

// runPreRequest passes the unified request through every pre_request
// plugin: each may modify it, answer it itself, or reject it.
func (s *Service) runPreRequest(ctx context.Context, body []byte) (*preResult, *apierr.Error) {
	res := &preResult{body: body}
	if s.o.Plugins == nil {
		return res, nil
	}
	for _, p := range s.o.Plugins(pluginsdk.HookPreRequest) {
		out, err := p.PreRequest(ctx, res.body)
		if err != nil {
			return nil, pluginError(p.Name(), err)
		}
		for k, v := range out.Headers {
			if res.headers == nil {
				res.headers = map[string]string{}
			}
			res.headers[k] = v
		}
		if out.Status == pluginsdk.StatusOK && len(out.Response) > 0 {
			res.response = out.Response
			return res, nil
		}
		if out.Status == pluginsdk.StatusOK && len(out.Body) > 0 {
			if !json.Valid(out.Body) {
				return nil, apierr.New(http.StatusBadGateway, apierr.TypePlugin, "plugin_bad_output",
					fmt.Sprintf("plugin %q returned a request that is not JSON", p.Name()))
			}
			res.body = out.Body
		}
	}
	return res, nil
}

// runPostResponse passes a unified response through the post_response
// chain; a plugin may replace it or turn it into an error.
func (s *Service) runPostResponse(ctx context.Context, body []byte) ([]byte, map[string]string, *apierr.Error) {
	if s.o.Plugins == nil {
		return body, nil, nil
	}
	var headers map[string]string
	for _, p := range s.o.Plugins(pluginsdk.HookPostResponse) {
		out, err := p.PostResponse(ctx, body)
		if err != nil {
			return nil, nil, pluginError(p.Name(), err)
		}
		for k, v := range out.Headers {
			if headers == nil {
				headers = map[string]string{}
			}
			headers[k] = v
		}
		if out.Status == pluginsdk.StatusOK && len(out.Body) > 0 && json.Valid(out.Body) {
			body = out.Body
		}
	}
	return body, headers, nil
}

// streamPlugins carries the per-plugin state of one stream.
type streamPlugins struct {
	chain  []*plugins.Entry
	states [][]byte
}

func (s *Service) newStreamPlugins() *streamPlugins {
	if s.o.Plugins == nil {
		return nil
	}
	chain := s.o.Plugins(pluginsdk.HookStreamBatch)
	if len(chain) == 0 {
		return nil
	}
	return &streamPlugins{chain: chain, states: make([][]byte, len(chain))}
}

// run passes a batch of unified chunks through each stream_batch plugin:
// pass, replace, drop, or abort the stream with an error.
func (sp *streamPlugins) run(ctx context.Context, chunks []json.RawMessage, end bool) ([]json.RawMessage, *apierr.Error) {
	for i, p := range sp.chain {
		if len(chunks) == 0 && !end {
			return nil, nil
		}
		batch, _ := json.Marshal(chunks)
		if chunks == nil {
			batch = []byte("[]")
		}
		out, err := p.StreamBatch(ctx, pluginsdk.StreamInput{State: sp.states[i], Batch: batch, End: end})
		if err != nil {
			return nil, pluginError(p.Name(), err)
		}
		sp.states[i] = out.State
		switch out.Status {
		case pluginsdk.StatusNoOutput:
			chunks = nil
		case pluginsdk.StatusOK:
			var next []json.RawMessage
			if !jsonx.ForEachElement(out.Body, 0, func(s, e int) { next = append(next, json.RawMessage(out.Body[s:e])) }) {
				return nil, apierr.New(http.StatusBadGateway, apierr.TypePlugin, "plugin_bad_output",
					fmt.Sprintf("plugin %q returned stream chunks that are not a JSON array", p.Name()))
			}
			chunks = next
		}
	}
	return chunks, nil
}

// pluginError turns a plugin's error into the envelope: its own rejection
// keeps its status, a runtime failure is a 5xx naming the plugin.
func pluginError(name string, err error) *apierr.Error {
	var pe *plugins.Error
	if errors.As(err, &pe) {
		if !pe.Failure() {
			e := apierr.New(pe.HTTPStatus(), apierr.TypeInvalidRequest, "plugin_rejected",
				fmt.Sprintf("plugin %q rejected the request: %s", name, pe.Message))
			return e
		}
		return apierr.New(pe.HTTPStatus(), apierr.TypePlugin, "plugin_failed",
			fmt.Sprintf("plugin %q failed (%s): %s", name, pe.Kind, pe.Error()))
	}
	return apierr.New(http.StatusBadGateway, apierr.TypePlugin, "plugin_failed", fmt.Sprintf("plugin %q failed: %v", name, err))
}
