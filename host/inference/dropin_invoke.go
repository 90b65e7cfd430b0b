package inference

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/eventstream"
	"github.com/wasmgate/gateway/host/providers"
	"github.com/wasmgate/gateway/host/routing"
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// Bedrock InvokeModel on the /bedrock prefix.
//
// The body is the model's native request: Anthropic Messages with
// "anthropic_version" (no model: it is in the path) for Claude, Amazon
// Nova's messages/inferenceConfig shape otherwise. A Bedrock model is
// served by passing the body to the upstream InvokeModel API as it is
// (the bedrock adapter only builds the URL and reads usage) and its
// answer back byte for byte. Any other target, a fallback included, is
// reached by decoding the body to the unified request (Anthropic's or the
// Converse ingress, Nova being Converse-shaped) and encoding the answer
// back into the same native shape, framed as InvokeModelWithResponseStream
// chunks for streams.

// TypeInvoke is the adapter request type of an InvokeModel passthrough.
const TypeInvoke = "invoke"

// invokeFormat names the native body shape of an InvokeModel request.
type invokeFormat int

const (
	invokeNone invokeFormat = iota
	invokeAnthropic
	invokeNova
)

var (
	wireInvokeAnthropic = &wire{module: "anthropic", provider: "bedrock", errorBody: bedrockError, eventStream: true, invoke: invokeAnthropic}
	wireInvokeNova      = &wire{module: "bedrock", provider: "bedrock", errorBody: bedrockError, eventStream: true, invoke: invokeNova}
)

// invokeCall is one InvokeModel request on its way through the plan.
type invokeCall struct {
	eg     *egress
	model  string // the Bedrock model id the body was written for
	stream bool
	native []byte
	// raw: the plan's Bedrock target for model gets the native body;
	// cl.p.body is then the envelope, and the unified request is only
	// decoded when another target is tried.
	raw     bool
	unified []byte
}

// bedrockInvoke serves POST /bedrock/model/{modelId}/invoke and
// invoke-with-response-stream.
func (s *Service) bedrockInvoke(stream bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		model, err := url.PathUnescape(c.Params("modelId"))
		if err != nil {
			model = c.Params("modelId")
		}
		body := c.Body()
		w := wireInvokeNova
		if _, _, ok := jsonx.Field(body, "anthropic_version"); ok {
			w = wireInvokeAnthropic
		}
		eg := &egress{w: w}
		if !json.Valid(body) || len(body) == 0 || body[0] != '{' {
			return s.reject(c, eg, TypeChat, model, apierr.BadRequest("invalid_json", "", "request body is not a JSON object"))
		}
		codec, aerr := s.codec(w)
		if aerr != nil {
			return s.reject(c, eg, TypeChat, model, aerr)
		}
		eg.codec = codec
		if _, _, ok := jsonx.Field(body, "fallbacks"); ok {
			// A gateway member: read by serveNative, never sent upstream.
			if body, err = removeFields(body, gatewayFields); err != nil {
				return s.reject(c, eg, TypeChat, model, apierr.BadRequest("invalid_json", "", "request body is not valid JSON"))
			}
		}
		ic := &invokeCall{eg: eg, model: model, stream: stream, native: body}
		eg.invoke = ic
		ctx := c.UserContext()
		eg.encode = func(unified []byte) ([]byte, error) {
			if obj, _ := jsonx.StringField(unified, "object"); string(obj) == "bedrock.invoke" {
				if s, e, ok := jsonx.Field(unified, "body"); ok {
					return unified[s:e], nil
				}
			}
			return codec.EgressResponse(ctx, unified)
		}
		var unified []byte
		if s.invokePassable(model) {
			ic.raw, ic.model = true, strings.TrimPrefix(model, "bedrock/")
			unified = mustJSON(map[string]any{"model": model, "stream": stream, "body": json.RawMessage(body)})
		} else if unified, err = ic.ingress(ctx); err != nil {
			return s.reject(c, eg, TypeChat, model, adapterError(codec, "ingress_request", err))
		}
		return s.serveNative(c, eg, TypeChat, "/chat/completions", unified)
	}
}

// invokePassable reports whether an InvokeModel request for model may go
// to Bedrock as sent: the model is a Bedrock one, and no request plugin
// needs to see (or rewrite) the unified request or answer.
func (s *Service) invokePassable(model string) bool {
	if i := strings.IndexByte(model, '/'); i > 0 && model[:i] != "bedrock" {
		if _, known := providers.Lookup(model[:i]); known {
			return false
		}
	}
	if s.o.Plugins != nil {
		for _, h := range []pluginsdk.Hook{pluginsdk.HookPreRequest, pluginsdk.HookPostResponse, pluginsdk.HookStreamBatch} {
			if len(s.o.Plugins(h)) > 0 {
				return false
			}
		}
	}
	return true
}

// ingress decodes the native body into the unified chat request.
func (ic *invokeCall) ingress(ctx context.Context) ([]byte, error) {
	var in []byte
	if ic.eg.w.invoke == invokeAnthropic {
		// Messages on Bedrock: no model member, and anthropic_version,
		// which no other API takes.
		b, err := removeFields(ic.native, []string{"anthropic_version"})
		if err != nil {
			return nil, apierr.BadRequest("invalid_json", "", "request body is not valid JSON")
		}
		b, _ = jsonx.SetStringField(b, "model", ic.model)
		if ic.stream {
			b, _ = jsonx.SetField(b, "stream", []byte("true"))
		}
		in = b
	} else {
		in = mustJSON(map[string]any{"model": ic.model, "stream": ic.stream, "body": json.RawMessage(ic.native)})
	}
	unified, err := ic.eg.codec.IngressRequest(ctx, in)
	if err != nil {
		return nil, err
	}
	if ic.stream && ic.eg.w.invoke == invokeAnthropic {
		ic.eg.state = anthropicStreamSeed(unified)
	}
	return unified, nil
}

// request picks what one attempt sends: the native body to the Bedrock
// target the body was written for, the unified request (decoded once, on
// first need) to any other.
func (ic *invokeCall) request(ctx context.Context, tgt routing.Target, reqType string, body []byte) (string, []byte, error) {
	if !ic.raw {
		return reqType, body, nil
	}
	if tgt.Provider == "bedrock" && tgt.Model == ic.model {
		return TypeInvoke, body, nil
	}
	if ic.unified == nil {
		u, err := ic.ingress(ctx)
		if err != nil {
			return "", nil, adapterError(ic.eg.codec, "ingress_request", err)
		}
		ic.unified = u
	}
	return reqType, ic.unified, nil
}

// invokeFrame frames one translated native event as an
// InvokeModelWithResponseStream chunk: {"bytes": base64(event JSON)},
// the event being Anthropic's data (which names its type) or Nova's
// {"<event>": data}. An error becomes a modelStreamErrorException.
func invokeFrame(w *wire, name, exc string, data []byte) []byte {
	var m eventstream.Message
	switch {
	case exc != "":
		m = eventstream.Exception(exc, data)
	case w.invoke == invokeAnthropic && name == "error":
		msg := "model stream error"
		if s, e, ok := jsonx.Field(data, "error"); ok {
			if v, ok := jsonx.StringField(data[s:e], "message"); ok {
				msg = unescape(v)
			}
		}
		m = eventstream.Exception("modelStreamErrorException", mustJSON(map[string]string{"message": msg}))
	default:
		payload := data
		if w.invoke == invokeNova {
			payload = append(append(jsonx.AppendString([]byte{'{'}, name), ':'), data...)
			payload = append(payload, '}')
		}
		chunk := append([]byte(`{"bytes":"`), base64.StdEncoding.EncodeToString(payload)...)
		m = eventstream.Event("chunk", append(chunk, '"', '}'))
	}
	b, err := eventstream.Append(nil, m)
	if err != nil {
		return nil
	}
	return b
}

// passLine frames an upstream event passed to a drop-in client as sent:
// SSE, or AWS event-stream (the payload bytes as received, re-framed).
func (em *streamEmitter) passLine(ev UpstreamEvent) []byte {
	if !em.cl.eg.w.eventStream {
		return sseLine(ev)
	}
	m := eventstream.Event(ev.Event, ev.Data)
	if ev.Exception {
		m = eventstream.Exception(ev.Event, ev.Data)
	}
	b, err := eventstream.Append(nil, m)
	if err != nil {
		return nil
	}
	return b
}
