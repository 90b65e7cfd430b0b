package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// idCounter numbers generated completion ids. It starts at a random value
// so that instances (each with its own counter) rarely hand out the same id.
var idCounter atomic.Uint64

func init() { idCounter.Store(rand.Uint64() >> 16) }

// newID is a completion id for answers without an AWS request id.
func newID() string { return "chatcmpl-bedrock-" + strconv.FormatUint(idCounter.Add(1), 10) }

// AdaptResponse maps a Converse, InvokeModel (embeddings) or
// ListFoundationModels answer to the unified response.
func (*Adapter) AdaptResponse(in []byte) (pluginsdk.Output, error) {
	if !jsonx.Valid(in) || in[skipWS(in, 0)] != '{' {
		return pluginsdk.Output{}, badUpstream("adapt_response input is not a JSON object")
	}
	body, _ := field(in, "body")
	if len(body) == 0 || body[0] != '{' {
		return pluginsdk.Output{}, badUpstream("upstream answer is not a JSON object")
	}
	model := strValue(in, "model")
	var out []byte
	var err error
	switch rt := strValue(in, "request_type"); rt {
	case pluginsdk.RequestChat, "":
		id := ""
		if h, ok := field(in, "headers"); ok && len(h) > 0 && h[0] == '{' {
			if rid := strValue(h, "x-amzn-requestid"); rid != "" {
				id = "chatcmpl-" + rid
			}
		}
		if id == "" {
			id = newID()
		}
		out, err = chatResponse(body, id, model, time.Now().Unix())
	case pluginsdk.RequestListModels:
		out, err = listModelsResponse(strValue(in, "provider"), body)
	case pluginsdk.RequestEmbedding:
		out, err = embeddingResponse(model, body)
	case RequestInvoke:
		h, _ := field(in, "headers")
		out = invokeResponse(h, body)
	default:
		err = badUpstream("request type " + strconv.Quote(rt) + " is not supported")
	}
	if err != nil {
		return pluginsdk.Output{}, err
	}
	return pluginsdk.Replace(out), nil
}

// finishReason maps a Converse stopReason to an OpenAI finish_reason.
func finishReason(stop []byte) string {
	switch string(stop) {
	case "end_turn", "stop_sequence":
		return "stop"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "guardrail_intervened", "content_filtered":
		return "content_filter"
	}
	return "stop"
}

// chatResponse builds the chat.completion for a Converse answer.
func chatResponse(body []byte, id, model string, created int64) ([]byte, error) {
	msg, ok := path(body, "output", "message")
	if !ok || len(msg) == 0 || msg[0] != '{' {
		return nil, badUpstream("Converse answer has no output.message")
	}
	content, _ := field(msg, "content")
	var text, reasoning, calls []byte
	nCalls := 0
	jsonAnswer := false
	var err error
	if len(content) > 0 && content[0] == '[' {
		eachElement(content, func(blk []byte) {
			if err != nil || blk[0] != '{' {
				return
			}
			if t, ok := strField(blk, "text"); ok {
				// Escaped spans concatenate into one valid escaped string.
				text = append(text, t...)
				return
			}
			if tu, ok := field(blk, "toolUse"); ok && len(tu) > 0 && tu[0] == '{' {
				if n, _ := strField(tu, "name"); string(n) == jsonToolName {
					// The structured output answer (see jsonToolName).
					in, _ := field(tu, "input")
					var c bytes.Buffer
					if json.Compact(&c, in) != nil {
						err = badUpstream("toolUse input is not JSON")
						return
					}
					text = appendEscaped(text, c.Bytes())
					jsonAnswer = true
					return
				}
				calls = appendComma(calls)
				calls, err = appendToolCall(calls, tu, -1)
				nCalls++
				return
			}
			if rt, ok := path(blk, "reasoningContent", "reasoningText"); ok && len(rt) > 0 && rt[0] == '{' {
				if t, ok := strField(rt, "text"); ok {
					reasoning = append(reasoning, t...)
				}
			}
		})
	}
	if err != nil {
		return nil, err
	}
	stop, _ := strField(body, "stopReason")
	out := make([]byte, 0, len(body)+256)
	out = append(out, `{"id":`...)
	out = appendString(out, id)
	out = append(out, `,"object":"chat.completion","created":`...)
	out = strconv.AppendInt(out, created, 10)
	out = append(out, `,"model":`...)
	out = appendString(out, model)
	out = append(out, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if len(text) > 0 || nCalls == 0 {
		out = appendRawString(out, text)
	} else {
		out = append(out, "null"...) // OpenAI's shape for a tool-call-only answer
	}
	if len(reasoning) > 0 {
		out = append(out, `,"reasoning_content":`...)
		out = appendRawString(out, reasoning)
	}
	if nCalls > 0 {
		out = append(out, `,"tool_calls":[`...)
		out = append(out, calls...)
		out = append(out, ']')
	}
	finish := finishReason(stop)
	if jsonAnswer && nCalls == 0 {
		finish = "stop" // the client asked for an answer, not a tool call
	}
	out = append(out, `},"finish_reason":"`...)
	out = append(out, finish...)
	out = append(out, `"}]`...)
	if u, ok := field(body, "usage"); ok && len(u) > 0 && u[0] == '{' {
		out = append(out, `,"usage":`...)
		out = appendUsage(out, u)
	}
	return append(out, '}'), nil
}

// appendToolCall appends an OpenAI tool call for a Converse toolUse block;
// index >= 0 adds the stream index.
func appendToolCall(dst, tu []byte, index int) ([]byte, error) {
	id, _ := strField(tu, "toolUseId")
	name, _ := strField(tu, "name")
	input, ok := field(tu, "input")
	var args bytes.Buffer
	switch {
	case (!ok || isNull(input)) && index >= 0:
		// A streamed tool call's start has no input: the arguments follow
		// in deltas, so the first fragment is empty.
	case !ok || isNull(input):
		args.WriteString("{}")
	default:
		// arguments is the input document as a JSON string; compacting
		// keeps it byte-stable whatever whitespace the service used.
		if err := json.Compact(&args, input); err != nil {
			return nil, badUpstream("toolUse input is not JSON")
		}
	}
	dst = append(dst, '{')
	if index >= 0 {
		dst = append(dst, `"index":`...)
		dst = strconv.AppendInt(dst, int64(index), 10)
		dst = append(dst, ',')
	}
	dst = append(dst, `"id":`...)
	dst = appendRawString(dst, id)
	dst = append(dst, `,"type":"function","function":{"name":`...)
	dst = appendRawString(dst, name)
	dst = append(dst, `,"arguments":`...)
	dst = appendString(dst, args.String())
	return append(dst, "}}"...), nil
}

// appendUsage maps Converse usage to OpenAI usage. Bedrock counts cache
// reads and writes apart from inputTokens, so prompt_tokens adds them up:
// every input token, with the cached part broken down in the details.
func appendUsage(dst, u []byte) []byte {
	in, _ := intValue(u, "inputTokens")
	outT, _ := intValue(u, "outputTokens")
	cr, _ := intValue(u, "cacheReadInputTokens")
	cw, _ := intValue(u, "cacheWriteInputTokens")
	prompt := in + cr + cw
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, prompt, 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, outT, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, prompt+outT, 10)
	if cr > 0 || cw > 0 {
		dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
		dst = strconv.AppendInt(dst, cr, 10)
		dst = append(dst, `,"cache_write_tokens":`...)
		dst = strconv.AppendInt(dst, cw, 10)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// listModelsResponse maps ListFoundationModels to an OpenAI model list.
func listModelsResponse(provider string, body []byte) ([]byte, error) {
	sums, ok := field(body, "modelSummaries")
	if !ok || len(sums) == 0 || sums[0] != '[' {
		return nil, badUpstream("model list answer has no modelSummaries")
	}
	if provider == "" {
		provider = "bedrock"
	}
	out := make([]byte, 0, len(sums)/4+64)
	out = append(out, `{"object":"list","data":[`...)
	first := true
	eachElement(sums, func(m []byte) {
		id, ok := strField(m, "modelId")
		if !ok || len(id) == 0 {
			return
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, `{"id":`...)
		out = appendRawString(out, id)
		out = append(out, `,"object":"model","owned_by":`...)
		out = appendString(out, provider)
		out = append(out, '}')
	})
	return append(out, "]}"...), nil
}

// appendEscaped appends the escaped content of s as a JSON string would
// hold it (no quotes).
func appendEscaped(dst, s []byte) []byte {
	q := appendString(nil, string(s))
	return append(dst, q[1:len(q)-1]...)
}
