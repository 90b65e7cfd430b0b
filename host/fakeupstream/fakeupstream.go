// Package fakeupstream serves local fake model providers that speak each
// provider family's exact wire format (OpenAI, Anthropic, Gemini/Vertex,
// Bedrock, Cohere v2). Tests of the host, of adapters and the load benchmark
// (cmd/mockupstream) run against them instead of the internet.
//
// It is not under host/internal because cmd/mockupstream and provider
// adapter tests outside host/ import it; nothing in the gateway binary does.
//
// Replies are deterministic: the text is "hello from <family>" in three
// chunks, a request that offers tools gets a call of its first tool with
// arguments {"echo":"hello"} (ScriptChatTools scripts other tool calls for
// tool-loop tests), prompt tokens are ceil(len(body)/4), and
// completion tokens count the chunks. Behaviour knobs (failures, hangs,
// in-stream errors, per-chunk delay) are set through the Go API or per
// request with X-Fake-* headers; every request is recorded.
package fakeupstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmgate/gateway/host/upstreamauth"
)

// Family names a provider wire family.
type Family string

// The supported families.
const (
	OpenAI    Family = "openai"
	Anthropic Family = "anthropic"
	Gemini    Family = "gemini"
	Bedrock   Family = "bedrock"
	Cohere    Family = "cohere"
)

// Families lists every family, in a stable order.
var Families = []Family{OpenAI, Anthropic, Gemini, Bedrock, Cohere}

// Options configure a fake server.
type Options struct {
	// APIKey, when set, is the only key accepted (Bearer, x-api-key,
	// x-goog-api-key or ?key= per family). Empty accepts any non-empty key.
	APIKey string
	// BearerToken, when set, is the only token accepted on Vertex paths.
	BearerToken string
	// AWS, when set, makes the Bedrock fake verify SigV4 signatures with
	// these credentials; otherwise it checks only the header's shape.
	AWS *upstreamauth.AWSCredentials
	// ChunkDelay sleeps between stream chunks.
	ChunkDelay time.Duration
	// CachedTokens is reported as cached/cache-read input tokens.
	CachedTokens int
	// EmbeddingDims is the embedding size when the request does not say; default 8.
	EmbeddingDims int
}

// StreamError selects where a streaming reply carries an upstream error
// while the HTTP status stays 200.
type StreamError string

// In-stream error positions.
const (
	StreamErrorNone          StreamError = ""
	StreamErrorBeforeContent StreamError = "before"
	StreamErrorMidStream     StreamError = "mid"
	// StreamErrorAfterStart: the stream's opening without content, then
	// the error: Anthropic's message_start and a ping (the real API sends
	// overloaded_error once a stream has started), OpenAI's role-only
	// first chunk.
	StreamErrorAfterStart StreamError = "after_start"
)

// HangMode selects when a request stops making progress.
type HangMode string

// Hang modes.
const (
	HangNone HangMode = ""
	// HangBeforeHeaders never answers.
	HangBeforeHeaders HangMode = "headers"
	// HangMidStream sends the first chunk of a stream, then stalls.
	HangMidStream HangMode = "mid"
)

// Request headers that override the knobs for one request.
const (
	HeaderFail        = "X-Fake-Fail"         // status code, e.g. 429
	HeaderRetryAfter  = "X-Fake-Retry-After"  // seconds, with X-Fake-Fail
	HeaderHang        = "X-Fake-Hang"         // "headers" or "mid"
	HeaderStreamError = "X-Fake-Stream-Error" // "before", "mid" or "after_start"
	HeaderChunkDelay  = "X-Fake-Chunk-Delay"  // Go duration, e.g. 20ms
)

// Request is one recorded request.
type Request struct {
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     []byte
}

// Server is one fake provider. Its methods are safe for concurrent use.
type Server struct {
	family Family
	opts   Options
	mux    *http.ServeMux
	// URL is the base URL once started (no trailing slash).
	URL string
	ts  *httptest.Server

	closed    chan struct{}
	closeOnce sync.Once
	count     atomic.Int64
	cancelled atomic.Int64
	hanging   atomic.Int64

	mu          sync.Mutex
	requests    []Request
	failN       int
	failStatus  int
	retryAfter  string
	hangMode    HangMode
	streamError StreamError
	chunkDelay  time.Duration
	// script, when scripted, drives chat answers (ScriptChatTools).
	script    [][]ScriptedToolCall
	scripted  bool
	scriptPos int
}

// New builds a fake for family without listening; serve it with Start or
// mount it (it is an http.Handler).
func New(family Family, opts Options) *Server {
	if opts.EmbeddingDims <= 0 {
		opts.EmbeddingDims = 8
	}
	s := &Server{family: family, opts: opts, mux: http.NewServeMux(), closed: make(chan struct{}), chunkDelay: opts.ChunkDelay}
	switch family {
	case OpenAI:
		s.routesOpenAI()
	case Anthropic:
		s.routesAnthropic()
	case Gemini:
		s.routesGemini()
	case Bedrock:
		s.routesBedrock()
		s.routesBedrockInvoke()
	case Cohere:
		s.routesCohere()
	default:
		panic("fakeupstream: unknown family " + string(family))
	}
	return s
}

// TB is the part of testing.TB Start needs, so this package does not import
// testing into commands that use it.
type TB interface {
	Helper()
	Cleanup(func())
}

// Start starts a fake for family on 127.0.0.1 and closes it when the test ends.
func Start(tb TB, family Family, opts Options) *Server {
	tb.Helper()
	s := New(family, opts).Start()
	tb.Cleanup(s.Close)
	return s
}

// Start listens on a random 127.0.0.1 port (httptest) and sets URL.
func (s *Server) Start() *Server {
	s.ts = httptest.NewServer(s)
	s.URL = s.ts.URL
	return s
}

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client {
	if s.ts != nil {
		return s.ts.Client()
	}
	return http.DefaultClient
}

// Close releases hanging handlers and stops the listener if Start ran.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closed) })
	if s.ts != nil {
		s.ts.CloseClientConnections()
		s.ts.Close()
	}
}

// Family returns the server's family.
func (s *Server) Family() Family { return s.family }

// FailNext makes the next n requests fail with status; retryAfter, when
// non-empty, is sent as Retry-After (seconds).
func (s *Server) FailNext(n, status int, retryAfter string) {
	s.mu.Lock()
	s.failN, s.failStatus, s.retryAfter = n, status, retryAfter
	s.mu.Unlock()
}

// SetHang makes every following request hang in the given mode (HangNone
// stops it). A hanging request returns when the client goes away or the
// server closes.
func (s *Server) SetHang(m HangMode) { s.mu.Lock(); s.hangMode = m; s.mu.Unlock() }

// SetStreamError makes following streams carry an error inside a 200 reply.
func (s *Server) SetStreamError(e StreamError) { s.mu.Lock(); s.streamError = e; s.mu.Unlock() }

// SetChunkDelay sets the sleep between stream chunks.
func (s *Server) SetChunkDelay(d time.Duration) { s.mu.Lock(); s.chunkDelay = d; s.mu.Unlock() }

// Count is the number of requests received.
func (s *Server) Count() int64 { return s.count.Load() }

// Cancelled is the number of requests whose client went away while the
// server was hanging or streaming: proof that cancellation propagates.
func (s *Server) Cancelled() int64 { return s.cancelled.Load() }

// Hanging is the number of requests hanging right now.
func (s *Server) Hanging() int64 { return s.hanging.Load() }

// WaitCancelled waits until at least n requests saw their client disconnect.
func (s *Server) WaitCancelled(n int64, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if s.cancelled.Load() >= n {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return s.cancelled.Load() >= n
}

// Requests returns copies of the recorded requests.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// LastRequest returns the most recent request (zero Request if none).
func (s *Server) LastRequest() Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return Request{}
	}
	return s.requests[len(s.requests)-1]
}

// Reset forgets recorded requests and clears every knob.
func (s *Server) Reset() {
	s.mu.Lock()
	s.requests = nil
	s.failN, s.failStatus, s.retryAfter = 0, 0, ""
	s.hangMode, s.streamError, s.chunkDelay = HangNone, StreamErrorNone, s.opts.ChunkDelay
	s.script, s.scripted, s.scriptPos = nil, false, 0
	s.mu.Unlock()
	s.count.Store(0)
	s.cancelled.Store(0)
}

// maxRecorded bounds memory in long benchmark runs.
const maxRecorded = 10000

// fault is the behaviour resolved for one request.
type fault struct {
	failStatus  int
	retryAfter  string
	hang        HangMode
	streamError StreamError
	chunkDelay  time.Duration
}

// call is one request in flight.
type call struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	body []byte
	in   map[string]any
	f    fault
}

// ServeHTTP records the request, applies the knobs and dispatches.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.count.Add(1)
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	if len(s.requests) < maxRecorded {
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	}
	f := fault{hang: s.hangMode, streamError: s.streamError, chunkDelay: s.chunkDelay}
	if s.failN > 0 {
		s.failN--
		f.failStatus, f.retryAfter = s.failStatus, s.retryAfter
	}
	s.mu.Unlock()
	if v := r.Header.Get(HeaderFail); v != "" {
		f.failStatus, _ = strconv.Atoi(v)
		f.retryAfter = r.Header.Get(HeaderRetryAfter)
	}
	if v := r.Header.Get(HeaderHang); v != "" {
		f.hang = HangMode(v)
	}
	if v := r.Header.Get(HeaderStreamError); v != "" {
		f.streamError = StreamError(v)
	}
	if v := r.Header.Get(HeaderChunkDelay); v != "" {
		f.chunkDelay, _ = time.ParseDuration(v)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	c := &call{s: s, w: w, r: r, body: body, f: f}
	r = r.WithContext(context.WithValue(r.Context(), callKey{}, c))
	s.mux.ServeHTTP(w, r)
}

type callKey struct{}

// handle wraps a family handler: decode JSON, check auth, apply failure and
// hang knobs, then run h.
func (s *Server) handle(auth func(*call) (int, string), h func(*call)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := r.Context().Value(callKey{}).(*call)
		c.r = r
		if len(c.body) > 0 {
			if err := json.Unmarshal(c.body, &c.in); err != nil {
				s.writeError(c, http.StatusBadRequest, "invalid JSON body: "+err.Error())
				return
			}
		}
		if c.in == nil {
			c.in = map[string]any{}
		}
		if auth != nil {
			if status, msg := auth(c); status != 0 {
				s.writeError(c, status, msg)
				return
			}
		}
		if c.f.failStatus != 0 {
			if c.f.retryAfter != "" {
				w.Header().Set("Retry-After", c.f.retryAfter)
			}
			s.writeError(c, c.f.failStatus, fmt.Sprintf("fake failure with status %d", c.f.failStatus))
			return
		}
		if c.f.hang == HangBeforeHeaders {
			c.hang()
			return
		}
		h(c)
	}
}

// hang blocks until the client leaves (counted) or the server closes.
func (c *call) hang() {
	c.s.hanging.Add(1)
	defer c.s.hanging.Add(-1)
	select {
	case <-c.r.Context().Done():
		c.s.cancelled.Add(1)
	case <-c.s.closed:
	}
}

// writeJSON writes a JSON reply.
func (c *call) writeJSON(status int, v any) {
	c.w.Header().Set("Content-Type", "application/json")
	c.w.WriteHeader(status)
	json.NewEncoder(c.w).Encode(v)
}

// stream writes chunks with flushing, the per-chunk delay and cancellation
// accounting.
type stream struct {
	c     *call
	fl    http.Flusher
	sent  int
	alive bool
}

func (c *call) startStream(contentType string) *stream {
	c.w.Header().Set("Content-Type", contentType)
	c.w.Header().Set("Cache-Control", "no-cache")
	c.w.WriteHeader(http.StatusOK)
	fl, _ := c.w.(http.Flusher)
	if fl != nil {
		fl.Flush()
	}
	return &stream{c: c, fl: fl, alive: true}
}

// write sends one chunk; false means the client left and the handler should
// return.
func (st *stream) write(b []byte) bool {
	if !st.alive {
		return false
	}
	ctx := st.c.r.Context()
	if st.sent > 0 {
		if st.sent == 1 && st.c.f.hang == HangMidStream {
			st.c.hang()
			st.alive = false
			return false
		}
		if d := st.c.f.chunkDelay; d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				st.c.s.cancelled.Add(1)
				st.alive = false
				return false
			}
		}
	}
	if _, err := st.c.w.Write(b); err != nil || ctx.Err() != nil {
		st.c.s.cancelled.Add(1)
		st.alive = false
		return false
	}
	if st.fl != nil {
		st.fl.Flush()
	}
	st.sent++
	return true
}

// sse writes one SSE event; an empty name writes a data-only event.
func (st *stream) sse(event string, v any) bool {
	var b bytes.Buffer
	if event != "" {
		b.WriteString("event: " + event + "\n")
	}
	b.WriteString("data: ")
	switch x := v.(type) {
	case string:
		b.WriteString(x)
	case []byte:
		b.Write(x)
	default:
		j, _ := json.Marshal(v)
		b.Write(j)
	}
	b.WriteString("\n\n")
	return st.write(b.Bytes())
}
