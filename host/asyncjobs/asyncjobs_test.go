package asyncjobs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/wasmgate/gateway/host/asyncjobs"
	"github.com/wasmgate/gateway/host/fakeupstream"
	"github.com/wasmgate/gateway/host/inference"
	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/server"
	"github.com/wasmgate/gateway/host/webhooks"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// openAIWire is a Go adapter for the OpenAI wire that lets the host pass
// bytes through, as the bundled wasm adapter does.
type openAIWire struct{}

func (openAIWire) Name() string         { return "test-openai" }
func (openAIWire) Passthrough() bool    { return true }
func (openAIWire) Supports(string) bool { return true }
func (openAIWire) AdaptRequest(_ context.Context, in *inference.AdaptRequestInput) (*inference.UpstreamRequest, error) {
	body, _ := jsonx.SetStringField(in.Body, "model", in.Model)
	path := map[string]string{inference.TypeChat: "/chat/completions", inference.TypeEmbedding: "/embeddings",
		inference.TypeCompletion: "/completions", inference.TypeResponses: "/responses"}[in.RequestType]
	return &inference.UpstreamRequest{Method: http.MethodPost, Path: path, Body: body, Stream: in.Stream}, nil
}
func (openAIWire) AdaptResponse(_ context.Context, in *inference.AdaptResponseInput) ([]byte, error) {
	return in.Body, nil
}
func (openAIWire) AdaptStream(_ context.Context, state []byte, events []inference.UpstreamEvent, _ bool) ([]json.RawMessage, []byte, error) {
	var out []json.RawMessage
	for _, ev := range events {
		if !bytes.HasPrefix(ev.Data, []byte(`"`)) {
			out = append(out, ev.Data)
		}
	}
	return out, state, nil
}

// clock is an injectable clock; it follows real time until frozen.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.offset += d; c.mu.Unlock() }

// gateway starts a test gateway whose openai provider points at a fake
// upstream, with an injectable clock.
func gateway(t testing.TB, cfg string) (*testgw.Gateway, *fakeupstream.Server, *clock) {
	t.Helper()
	up := fakeupstream.Start(t, fakeupstream.OpenAI, fakeupstream.Options{APIKey: "sk-up"})
	clk := &clock{}
	src := inference.AdapterFunc(func(family string) (inference.Adapter, bool) {
		if family == "openai" {
			return openAIWire{}, true
		}
		return nil, false
	})
	g := testgw.Start(t, testgw.Options{ConfigYAML: cfg,
		ServerOptions: []server.Option{server.WithAdapters(src), server.WithClock(clk.Now)}})
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "openai",
		"network_config": map[string]any{"base_url": up.URL + "/v1", "max_retries": 1, "retry_backoff_initial_ms": 10, "retry_backoff_max_ms": 20}})
	g.Expect(201, "POST", "/api/providers/openai/keys", map[string]any{"name": "k", "value": "sk-up"})
	return g, up, clk
}

const chatBody = `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`

// virtualKey creates a governance virtual key (unknown sk-gw- keys are
// refused at submit) and returns its value.
func virtualKey(t testing.TB, g *testgw.Gateway, name string) string {
	t.Helper()
	var out struct {
		VirtualKey struct{ Value string } `json:"virtual_key"`
	}
	g.Expect(201, "POST", "/api/governance/virtual-keys", map[string]any{"name": name}).Decode(t, &out)
	return out.VirtualKey.Value
}

func withHeader(k, v string) func(*http.Request) { return func(r *http.Request) { r.Header.Set(k, v) } }

// submit posts a job and returns its submit answer.
func submit(t testing.TB, g *testgw.Gateway, seg, body string, mods ...func(*http.Request)) asyncjobs.View {
	t.Helper()
	r := g.Do("POST", "/v1/async/"+seg, body, mods...)
	if r.Status != 202 {
		t.Fatalf("submit %s: %d %s", seg, r.Status, r.Body)
	}
	var v asyncjobs.View
	r.Decode(t, &v)
	return v
}

// poll fetches a job until it is terminal.
func poll(t testing.TB, g *testgw.Gateway, url string, within time.Duration, mods ...func(*http.Request)) asyncjobs.View {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := g.Do("GET", url, nil, mods...)
		if r.Status != 200 {
			t.Fatalf("poll %s: %d %s", url, r.Status, r.Body)
		}
		var v asyncjobs.View
		r.Decode(t, &v)
		if v.Status == asyncjobs.StateCompleted || v.Status == asyncjobs.StateFailed {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s after %s", url, v.Status, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// volatile removes fields that differ between two runs of one request.
func volatile(t testing.TB, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	delete(m, "id")
	delete(m, "created")
	delete(m, "created_at")
	if ef, ok := m["extra_fields"].(map[string]any); ok {
		delete(ef, "latency")
	}
	return m
}

func TestSubmitPollEveryType(t *testing.T) {
	g, up, _ := gateway(t, "")
	cases := []struct{ seg, sync, body string }{
		{"chat/completions", "/v1/chat/completions", chatBody},
		{"completions", "/v1/completions", `{"model":"openai/gpt-3.5-turbo-instruct","prompt":"hi"}`},
		{"responses", "/v1/responses", `{"model":"openai/gpt-4o-mini","input":"hi"}`},
		{"embeddings", "/v1/embeddings", `{"model":"openai/text-embedding-3-small","input":"hi"}`},
	}
	for _, c := range cases {
		t.Run(c.seg, func(t *testing.T) {
			r := g.Do("POST", "/v1/async/"+c.seg, c.body)
			if r.Status != 202 {
				t.Fatalf("submit: %d %s", r.Status, r.Body)
			}
			m := r.Map(t)
			id, _ := m["id"].(string)
			if m["object"] != "async_job" || !strings.HasPrefix(id, "job_") || m["result_url"] != "/v1/async/"+c.seg+"/"+id ||
				m["result_expires_at"] != nil || m["created_at"] == nil || m["request_type"] == "" {
				t.Fatalf("submit answer: %s", r.Body)
			}
			if st := m["status"]; st != "queued" && st != "running" {
				t.Fatalf("status %v", st)
			}
			if r.Header.Get("Location") != m["result_url"] {
				t.Fatalf("Location %q", r.Header.Get("Location"))
			}
			v := poll(t, g, m["result_url"].(string), 10*time.Second)
			if v.Status != "completed" || v.StatusCode != 200 || v.ResultExpiresAt == nil || len(v.Error) != 0 {
				t.Fatalf("job: %+v", v)
			}
			sync := g.Expect(200, "POST", c.sync, c.body)
			got, want := volatile(t, v.Result), volatile(t, sync.Body)
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(want)
			if !bytes.Equal(gb, wb) {
				t.Fatalf("async result differs from the sync answer:\nasync %s\nsync  %s", gb, wb)
			}
		})
	}
	_ = up
}

func TestStreamIsForcedOff(t *testing.T) {
	g, up, _ := gateway(t, "")
	v := submit(t, g, "chat/completions", `{"model":"openai/gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
	v = poll(t, g, v.ResultURL, 10*time.Second)
	if v.Status != "completed" || !bytes.Contains(v.Result, []byte(`"choices"`)) {
		t.Fatalf("job: %+v %s", v, v.Result)
	}
	body := up.LastRequest().Body
	if bytes.Contains(body, []byte(`"stream":true`)) || bytes.Contains(body, []byte("stream_options")) {
		t.Fatalf("upstream got a stream request: %s", body)
	}
}

func TestFailedJobCarriesEnvelope(t *testing.T) {
	g, up, _ := gateway(t, "")
	up.FailNext(1, 400, "")
	v := poll(t, g, submit(t, g, "chat/completions", chatBody).ResultURL, 10*time.Second)
	if v.Status != "failed" || v.StatusCode != 400 || len(v.Result) != 0 {
		t.Fatalf("job: %+v", v)
	}
	var env struct {
		StatusCode int `json:"status_code"`
		Error      struct{ Code string }
	}
	if err := json.Unmarshal(v.Error, &env); err != nil || env.StatusCode != 400 || env.Error.Code != "upstream_error" {
		t.Fatalf("error envelope: %s (%v)", v.Error, err)
	}
	// A request the pipeline refuses fails the same way the sync route does.
	v = poll(t, g, submit(t, g, "chat/completions", `{"model":"nope/x"}`).ResultURL, 10*time.Second)
	if v.Status != "failed" || v.StatusCode != 400 || !bytes.Contains(v.Error, []byte("unknown_provider")) {
		t.Fatalf("job: %+v %s", v, v.Error)
	}
}

func TestSubmitValidation(t *testing.T) {
	g, _, _ := gateway(t, "")
	testgw.WantEnvelope(t, g.Do("POST", "/v1/async/chat/completions", `not json`), 400, "invalid_json")
	testgw.WantEnvelope(t, g.Do("POST", "/v1/async/chat/completions", ``), 400, "empty_body")
	testgw.WantEnvelope(t, g.Do("POST", "/v1/async/chat/completions", `{"messages":[]}`), 400, "missing_field")
}

func TestCredentialBinding(t *testing.T) {
	g, _, _ := gateway(t, "")
	keyA, keyB := virtualKey(t, g, "a"), virtualKey(t, g, "b")
	vkA, vkB := withHeader("x-gw-vk", keyA), withHeader("x-gw-vk", keyB)
	v := submit(t, g, "chat/completions", chatBody, vkA)
	poll(t, g, v.ResultURL, 10*time.Second, vkA)
	// The same key in the bearer header is the same credential.
	if r := g.Do("GET", v.ResultURL, nil, withHeader("Authorization", "Bearer "+keyA)); r.Status != 200 {
		t.Fatalf("same key as bearer: %d %s", r.Status, r.Body)
	}
	for name, mod := range map[string]func(*http.Request){
		"other vk": vkB, "anonymous": func(*http.Request) {}, "other api key": withHeader("x-api-key", "sk-x"),
	} {
		r := g.Do("GET", v.ResultURL, nil, mod)
		if r.Status != 404 {
			t.Fatalf("%s read the job: %d %s", name, r.Status, r.Body)
		}
		testgw.WantEnvelope(t, r, 404, asyncjobs.CodeJobNotFound)
	}
	// Anonymous jobs bind to anonymous callers only.
	an := submit(t, g, "chat/completions", chatBody)
	poll(t, g, an.ResultURL, 10*time.Second)
	testgw.WantEnvelope(t, g.Do("GET", an.ResultURL, nil, vkA), 404, asyncjobs.CodeJobNotFound)
	// Unknown ids and a known id under another type's path are 404 too.
	testgw.WantEnvelope(t, g.Do("GET", "/v1/async/chat/completions/job_nope", nil), 404, asyncjobs.CodeJobNotFound)
	testgw.WantEnvelope(t, g.Do("GET", "/v1/async/embeddings/"+an.ID, nil), 404, asyncjobs.CodeJobNotFound)
}

func TestExpiryAndPrune(t *testing.T) {
	g, _, clk := gateway(t, "async:\n  result_ttl: 10m\n  prune_grace: 1m\n  tombstone_ttl: 1h\n")
	v := poll(t, g, submit(t, g, "chat/completions", chatBody).ResultURL, 10*time.Second)
	if got := v.ResultExpiresAt.Sub(*v.CompletedAt); got != 10*time.Minute {
		t.Fatalf("result_expires_at - completed_at = %s, want 10m", got)
	}
	clk.advance(9 * time.Minute)
	g.Expect(200, "GET", v.ResultURL, nil)
	clk.advance(2 * time.Minute)
	testgw.WantEnvelope(t, g.Do("GET", v.ResultURL, nil), 410, asyncjobs.CodeResultExpired)
	// The pruner drops the result once the grace has passed, keeping a
	// tombstone that still answers 410 ...
	svc := g.Server.Async()
	if st, err := svc.Prune(context.Background()); err != nil || st.Results != 1 || st.Tombstones != 0 {
		t.Fatalf("prune: %+v %v", st, err)
	}
	testgw.WantEnvelope(t, g.Do("GET", v.ResultURL, nil), 410, asyncjobs.CodeResultExpired)
	// ... until the tombstone's time is up: then the id is unknown.
	clk.advance(time.Hour)
	if st, err := svc.Prune(context.Background()); err != nil || st.Tombstones != 1 {
		t.Fatalf("prune tombstones: %+v %v", st, err)
	}
	testgw.WantEnvelope(t, g.Do("GET", v.ResultURL, nil), 404, asyncjobs.CodeJobNotFound)
}

func TestPruneInBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("submits 600 jobs")
	}
	g, _, clk := gateway(t, "async:\n  result_ttl: 1m\n  prune_grace: 0s\n")
	var urls []string
	for i := 0; i < 600; i++ {
		urls = append(urls, submit(t, g, "embeddings", `{"model":"openai/e","input":"x"}`).ResultURL)
	}
	for _, u := range urls {
		poll(t, g, u, 30*time.Second)
	}
	clk.advance(2 * time.Minute)
	st, err := g.Server.Async().Prune(context.Background())
	if err != nil || st.Results != 600 {
		t.Fatalf("prune: %+v %v", st, err)
	}
}

// receiver records deliveries, verifies their signatures and dedupes on
// webhook-id like a well-behaved consumer.
type receiver struct {
	srv    *httptest.Server
	secret string
	mu     sync.Mutex
	seen   map[string]int // webhook-id -> deliveries received
	bodies map[string]webhooks.EventBody
	firsts map[string]time.Time
	bad    []string
}

func newReceiver(t testing.TB) *receiver {
	rc := &receiver{seen: map[string]int{}, bodies: map[string]webhooks.EventBody{}, firsts: map[string]time.Time{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		wh, err := standardwebhooks.NewWebhook(rc.secret)
		if err == nil {
			err = wh.Verify(body, r.Header)
		}
		if err != nil {
			rc.bad = append(rc.bad, err.Error())
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		id := r.Header.Get("webhook-id")
		rc.seen[id]++
		if rc.seen[id] == 1 {
			var ev webhooks.EventBody
			_ = json.Unmarshal(body, &ev)
			rc.bodies[id], rc.firsts[id] = ev, time.Now()
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// byJob returns the first delivery body per job id and how many distinct
// deliveries each job got.
func (rc *receiver) byJob() (map[string]webhooks.EventBody, map[string]int, []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	bodies, counts := map[string]webhooks.EventBody{}, map[string]int{}
	for _, ev := range rc.bodies {
		bodies[ev.Data.JobID] = ev
		counts[ev.Data.JobID]++
	}
	return bodies, counts, append([]string(nil), rc.bad...)
}

func (rc *receiver) waitJobs(t testing.TB, n int, within time.Duration) map[string]webhooks.EventBody {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		bodies, _, bad := rc.byJob()
		if len(bad) > 0 {
			t.Fatalf("signature verification failed: %v", bad)
		}
		if len(bodies) >= n {
			return bodies
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiver got deliveries for %d jobs, want %d", len(bodies), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func createEndpoint(t testing.TB, g *testgw.Gateway, rc *receiver, name string, extra map[string]any) string {
	t.Helper()
	body := map[string]any{"name": name, "url": rc.srv.URL, "allow_private_network": true,
		"events": []string{webhooks.EventJobCompleted, webhooks.EventJobFailed}}
	for k, v := range extra {
		body[k] = v
	}
	r := g.Do("POST", "/api/webhooks", body)
	if r.Status != 201 {
		t.Fatalf("create endpoint: %d %s", r.Status, r.Body)
	}
	m := r.Map(t)
	rc.mu.Lock()
	rc.secret = m["secret"].(string)
	rc.mu.Unlock()
	return m["id"].(string)
}

func TestWebhookHeader(t *testing.T) {
	g, up, _ := gateway(t, "")
	rc := newReceiver(t)
	createEndpoint(t, g, rc, "hook", map[string]any{"include_response": true})
	r := g.Do("POST", "/api/webhooks", map[string]any{"name": "off", "url": rc.srv.URL, "allow_private_network": true,
		"events": []string{webhooks.EventJobCompleted}, "disabled": true})
	if r.Status != 201 {
		t.Fatalf("create disabled: %d %s", r.Status, r.Body)
	}
	testgw.WantEnvelope(t, g.Do("POST", "/v1/async/chat/completions", chatBody, withHeader("x-gw-async-webhook", "nope")),
		400, asyncjobs.CodeWebhookNotFound)
	testgw.WantEnvelope(t, g.Do("POST", "/v1/async/chat/completions", chatBody, withHeader("x-gw-async-webhook", "off")),
		400, asyncjobs.CodeWebhookDisabled)

	hook := withHeader("x-gw-async-webhook", "hook")
	ok := submit(t, g, "chat/completions", chatBody, hook)
	okView := poll(t, g, ok.ResultURL, 10*time.Second)
	up.FailNext(1, 400, "")
	bad := submit(t, g, "chat/completions", chatBody, hook)
	badView := poll(t, g, bad.ResultURL, 10*time.Second)
	none := poll(t, g, submit(t, g, "chat/completions", chatBody).ResultURL, 10*time.Second)

	got := rc.waitJobs(t, 2, 15*time.Second)
	ev := got[ok.ID]
	if ev.Event != webhooks.EventJobCompleted || ev.Data.Status != "completed" || ev.Data.StatusCode != 200 ||
		ev.Data.ResultURL != ok.ResultURL || ev.Data.RequestType != inference.TypeChat ||
		!ev.Data.ResultExpiresAt.Equal(*okView.ResultExpiresAt) || !bytes.Equal(ev.Data.Response, okView.Result) {
		t.Fatalf("completed delivery: %+v", ev)
	}
	ev = got[bad.ID]
	if ev.Event != webhooks.EventJobFailed || ev.Data.Status != "failed" || ev.Data.StatusCode != 400 || !bytes.Equal(ev.Data.Error, badView.Error) {
		t.Fatalf("failed delivery: %+v", ev)
	}
	if okView.WebhookDeliveryID == "" || okView.Webhook != "hook" {
		t.Fatalf("job does not name its delivery: %+v", okView)
	}
	if _, ok := got[none.ID]; ok || none.WebhookDeliveryID != "" {
		t.Fatal("a job without x-gw-async-webhook was delivered")
	}
	if d := g.Expect(200, "GET", "/api/webhooks/deliveries/"+okView.WebhookDeliveryID, nil).Map(t); d["state"] != "delivered" {
		t.Fatalf("delivery record: %v", d)
	}
}

func TestWebhookDisabledAtCompletion(t *testing.T) {
	g, up, _ := gateway(t, "")
	rc := newReceiver(t)
	id := createEndpoint(t, g, rc, "hook", nil)
	up.SetHang(fakeupstream.HangBeforeHeaders)
	v := submit(t, g, "chat/completions", chatBody, withHeader("x-gw-async-webhook", "hook"))
	waitFor(t, func() bool { return up.Hanging() == 1 })
	g.Expect(200, "PUT", "/api/webhooks/"+id, map[string]any{"name": "hook", "url": rc.srv.URL, "allow_private_network": true,
		"events": []string{webhooks.EventJobCompleted}, "disabled": true})
	up.SetHang(fakeupstream.HangNone)
	up.Close() // releases the hanging request; its retry fails: the job fails
	v = poll(t, g, v.ResultURL, 15*time.Second)
	if v.WebhookDeliveryID != "" || !strings.Contains(v.WebhookSkipped, "disabled") {
		t.Fatalf("job on a disabled endpoint: %+v", v)
	}
	if d := g.Expect(200, "GET", "/api/webhooks/"+id+"/deliveries", nil).Map(t); d["count"] != float64(0) {
		t.Fatalf("deliveries: %v", d)
	}
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestJobSurvivesRestart(t *testing.T) {
	g, up, _ := gateway(t, "")
	rc := newReceiver(t)
	createEndpoint(t, g, rc, "hook", nil)
	up.SetHang(fakeupstream.HangBeforeHeaders)
	vk := withHeader("x-gw-vk", virtualKey(t, g, "restart"))
	running := submit(t, g, "chat/completions", chatBody, vk, withHeader("x-gw-async-webhook", "hook"))
	waitFor(t, func() bool { return up.Hanging() == 1 })
	r := g.Do("GET", running.ResultURL, nil, vk)
	if st := r.Map(t)["status"]; st != "running" {
		t.Fatalf("status while the upstream hangs: %v", st)
	}
	up.SetHang(fakeupstream.HangNone)
	g = g.Restart("")
	v := poll(t, g, running.ResultURL, 15*time.Second, vk)
	if v.Status != "completed" || v.Attempts != 2 {
		t.Fatalf("after restart: %+v", v)
	}
	// The credential binding survived the restart too.
	testgw.WantEnvelope(t, g.Do("GET", running.ResultURL, nil), 404, asyncjobs.CodeJobNotFound)
	rc.waitJobs(t, 1, 15*time.Second)
}

func TestInterruptedTooOftenFails(t *testing.T) {
	g, up, _ := gateway(t, "async:\n  max_attempts: 1\n")
	up.SetHang(fakeupstream.HangBeforeHeaders)
	v := submit(t, g, "chat/completions", chatBody)
	waitFor(t, func() bool { return up.Hanging() == 1 })
	up.SetHang(fakeupstream.HangNone)
	g = g.Restart("")
	v = poll(t, g, v.ResultURL, 15*time.Second)
	if v.Status != "failed" || v.StatusCode != 503 || !bytes.Contains(v.Error, []byte("async_job_interrupted")) {
		t.Fatalf("job interrupted past max_attempts: %+v %s", v, v.Error)
	}
}

func TestJobTimeout(t *testing.T) {
	g, up, _ := gateway(t, "async:\n  job_timeout: 1s\n")
	up.SetHang(fakeupstream.HangBeforeHeaders)
	v := poll(t, g, submit(t, g, "chat/completions", chatBody).ResultURL, 15*time.Second)
	if v.Status != "failed" || v.StatusCode != 504 || !bytes.Contains(v.Error, []byte("async_job_timeout")) {
		t.Fatalf("job over its timeout: %+v %s", v, v.Error)
	}
}

// TestLoadJobsWithWebhooks submits 1,000 jobs with a webhook and checks the
// receiver, deduping on webhook-id, saw every job exactly once. The figures
// go to BENCHMARKS.md ("Async jobs and webhooks").
func TestLoadJobsWithWebhooks(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	const n = 1000
	g, _, _ := gateway(t, "async:\n  workers: 8\n")
	rc := newReceiver(t)
	createEndpoint(t, g, rc, "hook", map[string]any{"max_concurrent_deliveries": 16})
	hook := withHeader("x-gw-async-webhook", "hook")
	start := time.Now()
	submitted := map[string]time.Time{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				r := g.Do("POST", "/v1/async/chat/completions", chatBody, hook)
				var v asyncjobs.View
				if r.Status != 202 || json.Unmarshal(r.Body, &v) != nil {
					t.Errorf("submit: %d %s", r.Status, r.Body)
					continue
				}
				mu.Lock()
				submitted[v.ID] = time.Now()
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	submitDur := time.Since(start)
	got := rc.waitJobs(t, n, 3*time.Minute)
	total := time.Since(start)
	_, counts, bad := rc.byJob()
	if len(bad) > 0 {
		t.Fatalf("bad signatures: %v", bad[:1])
	}
	for id := range submitted {
		if _, ok := got[id]; !ok {
			t.Fatalf("job %s never delivered", id)
		}
		if counts[id] != 1 {
			t.Fatalf("job %s delivered under %d webhook-ids", id, counts[id])
		}
	}
	var lat []time.Duration
	rc.mu.Lock()
	dupes := 0
	for id, first := range rc.firsts {
		lat = append(lat, first.Sub(submitted[rc.bodies[id].Data.JobID]))
		dupes += rc.seen[id] - 1
	}
	rc.mu.Unlock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	t.Logf("async load: %d jobs, submit %.0f jobs/s, end-to-end %.0f jobs/s (%s), submit->delivery p50 %s p99 %s, redelivered duplicates %d",
		n, float64(n)/submitDur.Seconds(), float64(n)/total.Seconds(), total.Round(time.Millisecond),
		pct(0.50).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), dupes)
}

// TestBacklogCap: once async.max_backlog jobs are unfinished (queued or
// running) a submit is refused with 429 and Retry-After, and accepted
// again as soon as jobs finish.
func TestBacklogCap(t *testing.T) {
	g, up, _ := gateway(t, "async:\n  workers: 1\n  max_backlog: 3\n  job_timeout: 1s\n")
	up.SetHang(fakeupstream.HangBeforeHeaders) // the one worker holds its job
	var urls []string
	for range 3 {
		urls = append(urls, submit(t, g, "chat/completions", chatBody).ResultURL)
	}
	r := g.Do("POST", "/v1/async/chat/completions", chatBody)
	e := testgw.WantEnvelope(t, r, 429, asyncjobs.CodeBacklogFull)
	if r.Header.Get("Retry-After") == "" || !strings.Contains(e["error"].(map[string]any)["message"].(string), "async.max_backlog") {
		t.Fatalf("429 without Retry-After or without naming the setting: %v %s", r.Header, r.Body)
	}
	metrics := string(g.Expect(200, "GET", "/metrics", nil).Body)
	for _, want := range []string{"wasmgate_async_backlog 3\n", "wasmgate_async_backlog_limit 3\n", "wasmgate_async_submits_refused_total{reason=\"backlog_full\"} 1\n"} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("/metrics lacks %q", want)
		}
	}
	up.Reset()
	for _, u := range urls {
		poll(t, g, u, 15*time.Second)
	}
	// Every accepted job ran; the room they held is free again.
	waitFor(t, func() bool { return g.Do("POST", "/v1/async/chat/completions", chatBody).Status == 202 })
	waitFor(t, func() bool {
		return strings.Contains(string(g.Expect(200, "GET", "/metrics", nil).Body), "wasmgate_async_backlog 0\n")
	})
}

// TestBacklogPerCredential: async.max_backlog_per_credential keeps one
// caller from taking the whole backlog, other callers still get in, and a
// restart counts each caller's unfinished jobs again from the store.
func TestBacklogPerCredential(t *testing.T) {
	g, up, _ := gateway(t, "async:\n  workers: 1\n  max_backlog: 10\n  max_backlog_per_credential: 2\n  job_timeout: 3s\n")
	up.SetHang(fakeupstream.HangBeforeHeaders)
	a := withHeader("x-gw-vk", virtualKey(t, g, "a"))
	b := withHeader("x-gw-vk", virtualKey(t, g, "b"))
	urls := []string{submit(t, g, "chat/completions", chatBody, a).ResultURL, submit(t, g, "chat/completions", chatBody, a).ResultURL}
	full := func(g *testgw.Gateway) {
		t.Helper()
		e := testgw.WantEnvelope(t, g.Do("POST", "/v1/async/chat/completions", chatBody, a), 429, asyncjobs.CodeBacklogFull)
		if msg := e["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "async.max_backlog_per_credential") {
			t.Fatalf("429 does not name the per-credential cap: %s", msg)
		}
	}
	full(g)
	urls = append(urls, submit(t, g, "chat/completions", chatBody, b).ResultURL)

	// Within the job timeout a's jobs are still unfinished after a restart.
	g = g.Restart("")
	full(g)
	if m := string(g.Expect(200, "GET", "/metrics", nil).Body); !strings.Contains(m, "wasmgate_async_backlog 3\n") {
		t.Fatal("the restarted gateway does not count the three recovered jobs")
	}
	up.Reset()
	for _, u := range urls[:2] {
		poll(t, g, u, 20*time.Second, a)
	}
	poll(t, g, urls[2], 20*time.Second, b)
	submit(t, g, "chat/completions", chatBody, a)
}
