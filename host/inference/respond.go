package inference

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/eventstream"
	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/host/sse"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// eventReader yields upstream stream events whatever the framing.
type eventReader struct {
	sse *sse.Reader
	aws *eventstream.Decoder
	// src is the body when it can tell that more of it has arrived (the
	// fast path's, see fastBody).
	src interface{ Buffered() bool }
}

func newEventReader(framing string, r io.Reader) *eventReader {
	if framing == "aws-eventstream" {
		return &eventReader{aws: eventstream.NewDecoder(r)}
	}
	er := &eventReader{sse: sse.NewReader(r, 0)}
	er.src, _ = r.(interface{ Buffered() bool })
	return er
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
	// The reader hands over ev.Data: no copy needed.
	return UpstreamEvent{Event: ev.Event, Data: ownJSON(ev.Data)}, nil
}

// more reports whether another event can be read without blocking.
func (er *eventReader) more() bool {
	return er.sse != nil && (er.sse.Buffered() > 0 || er.src != nil && er.src.Buffered())
}

// rawJSON copies JSON payloads as they are and quotes anything else
// ([DONE]).
func rawJSON(b []byte) json.RawMessage { return ownJSON(bytes.Clone(b)) }

// ownJSON is rawJSON for bytes the caller hands over: kept, not copied.
func ownJSON(b []byte) json.RawMessage {
	if jsonx.Valid(b) {
		return b
	}
	q, _ := json.Marshal(string(b))
	return q
}

// openStream reads the first events of a stream before anything is sent to
// the client: an upstream that answers 200 and then reports an error before
// any content must still fail the attempt, so retries and fallbacks apply.
func (s *Service) openStream(ctx context.Context, res *attemptResult) *attemptError {
	res.reader = newEventReader(res.framing, res.body())
	for i := 0; i < 32; i++ {
		if !res.passthrough {
			// One adapter call for whatever arrived together (a whole
			// short answer often does): each call is a guest round trip.
			batch, err := readBatch(res.reader, s.o.StreamBatchMax)
			if len(batch) == 0 {
				return openStreamErr(res, err)
			}
			for _, ev := range batch {
				if malformedEvent(ev) {
					return &attemptError{err: malformedStream(res)}
				}
			}
			chunks, state, aerr := res.adapter.AdaptStream(ctx, res.state, batch, false)
			if aerr != nil && len(batch) > 1 {
				// Content followed by an error in one burst: go event by
				// event from the same state, so the content is held for
				// the client and the error surfaces mid-stream, as it
				// would have had the events arrived apart.
				return s.openStreamEach(ctx, res, batch)
			}
			if aerr != nil {
				return streamAdaptError(res, aerr)
			}
			opened, oerr := openingChunks(res, chunks)
			if oerr != nil {
				return oerr
			}
			res.state = state
			res.heldEvents = append(res.heldEvents, batch...) // for a same-wire drop-in pass
			res.heldChunks = append(res.heldChunks, chunks...)
			for _, ch := range chunks {
				res.pending = append(res.pending, dataLine(ch))
			}
			if opened || err != nil {
				// A read error after a partial batch surfaces on the
				// next read in run, after what was read is sent.
				return nil
			}
			continue
		}
		ev, err := res.reader.next()
		if err != nil {
			return openStreamErr(res, err)
		}
		if aerr := openAIStreamError(res, ev); aerr != nil {
			return aerr
		}
		if malformedEvent(ev) {
			return &attemptError{err: malformedStream(res)}
		}
		res.pending = append(res.pending, sseLine(ev))
		res.heldEvents = append(res.heldEvents, ev)
		if hasContent(ev.Data) {
			return nil
		}
	}
	return nil
}

// openStreamEach adapts batch one event at a time until the first content;
// events after it are handed back to the reader's caller through
// res.unread, to be adapted (and their error reported) by the emitter.
func (s *Service) openStreamEach(ctx context.Context, res *attemptResult, batch []UpstreamEvent) *attemptError {
	for i, ev := range batch {
		chunks, state, err := res.adapter.AdaptStream(ctx, res.state, []UpstreamEvent{ev}, false)
		if err != nil {
			return streamAdaptError(res, err)
		}
		opened, aerr := openingChunks(res, chunks)
		if aerr != nil {
			return aerr
		}
		res.state = state
		res.heldEvents = append(res.heldEvents, ev)
		res.heldChunks = append(res.heldChunks, chunks...)
		for _, ch := range chunks {
			res.pending = append(res.pending, dataLine(ch))
		}
		if opened {
			res.unread = batch[i+1:]
			return nil
		}
	}
	return nil
}

// openingChunks reads an adapter's chunks while its stream opens: opened
// once a chunk is more than the answer's opening; an error when an error
// chunk comes first. A role-only chunk (the assistant role with no
// content, tool call, reasoning, refusal or finish) does not open the
// stream, so an upstream error right after it still fails the attempt and
// picks the fallback, as on the passthrough path; adapters need not hold
// their opening back.
func openingChunks(res *attemptResult, chunks []json.RawMessage) (bool, *attemptError) {
	for _, ch := range chunks {
		if aerr := openAIStreamError(res, UpstreamEvent{Data: ch}); aerr != nil {
			return false, aerr
		}
		if !roleOnly(ch) {
			return true, nil
		}
	}
	return false, nil
}

// roleOnly reports a unified chunk that only opens the answer.
func roleOnly(ch []byte) bool {
	return bytes.Contains(ch, []byte(`"role":"assistant"`)) && !hasContent(ch) &&
		!nonEmptyString(ch, `"reasoning_content":"`) && !bytes.Contains(ch, []byte(`"thinking_blocks"`)) &&
		!nonEmptyString(ch, `"refusal":"`) && !nonEmptyString(ch, `"finish_reason":"`) && !bytes.Contains(ch, []byte(`"usage"`))
}

// openStreamErr is the outcome of a read that ended the stream before any
// content: an empty stream is passed on as such, a broken one fails the
// attempt (retryable).
func openStreamErr(res *attemptResult, err error) *attemptError {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return &attemptError{retryable: true, err: apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_stream_error",
		fmt.Sprintf("provider %q stream broke before any content: %v", res.target.Provider, err))}
}

// malformedEvent reports an SSE event whose data is not JSON (the event
// reader quotes such data) and not OpenAI's [DONE] terminator: every
// family sends JSON payloads, so anything else is a broken upstream.
func malformedEvent(ev UpstreamEvent) bool {
	return len(ev.Data) > 0 && ev.Data[0] == '"' && !bytes.Equal(ev.Data, []byte(`"[DONE]"`)) && ev.Event != "ping"
}

func malformedStream(res *attemptResult) *apierr.Error {
	return apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_malformed",
		fmt.Sprintf("provider %q sent a stream event that is not JSON", res.target.Provider))
}

// errorEvent reports an error event of an SSE stream: named "error"
// (Anthropic, drop-ins) or an OpenAI-wire {"error": ...} payload.
func errorEvent(ev UpstreamEvent) bool {
	return ev.Event == "error" || bytes.HasPrefix(bytes.TrimSpace(ev.Data), []byte(`{"error"`))
}

// openAIStreamError recognises the error event OpenAI-wire servers send
// inside a 200 stream.
func openAIStreamError(res *attemptResult, ev UpstreamEvent) *attemptError {
	if !errorEvent(ev) {
		return nil
	}
	ev.Data = res.redact(ev.Data)
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
	var pe *plugins.Error
	if errors.As(err, &pe) && !pe.Failure() {
		// The adapter mapped an upstream error event (overloaded, throttled).
		e := apierr.New(pe.HTTPStatus(), apierr.TypeUpstream, "upstream_stream_error",
			fmt.Sprintf("provider %q reported an error in the stream: %s", res.target.Provider, res.redact([]byte(pe.Message))))
		e.IsGatewayError = false
		return &attemptError{retryable: true, err: e}
	}
	return &attemptError{err: adapterError(res.adapter, "adapt_stream", err)}
}

// hasContent reports whether an OpenAI-wire chunk carries model output;
// role-only first chunks do not count.
func hasContent(data []byte) bool {
	return nonEmptyString(data, `"content":"`) || bytes.Contains(data, []byte(`"tool_calls"`)) ||
		nonEmptyString(data, `"delta":"`) || nonEmptyString(data, `"text":"`) ||
		bytes.Equal(data, []byte(`"[DONE]"`))
}

// nonEmptyString reports whether key (ending in an opening quote) occurs
// followed by at least one character of string content.
func nonEmptyString(data []byte, key string) bool {
	for {
		i := bytes.Index(data, []byte(key))
		if i < 0 {
			return false
		}
		data = data[i+len(key):]
		if len(data) > 0 && data[0] != '"' {
			return true
		}
	}
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
	defer res.close()
	// On the fast path body is the upstream response's pooled buffer,
	// released when respond returns: what goes to the client or the
	// caller is copied (see sendOwned).
	body, err := res.readBody(int64(s.o.MaxResponseBytes) + 1)
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
		for _, k := range []string{"x-request-id", "request-id", "x-amzn-requestid",
			"x-amzn-bedrock-input-token-count", "x-amzn-bedrock-output-token-count"} {
			if v := res.header(k); v != "" {
				hdr[k] = v
			}
		}
		in := &AdaptResponseInput{RequestType: res.reqType,
			Provider: res.target.Provider, Model: res.resolved, Status: res.status(), Headers: hdr, Body: rawJSON(body),
			Context: res.context}
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
		if t := bytes.TrimSpace(out); len(t) == 0 || t[0] != '{' {
			e := apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_malformed",
				fmt.Sprintf("provider %q answered something its adapter could not translate into a response", res.target.Provider))
			s.finishError(cl, e)
			return e
		}
	} else if !jsonx.Valid(body) {
		e := apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_malformed",
			fmt.Sprintf("provider %q answered a body that is not JSON", res.target.Provider))
		s.finishError(cl, e)
		return e
	}
	if u, ok := usageOf(out); ok {
		cl.out.Usage = u
	}
	if res.conv != nil {
		if out, err = res.conv.response(out); err != nil {
			e := apierr.As(err)
			s.finishError(cl, e)
			return e
		}
	}
	out, hdrs, perr := s.runPostResponse(c.UserContext(), out)
	if perr != nil {
		s.finishError(cl, perr)
		return perr
	}
	for k, v := range hdrs {
		c.Set(k, v)
	}
	cl.out.StatusCode = http.StatusOK
	cl.out.Latency = s.now().Sub(cl.out.Start)
	if cl.eg != nil {
		return s.sendNative(c, cl, out)
	}
	var scratch [1024]byte
	extra := s.appendExtraFields(scratch[:0], cl)
	if cl.capture != nil {
		out = injectExtraFields(out, extra)
		if res.fresp != nil {
			out = bytes.Clone(out) // out may still be the pooled upstream body
		}
		cl.out.ResponseBody = out
		s.record(cl)
		*cl.capture = out
		return nil
	}
	// The answer is written straight into the response's pooled body
	// buffer: no buffer of its own, and nothing aliases the upstream
	// response, which is released when respond returns.
	r := c.Response()
	if end, comma, ok := extraFieldsSplice(out); ok {
		r.SetBody(out[:end])
		if comma {
			r.AppendBodyString(",")
		}
		r.AppendBodyString(`"extra_fields":`)
		r.AppendBody(extra)
		r.AppendBody(out[end:])
	} else {
		r.SetBody(out)
	}
	cl.out.ResponseBody = r.Body()
	s.record(cl)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	c.Status(http.StatusOK)
	return nil
}

// respondStream forwards the stream as it arrives: events read ahead while
// opening the stream first, then each batch as the upstream sends it.
func (s *Service) respondStream(c *fiber.Ctx, cl *call, res *attemptResult) error {
	c.Set(fiber.HeaderContentType, streamContentType(cl))
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	em := &streamEmitter{s: s, cl: cl, res: res, sp: s.newStreamPlugins(), ctx: context.WithoutCancel(c.UserContext())}
	em.first = true
	em.nativePass = sameWire(cl, res) && em.sp == nil
	// Unknown length: fasthttp writes each Read as one chunk and flushes it.
	c.Response().SetBodyStream(&streamBody{em: em}, -1)
	return nil
}

// streamBody is a streamed answer as the response body. fasthttp's server
// pulls it from the connection's own goroutine and flushes each Read to
// the client; SetBodyStreamWriter would run the emitter on a goroutine of
// its own behind an in-memory pipe, with a goroutine hand-off (often a
// thread wake-up) for every flush.
type streamBody struct {
	em    *streamEmitter
	off   int // of em.out, sent up to here
	phase int
	eof   bool // io.EOF was returned: the client got the whole stream
	err   *apierr.Error
	// sawDone: the upstream sent its own [DONE].
	sawDone bool
}

const (
	phaseStart   = iota // the events read while opening the stream go first
	phaseBatches        // then batches as the upstream sends them
	phaseEnded          // the end of the stream is written
	phaseClosed         // recorded and the upstream released
)

// Read hands out what the emitter wrote; when all of it is sent it runs
// the emitter's next step. Each step's output is one chunk, as each
// flush was.
func (b *streamBody) Read(p []byte) (int, error) {
	em := b.em
	for b.off >= len(em.out) {
		em.out, b.off = em.out[:0], 0
		switch b.phase {
		case phaseStart:
			b.err = em.start()
			b.phase = phaseBatches
			if b.err != nil {
				em.finish(b.err, b.sawDone)
				b.phase = phaseEnded
			}
		case phaseBatches:
			if !em.step(&b.err, &b.sawDone) {
				em.finish(b.err, b.sawDone)
				b.phase = phaseEnded
			}
		default:
			b.eof = true
			return 0, io.EOF
		}
		// Events already read from the upstream go out with what was just
		// written: a burst is one write to the client, not one per step.
		for b.phase == phaseBatches && (em.res.unread != nil || em.res.reader.more()) {
			if !em.step(&b.err, &b.sawDone) {
				em.finish(b.err, b.sawDone)
				b.phase = phaseEnded
			}
		}
	}
	n := copy(p, em.out[b.off:])
	b.off += n
	return n, nil
}

// Close is called by fasthttp once the body is written or the client is
// gone (a failed write ends the pulling): the outcome is recorded and the
// upstream released, which cancels it when the stream did not end.
func (b *streamBody) Close() error {
	if b.phase == phaseClosed {
		return nil
	}
	em := b.em
	if !b.eof {
		em.gone = true
		em.cl.out.ClientCanceled = true
	}
	b.phase = phaseClosed
	em.s.finishStream(em.cl, b.err)
	em.res.close()
	return nil
}

// streamEmitter writes one stream to the client. The fast path copies
// OpenAI-wire events through; with stream plugins or a wire conversion
// (Responses, Completions) every batch becomes unified chunks first.
type streamEmitter struct {
	s     *Service
	cl    *call
	res   *attemptResult
	out   []byte // written, to be sent at the next flush point
	sp    *streamPlugins
	ctx   context.Context
	first bool
	gone  bool // the client went away
	// nativePass: a drop-in caller whose wire is the upstream's (an
	// Anthropic client and an Anthropic model) gets the upstream events
	// as sent; they are still adapted to unified chunks, for usage and
	// for error detection, but not re-encoded.
	nativePass bool
	// passedErr: the upstream's own error event went to the client.
	passedErr bool
	// failing: the stream broke; finish, not the last batch, ends the
	// client's native wire (with its error event).
	failing bool
}

func (em *streamEmitter) transforms() bool {
	return em.sp != nil || em.res.conv != nil || em.cl.eg != nil
}

func (em *streamEmitter) write(b []byte) {
	if em.gone || len(b) == 0 {
		return
	}
	if em.first {
		em.cl.out.TTFT = em.s.now().Sub(em.cl.out.Start)
		em.first = false
	}
	if em.cl.eg == nil {
		if u, ok := usageFromLine(b); ok {
			em.cl.out.Usage = u
		}
	}
	em.out = append(em.out, b...)
}

// chunks emits unified chunks through the stream plugins and the wire
// conversion.
func (em *streamEmitter) chunks(chunks []json.RawMessage, end bool) *apierr.Error {
	if em.sp != nil {
		out, perr := em.sp.run(em.ctx, chunks, end)
		if perr != nil {
			return perr
		}
		chunks = out
	}
	if em.cl.eg != nil {
		if em.nativePass {
			em.countUsage(chunks)
			return nil
		}
		// A broken stream does not end the client's wire here: finish
		// ends it with the wire's error event. Ended here, a native wire
		// would close normally first (Anthropic's message_stop), clients
		// stop reading there, and the error would be lost. Stream plugins
		// above still get end, to flush what they hold.
		return em.egressChunks(chunks, end && !em.failing)
	}
	for _, ch := range chunks {
		if em.res.conv == nil {
			em.write(dataLine(ch))
			continue
		}
		evs, err := em.res.conv.chunk(ch)
		if err != nil {
			return apierr.As(err)
		}
		for _, ev := range evs {
			em.write(ev.AppendSSE(nil))
		}
	}
	return nil
}

// adapt turns a batch of upstream events into unified chunks.
func (em *streamEmitter) adapt(batch []UpstreamEvent, end bool) ([]json.RawMessage, *apierr.Error) {
	res := em.res
	if res.passthrough {
		var out []json.RawMessage
		for _, ev := range batch {
			if len(ev.Data) > 0 && ev.Data[0] == '{' {
				out = append(out, ev.Data)
			}
		}
		return out, nil
	}
	if len(batch) == 0 && !end {
		return nil, nil
	}
	for _, ev := range batch {
		if malformedEvent(ev) {
			return nil, malformedStream(res)
		}
	}
	prev := res.state
	chunks, state, err := res.adapter.AdaptStream(em.ctx, prev, batch, end)
	if err != nil && len(batch) > 1 {
		// Content followed by an error in one burst: an adapter answers
		// the batch with the error alone. Go event by event from the same
		// state, so the content before the error still reaches the client
		// (openStreamEach does the same while the stream opens).
		chunks, state, err = em.adaptEach(prev, batch, end)
	}
	res.state = state
	if err != nil {
		return chunks, streamAdaptError(res, err).err
	}
	return chunks, nil
}

// adaptEach adapts batch one event at a time from state, stopping at the
// first error; it returns the chunks of the events before it.
func (em *streamEmitter) adaptEach(state []byte, batch []UpstreamEvent, end bool) ([]json.RawMessage, []byte, error) {
	var out []json.RawMessage
	for i, ev := range batch {
		chunks, next, err := em.res.adapter.AdaptStream(em.ctx, state, []UpstreamEvent{ev}, end && i == len(batch)-1)
		if err != nil {
			return append(out, chunks...), next, err
		}
		out, state = append(out, chunks...), next
	}
	return out, state, nil
}

// start writes what was read while opening the stream.
func (em *streamEmitter) start() *apierr.Error {
	res := em.res
	if em.transforms() {
		held := res.heldChunks
		if res.passthrough {
			held, _ = em.adapt(res.heldEvents, false)
		}
		if em.nativePass {
			for _, ev := range res.heldEvents {
				em.write(em.passLine(ev))
			}
		}
		return em.chunks(held, false)
	}
	for _, p := range res.pending {
		em.write(p)
	}
	return nil
}

// step reads the next batch of the upstream and writes it; it reports
// whether the stream goes on. *streamErr is set when it broke; *sawDone
// when a passed-through upstream sent its own [DONE].
func (em *streamEmitter) step(streamErr **apierr.Error, sawDone *bool) bool {
	res := em.res
	var batch []UpstreamEvent
	var err error
	if batch = res.unread; batch != nil {
		res.unread = nil
	} else {
		batch, err = readBatch(res.reader, em.s.o.StreamBatchMax)
	}
	end := errors.Is(err, io.EOF)
	if err != nil && !end {
		*streamErr = apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_stream_error",
			fmt.Sprintf("provider %q stream broke: %v", res.target.Provider, err))
	}
	if !em.transforms() && res.passthrough {
		for _, ev := range batch {
			if bytes.Equal(ev.Data, []byte(`"[DONE]"`)) {
				*sawDone = true
			} else if malformedEvent(ev) {
				*streamErr = malformedStream(res)
				break
			} else if errorEvent(ev) {
				ev.Data = res.redact(ev.Data)
			}
			em.write(sseLine(ev))
		}
	} else {
		chunks, aerr := em.adapt(batch, end || *streamErr != nil)
		if aerr != nil && *streamErr == nil {
			*streamErr = aerr
			em.passedErr = em.nativePass
		}
		if em.nativePass {
			for _, ev := range batch {
				if errorEvent(ev) {
					ev.Data = res.redact(ev.Data)
				}
				em.write(em.passLine(ev))
			}
		}
		em.failing = *streamErr != nil
		if cerr := em.chunks(chunks, end || *streamErr != nil); cerr != nil && *streamErr == nil {
			*streamErr = cerr
		}
	}
	return *streamErr == nil && !end
}

// finish ends the stream in the client's wire: an error event, the
// Responses API's terminal event, or data: [DONE].
func (em *streamEmitter) finish(streamErr *apierr.Error, sawDone bool) {
	conv := em.res.conv
	switch {
	case em.cl.eg != nil:
		// The native wire ends itself (message_stop, last data event)
		// on the end batch; an error becomes the wire's error event.
		if streamErr != nil && !em.passedErr && em.cl.eg.w.streamErrorData != nil {
			em.write(dataLine(em.cl.eg.w.streamErrorData(streamErr)))
		} else if streamErr != nil && !em.passedErr {
			_ = em.egressChunks([]json.RawMessage{mustJSON(map[string]any{"error": streamErr.Detail})}, true)
		}
	case streamErr != nil && conv != nil && conv.responses != nil:
		for _, ev := range conv.responses.Fail(streamErr.Detail.Code, streamErr.Detail.Message) {
			em.write(ev.AppendSSE(nil))
		}
	case streamErr != nil:
		em.write(dataLine(mustJSON(map[string]any{"error": streamErr})))
	case conv != nil && conv.responses != nil:
		for _, ev := range conv.responses.End() {
			em.write(ev.AppendSSE(nil))
		}
	case !sawDone || em.transforms():
		em.write([]byte("data: [DONE]\n\n"))
	}
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
	s.price(cl)
	if s.o.Recorder != nil {
		o := cl.out
		o.RequestBody = cl.p.body
		s.o.Recorder.Record(&o)
	}
	cl.settle()
}

// price sets the outcome's cost once, when its usage is final. A failed
// request that consumed no tokens costs nothing (providers do not bill
// rejected calls); one that streamed tokens before failing is priced.
func (s *Service) price(cl *call) CostBreakdown {
	if cl.priced {
		return cl.cost
	}
	cl.priced = true
	o := &cl.out
	if s.o.Pricer == nil {
		return cl.cost
	}
	if o.Err != nil && o.Usage.PromptTokens == 0 && o.Usage.CompletionTokens == 0 {
		o.Cost, o.CostKnown = 0, true
		return cl.cost
	}
	model := o.ResolvedModel
	if model == "" {
		model = o.Model
	}
	cl.cost, o.CostKnown = s.o.Pricer.Price(o.Provider, model, o.Usage)
	o.Cost = cl.cost.Total
	return cl.cost
}

// appendUSD writes a dollar amount rounded to 1e-10 USD, which hides
// float noise (0.30000000000000004) and is far below any real price.
func appendUSD(b []byte, v float64) []byte {
	return strconv.AppendFloat(b, math.Round(v*1e10)/1e10, 'f', -1, 64)
}

// appendExtraFields appends the gateway's report added to a successful
// response to b. It is written by hand: it runs on every request and
// encoding/json's reflection cost several microseconds here.
func (s *Service) appendExtraFields(b []byte, cl *call) []byte {
	lat := float64(s.now().Sub(cl.out.Start).Microseconds()) / 1000
	u := cl.out.Usage
	str := func(k, v string) {
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, `":`...)
		b = jsonx.AppendString(b, v)
		b = append(b, ',')
	}
	num := func(k string, v int64) {
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, v, 10)
	}
	b = append(b, '{')
	str("provider", cl.out.Provider)
	str("model_requested", cl.p.model)
	str("resolved_model_used", cl.out.ResolvedModel)
	str("request_type", cl.reqType)
	b = append(b, `"latency":`...)
	b = strconv.AppendFloat(b, lat, 'f', 3, 64)
	b = append(b, `,"routing_info":{`...)
	str("provider", cl.out.Provider)
	str("model", cl.out.ResolvedModel)
	str("key", cl.out.KeyID)
	b = append(b, `"is_fallback":`...)
	b = strconv.AppendBool(b, cl.out.IsFallback)
	b = append(b, ',')
	str("primary_provider", cl.primary.Provider)
	str("primary_model", cl.primary.Model)
	if !cl.routed {
		// A bare model requested no provider; primary_provider is the
		// one the virtual key chose.
		str("requested_provider", cl.primary.Provider)
	}
	str("requested_model", cl.primary.Model)
	b = b[:len(b)-1]
	b = append(b, `},"billed_usage":{`...)
	num("prompt_tokens", u.PromptTokens)
	b = append(b, ',')
	num("completion_tokens", u.CompletionTokens)
	b = append(b, ',')
	num("total_tokens", u.TotalTokens)
	// The details are parts of the totals (see Usage); text is the rest.
	b = append(b, `,"prompt_tokens_details":{`...)
	num("text_tokens", max(u.PromptTokens-u.CachedReadTokens-u.CachedWriteTokens-u.AudioInputTokens-u.ImageTokens, 0))
	b = append(b, ',')
	num("audio_tokens", u.AudioInputTokens)
	b = append(b, ',')
	num("image_tokens", u.ImageTokens)
	b = append(b, ',')
	num("cached_read_tokens", u.CachedReadTokens)
	b = append(b, ',')
	num("cached_write_tokens", u.CachedWriteTokens)
	b = append(b, `},"completion_tokens_details":{`...)
	num("text_tokens", max(u.CompletionTokens-u.ReasoningTokens-u.AudioOutputTokens, 0))
	b = append(b, ',')
	num("audio_tokens", u.AudioOutputTokens)
	b = append(b, ',')
	num("reasoning_tokens", u.ReasoningTokens)
	b = append(b, '}')
	if u.WebSearchRequests > 0 {
		b = append(b, `,"tool_usage":{"web_search":{`...)
		num("num_requests", u.WebSearchRequests)
		b = append(b, "}}"...)
	}
	// cost is left out when the model has no known price: a 0 would read
	// as free.
	if cost := s.price(cl); cl.out.CostKnown {
		b = append(b, `,"cost":{"input_tokens_cost":`...)
		b = appendUSD(b, cost.Input)
		b = append(b, `,"output_tokens_cost":`...)
		b = appendUSD(b, cost.Output)
		b = append(b, `,"reasoning_tokens_cost":`...)
		b = appendUSD(b, cost.Reasoning)
		b = append(b, `,"citation_tokens_cost":0,"search_queries_cost":`...)
		b = appendUSD(b, cost.Search)
		b = append(b, `,"request_cost":`...)
		b = appendUSD(b, cost.Request)
		b = append(b, `,"total_cost":`...)
		b = appendUSD(b, cost.Total)
		b = append(b, '}')
	}
	return append(b, "}}"...)
}

// injectExtraFields adds "extra_fields" as the last member of a JSON object
// without re-encoding the rest.
func injectExtraFields(doc, extra []byte) []byte {
	end, comma, ok := extraFieldsSplice(doc)
	if !ok {
		return doc
	}
	out := make([]byte, 0, len(doc)+len(extra)+20)
	out = append(out, doc[:end]...)
	if comma {
		out = append(out, ',')
	}
	out = append(out, `"extra_fields":`...)
	out = append(out, extra...)
	return append(out, doc[end:]...)
}

// extraFieldsSplice finds where "extra_fields" goes in doc: before the
// closing brace at end, after a comma when the object has members. ok is
// false when doc is not an object or already carries the member.
func extraFieldsSplice(doc []byte) (end int, comma, ok bool) {
	end = bytes.LastIndexByte(doc, '}')
	if end < 0 {
		return 0, false, false
	}
	if _, _, exists := jsonx.Field(doc, "extra_fields"); exists {
		return 0, false, false
	}
	trimmed := bytes.TrimSpace(doc[:end])
	return end, len(trimmed) > 0 && trimmed[len(trimmed)-1] != '{', true
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{}`)
	}
	return b
}

// respondShortCircuit answers with the unified response a pre_request
// plugin produced, without calling any provider (a cache hit, a canned
// refusal). A streaming client gets it as one content chunk.
func (s *Service) respondShortCircuit(c *fiber.Ctx, cl *call, resp []byte) error {
	if !json.Valid(resp) {
		e := apierr.New(http.StatusBadGateway, apierr.TypePlugin, "plugin_bad_output", "a plugin short-circuited with a response that is not JSON")
		s.finishError(cl, e)
		return e
	}
	cl.out.Provider = "plugin"
	cl.out.StatusCode = http.StatusOK
	cl.out.Latency = s.now().Sub(cl.out.Start)
	if u, ok := usageOf(resp); ok {
		cl.out.Usage = u
	}
	cl.out.ResponseBody = resp
	if cl.capture != nil {
		s.record(cl)
		*cl.capture = resp
		return nil
	}
	if !cl.p.stream {
		if cl.eg != nil {
			return s.sendNative(c, cl, resp)
		}
		s.record(cl)
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Status(http.StatusOK).Send(resp)
	}
	s.record(cl)
	var buf []byte
	chunks := shortCircuitChunks(resp)
	if cl.eg != nil {
		evs, _, err := cl.eg.codec.EgressStream(c.UserContext(), nil, chunks, true)
		if err != nil {
			return adapterError(cl.eg.codec, "egress_stream", err)
		}
		for _, ev := range evs {
			buf = append(buf, frameNative(cl.eg.w, ev)...)
		}
	} else {
		for _, ch := range chunks {
			buf = append(buf, dataLine(ch)...)
		}
		buf = append(buf, "data: [DONE]\n\n"...)
	}
	c.Set(fiber.HeaderContentType, streamContentType(cl))
	return c.Status(http.StatusOK).Send(buf)
}

// shortCircuitChunks replays a unified response as stream chunks: per
// choice its whole message, then its finish reason (with the usage).
func shortCircuitChunks(resp []byte) []json.RawMessage {
	var r struct {
		ID      string `json:"id"`
		Model   string `json:"model"`
		Created int64  `json:"created"`
		Choices []struct {
			Message      json.RawMessage `json:"message"`
			FinishReason string          `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
	}
	_ = json.Unmarshal(resp, &r)
	var out []json.RawMessage
	for i, ch := range r.Choices {
		out = append(out, mustJSON(map[string]any{"id": r.ID, "object": "chat.completion.chunk", "created": r.Created, "model": r.Model,
			"choices": []any{map[string]any{"index": i, "delta": ch.Message, "finish_reason": nil}}}))
		fin := map[string]any{"id": r.ID, "object": "chat.completion.chunk", "created": r.Created, "model": r.Model,
			"choices": []any{map[string]any{"index": i, "delta": map[string]any{}, "finish_reason": ch.FinishReason}}}
		if i == len(r.Choices)-1 && len(r.Usage) > 0 && r.Usage[0] == '{' {
			fin["usage"] = r.Usage
		}
		out = append(out, mustJSON(fin))
	}
	return out
}
