package inference_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/fakeupstream"
	"github.com/wasmgate/gateway/host/inference"
	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/host/server"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// The tests here drive requests down every failure and cancellation path
// of the pipeline at once, then check that each left nothing behind: every
// provider's concurrency slots free (Service.InFlight) and the goroutine
// count back to what it was before. A slot or a pooled upstream response
// that is not given back, an upstream connection left open or a request
// goroutine stuck on a silent upstream all show there.

// scriptedUpstream is a fake provider whose behaviour each request picks by
// the model it names: the fake's X-Fake-* knobs, set here because the
// gateway passes no client header upstream, so every scenario runs at the
// same time on one server. Models it does not know get the fake's answer.
type scriptedUpstream struct {
	fake     *fakeupstream.Server
	srv      *httptest.Server
	closed   chan struct{}
	stopOnce sync.Once
	mu       sync.Mutex
	seen     map[string]int
}

func newScriptedUpstream(t *testing.T, family fakeupstream.Family) *scriptedUpstream {
	u := &scriptedUpstream{fake: fakeupstream.New(family, fakeupstream.Options{}), closed: make(chan struct{}), seen: map[string]int{}}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(func() {
		u.release()
		u.srv.CloseClientConnections()
		u.srv.Close()
	})
	return u
}

// release ends every stalled answer. A gateway that failed to give up on
// one is still waiting for it when its test ends: this runs before the
// gateway is shut down, which waits for its requests.
func (u *scriptedUpstream) release() {
	u.stopOnce.Do(func() {
		close(u.closed)
		u.fake.Close() // releases its hanging handlers
	})
}

func (u *scriptedUpstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	raw, _ := jsonx.StringField(body, "model")
	model := string(raw)
	u.mu.Lock()
	u.seen[model]++
	u.mu.Unlock()
	h := r.Header
	switch model {
	case "fail-500":
		h.Set(fakeupstream.HeaderFail, "500")
	case "fail-429":
		h.Set(fakeupstream.HeaderFail, "429")
		h.Set(fakeupstream.HeaderRetryAfter, "0")
	case "error-before-content":
		h.Set(fakeupstream.HeaderStreamError, string(fakeupstream.StreamErrorBeforeContent))
	case "error-mid-stream":
		h.Set(fakeupstream.HeaderStreamError, string(fakeupstream.StreamErrorMidStream))
	case "hang-before-headers", "hang-client-leaves":
		h.Set(fakeupstream.HeaderHang, string(fakeupstream.HangBeforeHeaders))
	case "stall-before-content":
		// Headers and a role-only chunk, then nothing.
		h.Set(fakeupstream.HeaderHang, string(fakeupstream.HangMidStream))
	case "stall-after-headers":
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		u.wait(r)
		return
	case "slow", "slow-client-leaves":
		h.Set(fakeupstream.HeaderChunkDelay, "30ms")
	case "slow-holder":
		h.Set(fakeupstream.HeaderChunkDelay, "150ms")
	case "error-body-stall":
		// A failure status whose body never ends.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":{"message":"overloaded`)
		w.(http.Flusher).Flush()
		u.wait(r)
		return
	case "pii-content":
		// An answer a pii guardrail in block mode refuses.
		const text = "write to someone@example.com"
		if stream, _ := jsonx.BoolField(body, "stream"); stream {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, d := range []string{`{"role":"assistant","content":""}`, `{"content":"` + text + `"}`} {
				fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", d)
			}
			io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, text)
		return
	}
	u.fake.ServeHTTP(w, r)
}

// wait blocks until the gateway leaves or the test ends.
func (u *scriptedUpstream) wait(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-u.closed:
	}
}

// arrived is how many requests named model so far.
func (u *scriptedUpstream) arrived(model string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.seen[model]
}

// ctlAdapter is an OpenAI-wire Go adapter that fails on request: the model
// names the failure ("fail-adapt-request", "fail-adapt-response", an error
// or a panic of the first or second adapt_stream call). The model reaches
// adapt_stream as the request's context, the stream's first state. An
// upstream error event is mapped to a rejection, as the bundled adapters
// map theirs.
type ctlAdapter struct{ passthrough bool }

func (a *ctlAdapter) Name() string         { return "test-ctl" }
func (a *ctlAdapter) Passthrough() bool    { return a.passthrough }
func (a *ctlAdapter) Supports(string) bool { return true }

func (a *ctlAdapter) AdaptRequest(_ context.Context, in *inference.AdaptRequestInput) (*inference.UpstreamRequest, error) {
	if in.Model == "fail-adapt-request" {
		return nil, errors.New("adapt_request failed on purpose")
	}
	body, _ := jsonx.SetStringField(in.Body, "model", in.Model)
	return &inference.UpstreamRequest{Method: http.MethodPost, Path: "/chat/completions", Body: body, Stream: in.Stream,
		Context: in.Model}, nil
}

func (a *ctlAdapter) AdaptResponse(_ context.Context, in *inference.AdaptResponseInput) ([]byte, error) {
	if in.Model == "fail-adapt-response" {
		return nil, errors.New("adapt_response failed on purpose")
	}
	return in.Body, nil
}

func (a *ctlAdapter) AdaptStream(_ context.Context, state []byte, events []inference.UpstreamEvent, end bool) ([]json.RawMessage, []byte, error) {
	model, calls, _ := strings.Cut(string(state), "#")
	calls += "x"
	switch {
	case model == "fail-stream-open", model == "fail-stream-mid" && len(calls) == 2:
		return nil, nil, errors.New("adapt_stream failed on purpose")
	case model == "panic-stream-open", model == "panic-stream-mid" && len(calls) == 2:
		panic("adapt_stream panicked on purpose")
	}
	var out []json.RawMessage
	for _, ev := range events {
		if bytes.HasPrefix(ev.Data, []byte(`{"error"`)) {
			return out, nil, &plugins.Error{Plugin: a.Name(), Hook: "adapt_stream", Kind: plugins.KindRejected, Code: 502, Message: "upstream error event"}
		}
		if !bytes.HasPrefix(ev.Data, []byte(`"`)) { // [DONE] is quoted
			out = append(out, ev.Data)
		}
	}
	return out, []byte(model + "#" + calls), nil
}

// leakRig is a gateway served on a real listener whose providers all have
// a concurrency limit, behind one scripted upstream. Every setting comes
// in a pair: a provider on the fast path (fasthttp) and one on net/http.
type leakRig struct {
	t      *testing.T
	g      *testgw.Gateway
	url    string
	up     *scriptedUpstream
	tr     *http.Transport
	client *http.Client
}

// rigPath is one upstream client's set of providers.
type rigPath struct {
	client string
	// main retries twice; backup is a fallback; once does not retry, for
	// timeouts; narrow has one slot.
	main, backup, once, narrow string
}

var rigPaths = []rigPath{
	{"fasthttp", "openai", "groq", "xai", "together"},
	{"net/http", "mistral", "deepseek", "fireworks", "nebius"},
}

func newLeakRig(t *testing.T, o testgw.Options, passthrough bool) *leakRig {
	t.Helper()
	r := &leakRig{t: t, up: newScriptedUpstream(t, fakeupstream.OpenAI)}
	o.ServerOptions = append(o.ServerOptions, server.WithAdapters(source(&ctlAdapter{passthrough: passthrough})))
	r.g = testgw.Start(t, o)
	t.Cleanup(r.up.release) // before the gateway's shutdown (cleanups run last first)
	for _, p := range rigPaths {
		client := "auto"
		if p.client == "net/http" {
			client = "net_http"
		}
		for _, pr := range []struct {
			name                 string
			retries, concurrency int
		}{{p.main, 2, 64}, {p.backup, 2, 64}, {p.once, 0, 64}, {p.narrow, 0, 1}} {
			r.addProvider(pr.name, r.up.srv.URL+"/v1", client, pr.retries, pr.concurrency)
		}
	}
	r.url = r.g.Listen()
	r.tr = &http.Transport{MaxIdleConnsPerHost: 64}
	r.client = &http.Client{Transport: r.tr}
	t.Cleanup(r.tr.CloseIdleConnections)
	return r
}

func (r *leakRig) addProvider(name, baseURL, client string, retries, concurrency int) {
	r.g.Expect(201, "POST", "/api/providers", map[string]any{"name": name,
		"network_config": map[string]any{"base_url": baseURL, "http_client": client, "max_retries": retries,
			"retry_backoff_initial_ms": 1, "retry_backoff_max_ms": 5, "default_request_timeout_in_seconds": 1},
		"concurrency_and_buffer_size": map[string]any{"concurrency": concurrency, "buffer_size": 64}})
	r.g.Expect(201, "POST", "/api/providers/"+name+"/keys", map[string]any{"name": "k", "value": "sk-" + name})
}

// send posts body to path and reads the whole answer; leave, when set,
// reads only the first bytes and hangs up.
func (r *leakRig) send(ctx context.Context, path, body string, header map[string]string, leave bool) (int, string, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", r.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if leave {
		n, _ := resp.Body.Read(make([]byte, 16))
		return resp.StatusCode, fmt.Sprintf("%d bytes", n), nil
	}
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// scenario is one kind of request, sent n times at once.
type scenario struct {
	name   string
	path   string // default /v1/chat/completions
	body   string
	header map[string]string
	// leave hangs up after the first bytes; cancel, when set, is closed to
	// hang up earlier (its requests' errors are expected).
	leave  bool
	cancel <-chan struct{}
	// want checks the answer; nil accepts any, a broken stream included.
	want func(status int, body string) error
}

// run sends every scenario's requests concurrently and waits for all the
// answers.
func (r *leakRig) run(n int, scenarios []scenario) {
	r.t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for _, sc := range scenarios {
		path := sc.path
		if path == "" {
			path = "/v1/chat/completions"
		}
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A client gives up at some point: a request stuck in the
				// gateway fails its scenario rather than the whole run. It
				// is generous: under the race detector, loading a wasm
				// adapter on first use alone takes seconds.
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if sc.cancel != nil {
					go func() {
						select {
						case <-sc.cancel:
							cancel()
						case <-ctx.Done():
						}
					}()
				}
				st, body, err := r.send(ctx, path, sc.body, sc.header, sc.leave)
				if sc.want == nil || sc.cancel != nil {
					return
				}
				if err == nil {
					err = sc.want(st, body)
				}
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s: %v", sc.name, err))
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	for _, f := range failures {
		r.t.Error(f)
	}
}

// status accepts the statuses given whose body contains every string.
func status(codes []int, contains ...string) func(int, string) error {
	return func(st int, body string) error {
		ok := false
		for _, c := range codes {
			ok = ok || st == c
		}
		if !ok {
			return fmt.Errorf("status %d, want one of %v: %.400s", st, codes, body)
		}
		for _, c := range contains {
			if !strings.Contains(body, c) {
				return fmt.Errorf("answer lacks %q: %.400s", c, body)
			}
		}
		return nil
	}
}

func is(code int, contains ...string) func(int, string) error {
	return status([]int{code}, contains...)
}

// endsInError adds to want that an Anthropic stream's last event is its
// error event and that it never closed normally.
func endsInError(want func(int, string) error) func(int, string) error {
	return func(code int, body string) error {
		if err := want(code, body); err != nil {
			return err
		}
		if strings.Contains(body, "message_stop") {
			return fmt.Errorf("a failed stream closed normally (message_stop): %s", body)
		}
		events := strings.Split(strings.TrimSpace(body), "\n\n")
		if last := events[len(events)-1]; !strings.HasPrefix(last, "event: error") {
			return fmt.Errorf("the stream's last event is not its error event: %q", last)
		}
		return nil
	}
}

// quiesce closes idle connections on every side: a pooled connection has
// goroutines of its own (the upstream's handler, net/http's read and write
// loops), which are no request's.
func (r *leakRig) quiesce() {
	r.tr.CloseIdleConnections()
	_ = r.g.Server.Inference().Close() // closes idle upstream connections; the service stays usable
}

// baseline is the goroutine count at rest once every pool the scenarios
// use exists: one request of each kind on every provider, and the extra
// requests given (which load what other routes need: an adapter plugin
// has goroutines of its own).
func (r *leakRig) baseline(extra ...scenario) int {
	r.t.Helper()
	warm := extra
	for _, p := range rigPaths {
		for _, name := range []string{p.main, p.backup, p.once, p.narrow} {
			for _, stream := range []bool{false, true} {
				warm = append(warm, scenario{name: "warm-up " + name, body: chat(name+"/gpt-4o-mini", stream, ""), want: is(200, "hello")})
			}
		}
	}
	r.run(1, warm)
	base := 0
	for range 3 {
		r.quiesce()
		time.Sleep(30 * time.Millisecond)
		base = max(base, goroutines())
	}
	return base
}

// settle waits until no provider slot is taken and the goroutines are back
// to base, and fails the test with the goroutines' stacks if that does not
// happen within the deadline. Requests whose client left may still be
// running (until their upstream timeout): the wait covers them.
func (r *leakRig) settle(base int, within time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for {
		r.quiesce()
		inflight := r.g.Server.Inference().InFlight()
		busy := false
		for _, n := range inflight {
			busy = busy || n != 0
		}
		n := goroutines()
		if !busy && n <= base {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("after %s: slots in flight %v, %d goroutines (%d at rest before); those in the gateway's request path:\n%s",
				within, inflight, n, base, requestGoroutines())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// requestGoroutines are the stacks of the goroutines in the inference
// pipeline or an upstream handler.
func requestGoroutines() string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "/host/inference.") || strings.Contains(g, "/host/fakeupstream.") || strings.Contains(g, "scriptedUpstream") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// goroutines counts the process's goroutines but those idling in a pool
// whose size follows past load rather than requests in flight: fasthttp's
// server workers waiting for a connection and its clients' connection
// cleaners. A goroutine a request left behind (blocked on an upstream, a
// slot or a connection) is counted.
func goroutines() int {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		if len(lines) < 2 {
			continue
		}
		if strings.HasPrefix(lines[1], "github.com/valyala/fasthttp.(*workerPool).workerFunc(") ||
			strings.Contains(g, "fasthttp.(*HostClient).connsCleaner(") || strings.Contains(g, "fasthttp.(*Client).mCleaner(") {
			continue
		}
		n++
	}
	return n
}

// pipelineScenarios are the /v1 failure and cancellation paths on one
// upstream client's providers. gone is closed once the requests whose
// client leaves before the answer started reached the upstream.
func pipelineScenarios(p rigPath, passthrough bool, gone <-chan struct{}) []scenario {
	var out []scenario
	m := func(provider, model string) string { return provider + "/" + model }
	fallback := fmt.Sprintf(`,"fallbacks":[%q]`, m(p.backup, "gpt-4o-mini"))
	for _, stream := range []bool{false, true} {
		add := func(name, model, extra string, want func(int, string) error) {
			out = append(out, scenario{name: fmt.Sprintf("%s %s stream=%t", p.client, name, stream), body: chat(model, stream, extra), want: want})
		}
		add("5xx, retries exhausted", m(p.main, "fail-500"), "", is(500, "upstream_error"))
		add("429, retries exhausted", m(p.main, "fail-429"), "", is(429, "upstream_error"))
		add("5xx, then a fallback", m(p.main, "fail-500"), fallback, is(200, "hello"))
		add("answer timeout", m(p.once, "hang-before-headers"), "", is(504))
		add("answer timeout, then a fallback", m(p.once, "hang-before-headers"), fallback, is(200, "hello"))
		add("failure status, body never ends", m(p.once, "error-body-stall"), "", status([]int{500, 502, 504}))
		add("client gone before the answer", m(p.once, "hang-client-leaves"), "", nil)
		out[len(out)-1].cancel = gone
		if stream {
			add("error event before content, then a fallback", m(p.main, "error-before-content"), fallback, is(200, "hello"))
			add("error event before content", m(p.main, "error-before-content"), "", is(502))
			add("error event mid-stream", m(p.main, "error-mid-stream"), "", is(200, "hello", `"error"`))
			add("nothing after the headers", m(p.once, "stall-after-headers"), "", is(504, "no content within"))
			add("nothing after the headers, then a fallback", m(p.once, "stall-after-headers"), fallback, is(200, "hello"))
			if passthrough {
				// A translating adapter's role-only chunk opens the
				// stream (the client gets it): a stall after it is a
				// stall mid-stream, which nothing bounds (see "Client
				// disconnect" in docs/inference.md).
				add("no content within the timeout", m(p.once, "stall-before-content"), "", is(504, "no content within"))
				add("no content within the timeout, then a fallback", m(p.once, "stall-before-content"), fallback, is(200, "hello"))
			}
			add("client gone mid-stream", m(p.main, "slow-client-leaves"), "", nil)
			out[len(out)-1].leave = true
		}
		if !passthrough {
			add("adapt_request fails", m(p.main, "fail-adapt-request"), "", is(502, "adapt_request"))
			if stream {
				add("adapt_stream fails at the open", m(p.main, "fail-stream-open"), "", is(502, "adapt_stream"))
				add("adapt_stream fails mid-stream", m(p.main, "fail-stream-mid"), "", is(200, "adapt_stream"))
				add("adapt_stream panics at the open", m(p.main, "panic-stream-open"), "", is(500))
				add("adapt_stream panics mid-stream", m(p.main, "panic-stream-mid"), "", nil)
			} else {
				add("adapt_response fails", m(p.main, "fail-adapt-response"), "", is(502, "adapt_response"))
			}
		}
	}
	return out
}

// slotWaiters holds narrow's only slot with a slow stream while requests
// queue behind it, and hangs up on those. The holder's answer is checked.
func (r *leakRig) slotWaiters(p rigPath, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		holder := make(chan error, 1)
		go func() {
			st, body, err := r.send(context.Background(), "/v1/chat/completions", chat(p.narrow+"/slow-holder", true, ""), nil, false)
			if err == nil {
				err = is(200, "[DONE]")(st, body)
			}
			holder <- err
		}()
		for r.up.arrived("slow-holder") == 0 || r.g.Server.Inference().InFlight()[p.narrow] == 0 {
			time.Sleep(2 * time.Millisecond)
		}
		leave := make(chan struct{})
		go func() {
			time.Sleep(50 * time.Millisecond) // while they wait for the slot
			close(leave)
		}()
		r.run(3, []scenario{{name: p.client + " client gone while waiting for a slot", body: chat(p.narrow+"/gpt-4o-mini", false, ""), cancel: leave}})
		if err := <-holder; err != nil {
			r.t.Errorf("%s: the stream holding the slot: %v", p.client, err)
		}
	}()
}

// TestFailurePathsGiveBackSlotsAndGoroutines drives every failure and
// cancellation path of the /v1 pipeline on both upstream clients, with a
// passthrough and a translating adapter, and checks that nothing stays
// behind: no provider slot taken, no goroutine more than at rest.
func TestFailurePathsGiveBackSlotsAndGoroutines(t *testing.T) {
	for _, pt := range []bool{true, false} {
		t.Run(fmt.Sprintf("passthrough=%t", pt), func(t *testing.T) {
			r := newLeakRig(t, testgw.Options{}, pt)
			base := r.baseline()
			const n = 3
			// The clients leave once all their requests reach the upstream
			// (stream or not, on each path), or after a second whatever.
			gone := make(chan struct{})
			go func() {
				defer close(gone)
				for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
					if r.up.arrived("hang-client-leaves") >= n*2*len(rigPaths) {
						return
					}
				}
			}()
			var all []scenario
			var wg sync.WaitGroup
			for _, p := range rigPaths {
				all = append(all, pipelineScenarios(p, pt, gone)...)
				r.slotWaiters(p, &wg)
			}
			r.run(n, all)
			wg.Wait()
			r.settle(base, 5*time.Second)
		})
	}
}

// slotsFree fails the test unless every provider's slots are free.
func (r *leakRig) slotsFree() {
	r.t.Helper()
	for name, n := range r.g.Server.Inference().InFlight() {
		if n != 0 {
			r.t.Errorf("provider %s: %d slots still taken", name, n)
		}
	}
}

// TestAdapterPanicOpeningAStreamGivesBackItsSlot: an adapter hook that
// panics while the stream is opened is answered 500 by the server's
// recoverer; the exchange must still end there: its slot back (a provider
// with one slot keeps serving) and its upstream connection closed.
func TestAdapterPanicOpeningAStreamGivesBackItsSlot(t *testing.T) {
	r := newLeakRig(t, testgw.Options{}, false)
	for _, p := range rigPaths {
		st, body, err := r.send(context.Background(), "/v1/chat/completions", chat(p.narrow+"/panic-stream-open", true, ""), nil, false)
		if err != nil || st != 500 {
			t.Fatalf("%s: panicking adapter: %d %s %v", p.client, st, body, err)
		}
		r.slotsFree()
		st, body, err = r.send(context.Background(), "/v1/chat/completions", chat(p.narrow+"/gpt-4o-mini", true, ""), nil, false)
		if err != nil || st != 200 {
			t.Fatalf("%s: the next request on the provider's only slot: %d %.300s %v", p.client, st, body, err)
		}
	}
}

// TestStreamOpeningIsBoundedByTheAnswerTimeout: nothing reaches the client
// of a stream before its first content, so the answer timeout runs until
// then. An upstream that answers 200 and then stays silent (after its
// headers, or after a role-only chunk), or fails with a body that never
// ends, fails the attempt in time (504, retryable: a fallback answers);
// it used to hold the request, its slot and its upstream connection for
// as long as the upstream kept the connection open.
func TestStreamOpeningIsBoundedByTheAnswerTimeout(t *testing.T) {
	r := newLeakRig(t, testgw.Options{}, true)
	var wg sync.WaitGroup
	for _, p := range rigPaths {
		for _, c := range []struct {
			model, extra string
			want         func(int, string) error
		}{
			{"stall-after-headers", "", is(504, "no content within 1s")},
			{"stall-before-content", "", is(504, "no content within 1s")},
			{"stall-after-headers", fmt.Sprintf(`,"fallbacks":["%s/gpt-4o-mini"]`, p.backup), is(200, "hello")},
			{"error-body-stall", "", is(500, "overloaded")},
		} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				st, body, err := r.send(ctx, "/v1/chat/completions", chat(p.once+"/"+c.model, true, c.extra), nil, false)
				if err == nil {
					err = c.want(st, body)
				}
				if took := time.Since(start); err != nil || took > 3*time.Second {
					t.Errorf("%s %s%s: after %s: %v", p.client, c.model, c.extra, took.Round(time.Millisecond), err)
				}
			}()
		}
	}
	wg.Wait()
	r.slotsFree()
}

// TestPluginAndDropInPathsGiveBackSlotsAndGoroutines is the same check
// for request plugins that refuse (pre_request, post_response and
// stream_batch of the bundled pii guardrail in block mode) and for the
// drop-in routes, whose requests share the pipeline: an Anthropic client
// reaching an OpenAI-wire provider through the bundled Anthropic adapter's
// ingress and egress hooks, or the Anthropic provider itself.
func TestPluginAndDropInPathsGiveBackSlotsAndGoroutines(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{"pii.wasm": "../../plugins/pii", "adapter-anthropic.wasm": "../../providers-wasm/anthropic"} {
		raw, err := os.ReadFile(plugintest.BuildWasm(t, src))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const piiBlock = "plugins:\n  - name: pii\n    source: pii\n    config: {action: block, types: [email]}\n"
	for _, withPII := range []bool{false, true} {
		t.Run(fmt.Sprintf("pii=%t", withPII), func(t *testing.T) {
			o := testgw.Options{Env: []string{"GATEWAY_PLUGINS_DIR=" + dir}}
			if withPII {
				o.ConfigYAML = piiBlock
			}
			r := newLeakRig(t, o, false)
			anthropic := newScriptedUpstream(t, fakeupstream.Anthropic)
			t.Cleanup(anthropic.release)
			r.addProvider("anthropic", anthropic.srv.URL+"/v1", "auto", 2, 64)
			messages := func(model string, stream bool, content string) string {
				return fmt.Sprintf(`{"model":%q,"max_tokens":20,"stream":%t,"messages":[{"role":"user","content":%q}]}`, model, stream, content)
			}
			const am = "/anthropic/v1/messages"
			var warm []scenario
			for _, stream := range []bool{false, true} {
				for _, model := range []string{"claude-3-5-haiku", "openai/gpt-4o-mini"} {
					warm = append(warm, scenario{name: "warm-up " + model, path: am, body: messages(model, stream, "hi"), want: is(200, "hello")})
				}
			}
			base := r.baseline(warm...)
			var all []scenario
			add := func(name, path, body string, header map[string]string, want func(int, string) error) {
				all = append(all, scenario{name: name, path: path, body: body, header: header, want: want})
			}
			fallback := func(model string) map[string]string { return map[string]string{inference.HeaderFallbacks: model} }
			for _, stream := range []bool{false, true} {
				sfx := fmt.Sprintf(" stream=%t", stream)
				add("anthropic drop-in to openai"+sfx, am, messages("openai/gpt-4o-mini", stream, "hi"), nil, is(200, "hello"))
				add("anthropic drop-in to openai, 5xx"+sfx, am, messages("openai/fail-500", stream, "hi"), nil, is(500))
				add("anthropic drop-in to openai, 5xx, then a fallback"+sfx, am, messages("openai/fail-500", stream, "hi"), fallback("anthropic/claude-3-5-haiku"), is(200, "hello"))
				add("anthropic drop-in, 5xx, then a fallback"+sfx, am, messages("fail-500", stream, "hi"), fallback("openai/gpt-4o-mini"), is(200, "hello"))
				add("openai drop-in, 5xx, then a fallback"+sfx, "/openai/v1/chat/completions", chat("fail-500", stream, ""), fallback("groq/gpt-4o-mini"), is(200, "hello"))
				if stream {
					add("anthropic drop-in, error event before content, then a fallback", am, messages("error-before-content", true, "hi"), fallback("openai/gpt-4o-mini"), is(200, "hello"))
					add("anthropic drop-in, error event mid-stream", am, messages("error-mid-stream", true, "hi"), nil, is(200, "hello", "error"))
					// Through a translating adapter a failure mid-stream
					// ends the Anthropic stream with its error event, never
					// with a normal message_stop the client would stop at.
					add("anthropic drop-in to openai, error event mid-stream", am, messages("openai/error-mid-stream", true, "hi"), nil, endsInError(is(200, "hello")))
					add("anthropic drop-in to openai, adapt_stream fails mid-stream", am, messages("openai/fail-stream-mid", true, "hi"), nil, is(200, "message_start"))
					add("openai drop-in, error event mid-stream", "/openai/v1/chat/completions", chat("error-mid-stream", true, ""), nil, is(200, "hello", "error"))
					for _, model := range []string{"slow-client-leaves", "openai/slow-client-leaves"} {
						all = append(all, scenario{name: "anthropic drop-in, client gone mid-stream " + model, path: am, body: messages(model, true, "hi"), leave: true})
					}
				}
				if withPII {
					const email = "write to someone@example.com"
					for _, p := range rigPaths {
						add(p.client+" pre_request refuses"+sfx, "", fmt.Sprintf(`{"model":%q,"stream":%t,"messages":[{"role":"user","content":%q}]}`, p.main+"/gpt-4o-mini", stream, email), nil, is(400, "pii"))
						if stream {
							add(p.client+" stream_batch refuses", "", chat(p.main+"/pii-content", true, ""), nil, is(200, "pii"))
						} else {
							add(p.client+" post_response refuses", "", chat(p.main+"/pii-content", false, ""), nil, is(400, "pii"))
						}
					}
					add("anthropic drop-in, pre_request refuses"+sfx, am, messages("openai/gpt-4o-mini", stream, email), nil, is(400, "pii"))
					if stream {
						add("anthropic drop-in, stream_batch refuses", am, messages("openai/pii-content", true, "hi"), nil, is(200, "pii"))
					} else {
						add("anthropic drop-in, post_response refuses", am, messages("openai/pii-content", false, "hi"), nil, is(400, "pii"))
					}
				}
			}
			r.run(3, all)
			r.settle(base, 5*time.Second)
		})
	}
}
