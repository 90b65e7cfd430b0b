package main

// InvokeModel passthrough: the /bedrock/model/{id}/invoke drop-in route
// sends a Bedrock model's native body (Anthropic Messages on Bedrock,
// Amazon Nova, ...) to a Bedrock upstream as it is. The adapter only
// builds the URL, and reads token usage for the host's accounting; the
// answer and the stream events reach the client byte for byte.

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/wasmgate/gateway/pluginsdk"
)

// RequestInvoke is the request type of an InvokeModel passthrough: the
// host's body is {"model","stream","body":<native request>}.
const RequestInvoke = "invoke"

// invokeContext marks the stream state of an InvokeModel stream, whose
// events are handled by invokeStream rather than the Converse chunker.
const invokeContext = `{"invoke":true}`

func invokeRequest(r reqInput) ([]byte, error) {
	native, ok := field(r.body, "body")
	if !ok || len(native) == 0 || native[0] != '{' {
		return nil, badRequest("invoke: body must be the model's native JSON request")
	}
	op := "invoke"
	if r.stream {
		op = "invoke-with-response-stream"
	}
	url, err := modelURL(r, op)
	if err != nil {
		return nil, err
	}
	spec := appendSpec(nil, "POST", url, native, r.stream)
	// The context marks the stream (and the answer) as an invoke one.
	spec = append(spec[:len(spec)-1], `,"context":`...)
	spec = appendString(spec, invokeContext)
	return append(spec, '}'), nil
}

// invokeUsage reads token counts from an InvokeModel answer: Bedrock's
// X-Amzn-Bedrock-*-Token-Count headers (every model family), else the
// body's usage in Anthropic's or Nova's spelling.
func invokeUsage(headers, body []byte) (in, out int64, ok bool) {
	if len(headers) > 0 && headers[0] == '{' {
		i, e1 := strconv.ParseInt(strValue(headers, "x-amzn-bedrock-input-token-count"), 10, 64)
		o, e2 := strconv.ParseInt(strValue(headers, "x-amzn-bedrock-output-token-count"), 10, 64)
		if e1 == nil && e2 == nil {
			return i, o, true
		}
	}
	u, found := field(body, "usage")
	if !found || len(u) == 0 || u[0] != '{' {
		return 0, 0, false
	}
	if i, ok := intValue(u, "input_tokens"); ok {
		o, _ := intValue(u, "output_tokens")
		return i, o, true
	}
	if i, ok := intValue(u, "inputTokens"); ok {
		o, _ := intValue(u, "outputTokens")
		return i, o, true
	}
	return 0, 0, false
}

func appendInvokeUsage(dst []byte, in, out int64) []byte {
	dst = append(dst, `"usage":{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, in, 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, out, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, in+out, 10)
	return append(dst, '}')
}

// invokeResponse wraps the native answer for the host:
// {"object":"bedrock.invoke","usage":{unified},"body":<answer as sent>}.
// The host sends "body" to the client unchanged.
func invokeResponse(headers, body []byte) []byte {
	out := make([]byte, 0, len(body)+128)
	out = append(out, `{"object":"bedrock.invoke",`...)
	if in, o, ok := invokeUsage(headers, body); ok {
		out = appendInvokeUsage(out, in, o)
		out = append(out, ',')
	}
	out = append(out, `"body":`...)
	out = append(out, body...)
	return append(out, '}')
}

// invokeStream reads the usage out of InvokeModelWithResponseStream
// events ({"bytes": base64 of the model's native event}) and emits one
// {"object":"bedrock.invoke.chunk"} per event, with the usage known so
// far. The events themselves go to the client as sent.
func invokeStream(state, batch []byte) (pluginsdk.Output, error) {
	in, _ := intValue(state, "in")
	outTok, _ := intValue(state, "out")
	var err error
	out := []byte{'['}
	n := 0
	eachElement(batch, func(ev []byte) {
		if err != nil || len(ev) == 0 || ev[0] != '{' {
			return
		}
		name := strValue(ev, "event")
		if v, ok := field(ev, "exception"); ok && string(v) == "true" {
			data, _ := field(ev, "data")
			msg := ""
			if len(data) > 0 && data[0] == '{' {
				msg = strValue(data, "message")
			}
			err = &pluginsdk.Error{Code: exceptionStatus(name), Message: "bedrock " + name + ": " + msg}
			return
		}
		data, _ := field(ev, "data")
		b64 := strValue(data, "bytes")
		if payload, derr := base64.StdEncoding.DecodeString(b64); derr == nil && len(payload) > 0 && payload[0] == '{' {
			readInvokeUsage(payload, &in, &outTok)
		}
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = append(out, `{"object":"bedrock.invoke.chunk"`...)
		if in > 0 || outTok > 0 {
			out = append(out, ',')
			out = appendInvokeUsage(out, in, outTok)
		}
		out = append(out, '}')
	})
	if err != nil {
		return pluginsdk.Output{}, err
	}
	out = append(out, ']')
	st := []byte(`{"invoke":true,"in":`)
	st = strconv.AppendInt(st, in, 10)
	st = append(st, `,"out":`...)
	st = strconv.AppendInt(st, outTok, 10)
	st = append(st, '}')
	if n == 0 {
		return pluginsdk.Output{Status: pluginsdk.StatusNoOutput, State: st}, nil
	}
	return pluginsdk.Output{Status: pluginsdk.StatusOK, Body: out, State: st}, nil
}

// readInvokeUsage updates the counts from one native stream event:
// Bedrock's invocation metrics on the last event (every model family),
// Anthropic's message_start / message_delta usage, Nova's metadata.
func readInvokeUsage(p []byte, in, out *int64) {
	if m, ok := field(p, "amazon-bedrock-invocationMetrics"); ok && len(m) > 0 && m[0] == '{' {
		if v, ok := intValue(m, "inputTokenCount"); ok {
			*in = v
		}
		if v, ok := intValue(m, "outputTokenCount"); ok {
			*out = v
		}
		return
	}
	switch typ := strValue(p, "type"); {
	case typ == "message_start":
		if u, ok := path(p, "message", "usage"); ok && len(u) > 0 && u[0] == '{' {
			*in, _ = intValue(u, "input_tokens")
		}
	case typ == "message_delta":
		if u, ok := field(p, "usage"); ok && len(u) > 0 && u[0] == '{' {
			*out, _ = intValue(u, "output_tokens")
			if v, ok := intValue(u, "input_tokens"); ok && v > 0 {
				*in = v
			}
		}
	case strings.HasPrefix(string(p), `{"metadata"`) || typ == "":
		if u, ok := path(p, "metadata", "usage"); ok && len(u) > 0 && u[0] == '{' {
			*in, _ = intValue(u, "inputTokens")
			*out, _ = intValue(u, "outputTokens")
		}
	}
}
