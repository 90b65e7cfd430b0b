package inference

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/eventstream"
	"github.com/wasmgate/gateway/host/sse"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// eventReader yields upstream stream events whatever the framing.
type eventReader struct {
	sse *sse.Reader
	aws *eventstream.Decoder
}

func newEventReader(framing string, r io.Reader) *eventReader {
	if framing == "aws-eventstream" {
		return &eventReader{aws: eventstream.NewDecoder(r)}
	}
	return &eventReader{sse: sse.NewReader(r, 0)}
}

// next returns the next event; io.EOF at the end.
func (er *eventReader) next() (UpstreamEvent, error) {
	if er.aws != nil {
		m, err := er.aws.Decode()
		if err != nil {
			return UpstreamEvent{}, err
		}
		if m.Header(eventstream.HeaderMessageType) == "exception" || m.Header(eventstream.HeaderMessageType) == "error" {
			name := m.Header(eventstream.HeaderExceptionType)
			if name == "" {
				name = m.Header(eventstream.HeaderErrorCode)
			}
			return UpstreamEvent{Event: name, Data: rawJSON(m.Payload), Exception: true}, nil
		}
		return UpstreamEvent{Event: m.Header(eventstream.HeaderEventType), Data: rawJSON(m.Payload)}, nil
	}
	ev, err := er.sse.Next()
	if err != nil {
		return UpstreamEvent{}, err
	}
	return UpstreamEvent{Event: ev.Event, Data: rawJSON(ev.Data)}, nil
}

// more reports whether another event can be read without blocking.
func (er *eventReader) more() bool { return er.sse != nil && er.sse.Buffered() > 0 }

// rawJSON keeps JSON payloads as they are and quotes anything else ([DONE]).
func rawJSON(b []byte) json.RawMessage {
	if json.Valid(b) {
		return append(json.RawMessage(nil), b...)
	}
	q, _ := json.Marshal(string(b))
	return q
}

// openStream reads the first events of a stream before anything is sent to
// the client: an upstream that answers 200 and then reports an error before
// any content must still fail the attempt, so retries and fallbacks apply.
func (s *Service) openStream(ctx context.Context, res *attemptResult) *attemptError {
	res.reader = newEventReader(res.framing, res.resp.Body)
	for i := 0; i < 32; i++ {
		ev, err := res.reader.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil // an empty stream is passed on as such
			}
			return &attemptError{retryable: true, err: apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_stream_error",
				fmt.Sprintf("provider %q stream broke before any content: %v", res.target.Provider, err))}
		}
		if res.passthrough {
			if aerr := openAIStreamError(res, ev); aerr != nil {
				return aerr
			}
			res.pending = append(res.pending, sseLine(ev))
			if hasContent(ev.Data) {
				return nil
			}
			continue
		}
		chunks, state, err := res.adapter.AdaptStream(ctx, res.state, []UpstreamEvent{ev}, false)
		if err != nil {
			return streamAdaptError(res, err)
		}
		res.state = state
		for _, ch := range chunks {
			res.pending = append(res.pending, dataLine(ch))
		}
		if len(chunks) > 0 {
			return nil
		}
	}
	return nil
}

// openAIStreamError recognises the error event OpenAI-wire servers send
// inside a 200 stream.
func openAIStreamError(res *attemptResult, ev UpstreamEvent) *attemptError {
	if ev.Event != "error" && !bytes.HasPrefix(bytes.TrimSpace(ev.Data), []byte(`{"error"`)) {
		return nil
	}
	status := http.StatusBadGateway
	if s, e, ok := jsonx.Field(ev.Data, "error"); ok {
		if code, ok := jsonx.IntField(ev.Data[s:e], "code"); ok && code >= 400 && code < 600 {
			status = int(code)
		}
	}
	e := apierr.New(status, apierr.TypeUpstream, "upstream_stream_error",
		fmt.Sprintf("provider %q reported an error in the stream: %s", res.target.Provider, upstreamMessage(status, ev.Data)))
	e.IsGatewayError = false
	return &attemptError{retryable: true, err: e}
}

func streamAdaptError(res *attemptResult, err error) *attemptError {
	var pe interface{ PluginStatus() int }
	if errors.As(err, &pe) && pe.PluginStatus() > 0 {
		// The adapter mapped an upstream error event (overloaded, throttled).
		e := apierr.New(pe.PluginStatus(), apierr.TypeUpstream, "upstream_stream_error",
			fmt.Sprintf("provider %q reported an error in the stream: %v", res.target.Provider, err))
		e.IsGatewayError = false
		return &attemptError{retryable: true, err: e}
	}
	return &attemptError{err: adapterError(res.adapter, "adapt_stream", err)}
}

// hasContent reports whether an OpenAI-wire chunk carries model output;
// role-only first chunks do not count.
func hasContent(data []byte) bool {
	return bytes.Contains(data, []byte(`"content":"`)) || bytes.Contains(data, []byte(`"tool_calls"`)) ||
		bytes.Contains(data, []byte(`"delta":"`)) || bytes.Contains(data, []byte(`"text":"`)) ||
		bytes.Equal(data, []byte(`"[DONE]"`))
}

func sseLine(ev UpstreamEvent) []byte {
	data := []byte(ev.Data)
	if len(data) > 0 && data[0] == '"' {
		var str string
		if json.Unmarshal(data, &str) == nil {
			data = []byte(str)
		}
	}
	return sse.AppendEvent(nil, ev.Event, data)
}

func dataLine(chunk []byte) []byte { return sse.AppendEvent(nil, "", chunk) }

// respond sends a successful attempt to the client.
func (s *Service) respond(c *fiber.Ctx, cl *call, res *attemptResult) error {
	cl.out.Provider, cl.out.ResolvedModel, cl.out.KeyID = res.target.Provider, res.resolved, res.keyID
	if cl.p.stream && res.reader != nil {
		return s.respondStream(c, cl, res)
	}
	defer res.cancel()
	defer res.resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.resp.Body, int64(s.o.MaxResponseBytes)+1))
	if err != nil {
		e := apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_read_failed",
			fmt.Sprintf("reading the answer of provider %q failed: %v", res.target.Provider, err))
		s.finishError(cl, e)
		return e
	}
	if len(body) > s.o.MaxResponseBytes {
		e := apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_response_too_large",
			fmt.Sprintf("provider %q answered more than %d bytes", res.target.Provider, s.o.MaxResponseBytes))
		s.finishError(cl, e)
		return e
	}
	out := body
	if !res.passthrough {
		hdr := map[string]string{}
		for _, k := range []string{"x-request-id", "request-id", "x-amzn-requestid"} {
			if v := res.resp.Header.Get(k); v != "" {
				hdr[k] = v
			}
		}
		in := &AdaptResponseInput{RequestType: cl.reqType,
			Provider: res.target.Provider, Model: res.resolved, Status: res.resp.StatusCode, Headers: hdr, Body: rawJSON(body)}
		if cl.reqType == TypeEmbedding {
			if f, ok := jsonx.StringField(cl.p.body, "encoding_format"); ok {
				in.EncodingFormat = string(f)
			}
		}
		out, err = res.adapter.AdaptResponse(c.UserContext(), in)
		if err != nil {
			e := adapterError(res.adapter, "adapt_response", err)
			if e.StatusCode < 500 {
				e.StatusCode = http.StatusBadGateway
			}
			s.finishError(cl, e)
			return e
		}
	} else if !json.Valid(body) {
		e := apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_malformed",
			fmt.Sprintf("provider %q answered a body that is not JSON", res.target.Provider))
		s.finishError(cl, e)
		return e
	}
	if u, ok := usageOf(out); ok {
		cl.out.Usage = u
	}
	cl.out.StatusCode = http.StatusOK
	cl.out.Latency = s.now().Sub(cl.out.Start)
	out = injectExtraFields(out, s.extraFields(cl))
	cl.out.ResponseBody = out
	s.record(cl)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(http.StatusOK).Send(out)
}

// respondStream forwards the stream as it arrives: events read ahead while
// opening the stream first, then each batch as the upstream sends it.
func (s *Service) respondStream(c *fiber.Ctx, cl *call, res *attemptResult) error {
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	ctx := context.WithoutCancel(c.UserContext())
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer res.cancel()
		defer res.resp.Body.Close()
		first := true
		write := func(b []byte) bool {
			if first && len(b) > 0 {
				cl.out.TTFT = s.now().Sub(cl.out.Start)
				first = false
			}
			if u, ok := usageFromLine(b); ok {
				cl.out.Usage = u
			}
			_, err := w.Write(b)
			return err == nil
		}
		flush := func() bool {
			if err := w.Flush(); err != nil {
				cl.out.ClientCanceled = true
				return false
			}
			return true
		}
		for _, p := range res.pending {
			if !write(p) {
				return
			}
		}
		if !flush() {
			s.finishStream(cl, nil)
			return
		}
		var streamErr *apierr.Error
		sawDone := false
		for {
			batch, err := readBatch(res.reader, s.o.StreamBatchMax)
			end := errors.Is(err, io.EOF)
			if err != nil && !end {
				streamErr = apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_stream_error",
					fmt.Sprintf("provider %q stream broke: %v", res.target.Provider, err))
			}
			if res.passthrough {
				for _, ev := range batch {
					if bytes.Equal(ev.Data, []byte(`"[DONE]"`)) {
						sawDone = true
					}
					if !write(sseLine(ev)) {
						break
					}
				}
			} else if len(batch) > 0 || end {
				chunks, state, aerr := res.adapter.AdaptStream(ctx, res.state, batch, end || streamErr != nil)
				res.state = state
				if aerr != nil {
					streamErr = streamAdaptError(res, aerr).err
				}
				for _, ch := range chunks {
					write(dataLine(ch))
				}
			}
			if streamErr != nil {
				write(dataLine(mustJSON(map[string]any{"error": streamErr})))
				flush()
				break
			}
			if !flush() {
				break
			}
			if end {
				if !res.passthrough || !sawDone {
					write([]byte("data: [DONE]\n\n"))
					flush()
				}
				break
			}
		}
		s.finishStream(cl, streamErr)
	})
	return nil
}

// readBatch reads one event (blocking) and then whatever more is already
// buffered, up to max, so a burst becomes one adapter call.
func readBatch(r *eventReader, max int) ([]UpstreamEvent, error) {
	ev, err := r.next()
	if err != nil {
		return nil, err
	}
	batch := []UpstreamEvent{ev}
	for len(batch) < max && r.more() {
		ev, err := r.next()
		if err != nil {
			return batch, err
		}
		batch = append(batch, ev)
	}
	return batch, nil
}

// usageFromLine finds usage in an SSE line carrying a chunk with usage.
func usageFromLine(line []byte) (Usage, bool) {
	i := bytes.Index(line, []byte(`"usage"`))
	if i < 0 {
		return Usage{}, false
	}
	start := bytes.Index(line, []byte("data: "))
	if start < 0 {
		return Usage{}, false
	}
	data := bytes.TrimSpace(line[start+6:])
	if j := bytes.Index(data, []byte("\ndata: ")); j >= 0 {
		data = data[:j]
	}
	return usageOf(data)
}

func (s *Service) finishStream(cl *call, e *apierr.Error) {
	cl.out.Latency = s.now().Sub(cl.out.Start)
	cl.out.StatusCode = http.StatusOK
	if e != nil {
		cl.out.Err = e
		cl.out.StatusCode = e.StatusCode
	}
	s.record(cl)
}

func (s *Service) finishError(cl *call, e *apierr.Error) {
	if e == nil {
		return
	}
	cl.out.Err = e
	cl.out.StatusCode = e.StatusCode
	cl.out.Latency = s.now().Sub(cl.out.Start)
	if e.ExtraFields != nil {
		lat := float64(cl.out.Latency.Microseconds()) / 1000
		e.ExtraFields.Latency = &lat
	}
	s.record(cl)
}

func (s *Service) record(cl *call) {
	if s.o.Recorder != nil {
		o := cl.out
		o.RequestBody = cl.p.body
		s.o.Recorder.Record(&o)
	}
}

// extraFields is the gateway's report added to a successful response.
func (s *Service) extraFields(cl *call) []byte {
	lat := float64(s.now().Sub(cl.out.Start).Microseconds()) / 1000
	ri := apierr.RoutingInfo{Provider: cl.out.Provider, Model: cl.out.ResolvedModel, Key: cl.out.KeyID,
		IsFallback: cl.out.IsFallback, PrimaryProvider: cl.primary.Provider, PrimaryModel: cl.primary.Model,
		RequestedProvider: cl.primary.Provider, RequestedModel: cl.primary.Model}
	u := cl.out.Usage
	billed := map[string]any{
		"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.TotalTokens,
		"prompt_tokens_details":     map[string]int64{"cached_read_tokens": u.CachedReadTokens},
		"completion_tokens_details": map[string]int64{"reasoning_tokens": u.ReasoningTokens},
	}
	x := apierr.ExtraFields{Provider: cl.out.Provider, ModelRequested: cl.p.model, ResolvedModelUsed: cl.out.ResolvedModel,
		RequestType: cl.reqType, Latency: &lat, RoutingInfo: &ri, BilledUsage: billed}
	return mustJSON(x)
}

// injectExtraFields adds "extra_fields" as the last member of a JSON object
// without re-encoding the rest.
func injectExtraFields(doc, extra []byte) []byte {
	end := bytes.LastIndexByte(doc, '}')
	if end < 0 {
		return doc
	}
	if _, _, exists := jsonx.Field(doc, "extra_fields"); exists {
		return doc
	}
	out := make([]byte, 0, len(doc)+len(extra)+20)
	out = append(out, doc[:end]...)
	trimmed := bytes.TrimSpace(doc[:end])
	if len(trimmed) > 0 && trimmed[len(trimmed)-1] != '{' {
		out = append(out, ',')
	}
	out = append(out, `"extra_fields":`...)
	out = append(out, extra...)
	return append(out, doc[end:]...)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{}`)
	}
	return b
}

var _ = strconv.Itoa
var _ = time.Now
