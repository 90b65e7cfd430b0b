package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/wasmgate/gateway/host/config"
	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/server"
	"github.com/wasmgate/gateway/host/webhooks"
)

// hit is one request a receiver got.
type hit struct {
	at     time.Time
	header http.Header
	body   []byte
}

// receiver is a real HTTP server on 127.0.0.1 that records deliveries and
// answers with respond (200 when nil).
type receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	hits    []hit
	respond func(n int, w http.ResponseWriter, r *http.Request)
}

func newReceiver(t *testing.T, respond func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{respond: respond}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.hits = append(rc.hits, hit{at: time.Now(), header: r.Header.Clone(), body: body})
	n := len(rc.hits)
	rc.mu.Unlock()
	if rc.respond != nil {
		rc.respond(n, w, r)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.hits)
}

// wait returns once the receiver has at least n hits.
func (rc *receiver) wait(t *testing.T, n int, within time.Duration) []hit {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		rc.mu.Lock()
		if len(rc.hits) >= n {
			out := append([]hit(nil), rc.hits...)
			rc.mu.Unlock()
			return out
		}
		rc.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("receiver got %d requests, want %d within %s", rc.count(), n, within)
	return nil
}

// endpointBody is a create body for a local receiver with fast retries.
func endpointBody(name, url string, extra map[string]any) map[string]any {
	m := map[string]any{
		"name": name, "url": url, "events": []string{webhooks.EventJobCompleted, webhooks.EventJobFailed},
		"allow_private_network": true, "retry_backoff_initial_seconds": 1, "retry_backoff_max_seconds": 4,
		"attempt_timeout_seconds": 2,
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func create(t *testing.T, g *testgw.Gateway, body map[string]any) (id, secret string) {
	t.Helper()
	r := g.Do("POST", "/api/webhooks", body)
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	m := r.JSON(t)
	return m["id"].(string), m["secret"].(string)
}

func sendTest(t *testing.T, g *testgw.Gateway, id, event string) string {
	t.Helper()
	r := g.Do("POST", "/api/webhooks/"+id+"/test", map[string]any{"event": event})
	if r.Status != 202 {
		t.Fatalf("test delivery: %d %s", r.Status, r.Body)
	}
	return r.JSON(t)["delivery_id"].(string)
}

// waitDelivery polls a delivery until done says so.
func waitDelivery(t *testing.T, g *testgw.Gateway, id string, within time.Duration, done func(webhooks.Delivery) bool) webhooks.Delivery {
	t.Helper()
	deadline := time.Now().Add(within)
	var d webhooks.Delivery
	for time.Now().Before(deadline) {
		r := g.Do("GET", "/api/webhooks/deliveries/"+id, nil)
		if r.Status != 200 {
			t.Fatalf("get delivery: %d %s", r.Status, r.Body)
		}
		d = webhooks.Delivery{}
		if err := json.Unmarshal(r.Body, &d); err != nil {
			t.Fatal(err)
		}
		if done(d) {
			return d
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("delivery %s did not reach the expected state within %s: %+v", id, within, d)
	return d
}

func finished(d webhooks.Delivery) bool {
	return d.State == webhooks.StateDelivered || d.State == webhooks.StateFailed || d.State == webhooks.StateSkipped
}

func goVerify(secret string, h hit) error {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return err
	}
	return wh.Verify(h.body, h.header)
}

// jsVerify checks each (secret, delivery) pair with the npm standardwebhooks
// package and returns one error (nil for verified) per pair.
func jsVerify(t *testing.T, secrets []string, hits []hit) []error {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: skipping the npm standardwebhooks cross-check")
	}
	dir, _ := filepath.Abs("testdata/verifier")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "standardwebhooks")); err != nil {
		t.Fatalf("npm verifier not installed: run `npm ci --prefix host/webhooks/testdata/verifier` (%v)", err)
	}
	type jsCase struct {
		Secret  string            `json:"secret"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	cases := make([]jsCase, len(hits))
	for i, h := range hits {
		hs := map[string]string{}
		for k := range h.header {
			hs[strings.ToLower(k)] = h.header.Get(k)
		}
		cases[i] = jsCase{Secret: secrets[i], Headers: hs, Body: string(h.body)}
	}
	raw, _ := json.Marshal(cases)
	file := filepath.Join(t.TempDir(), "cases.json")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(node, filepath.Join(dir, "verify.js"), file).Output()
	if err != nil {
		t.Fatalf("node verify.js: %v", err)
	}
	var res []struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(hits) {
		t.Fatalf("node verify.js output %q: %v", out, err)
	}
	errs := make([]error, len(res))
	for i, r := range res {
		if !r.OK {
			errs[i] = errors.New(r.Error)
		}
	}
	return errs
}

// TestSignedDeliveryAndRotation: deliveries verify with the official Go and
// npm Standard Webhooks libraries, carry the documented headers and body,
// and a rotation takes effect at once (old secret fails, new passes).
func TestSignedDeliveryAndRotation(t *testing.T) {
	t.Setenv("WH_TEST_TOKEN", "resolved-at-send-time")
	g := testgw.New(t)
	rc := newReceiver(t, nil)
	id, secret1 := create(t, g, endpointBody("signed", rc.srv.URL+"/hook", map[string]any{
		"headers":          map[string]any{"X-Tenant": "acme-corp-tenant-identifier", "Authorization": "env.WH_TEST_TOKEN"},
		"include_response": true,
	}))
	if !strings.HasPrefix(secret1, "whsec_") || len(secret1) != len("whsec_")+44 {
		t.Fatalf("secret format: %q", secret1)
	}

	d1 := sendTest(t, g, id, webhooks.EventJobCompleted)
	h1 := rc.wait(t, 1, 5*time.Second)[0]
	if err := goVerify(secret1, h1); err != nil {
		t.Fatalf("Go library rejects the delivery: %v", err)
	}
	for k, want := range map[string]string{
		"webhook-id": d1, "content-type": "application/json", "user-agent": "wasmgate-webhooks/1",
		"x-tenant": "acme-corp-tenant-identifier", "authorization": "resolved-at-send-time",
	} {
		if got := h1.header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if sig := h1.header.Get("webhook-signature"); !strings.HasPrefix(sig, "v1,") {
		t.Errorf("signature %q", sig)
	}
	var body map[string]any
	if err := json.Unmarshal(h1.body, &body); err != nil {
		t.Fatal(err)
	}
	data, _ := body["data"].(map[string]any)
	if body["event"] != webhooks.EventJobCompleted || body["created_at"] == nil || data["status"] != "completed" ||
		data["status_code"] != float64(200) || !strings.HasPrefix(data["result_url"].(string), "/v1/async/chat/completions/") ||
		data["job_id"] == nil || data["result_expires_at"] == nil || data["response"] == nil {
		t.Fatalf("body: %s", h1.body)
	}
	waitDelivery(t, g, d1, 5*time.Second, func(d webhooks.Delivery) bool { return d.State == webhooks.StateDelivered })

	// Rotate: the new secret is returned once and used at once.
	r := g.Do("POST", "/api/webhooks/"+id+"/rotate-secret", nil)
	if r.Status != 200 {
		t.Fatalf("rotate: %d %s", r.Status, r.Body)
	}
	secret2 := r.JSON(t)["secret"].(string)
	if secret2 == secret1 || !strings.HasPrefix(secret2, "whsec_") {
		t.Fatalf("rotated secret %q", secret2)
	}
	sendTest(t, g, id, webhooks.EventJobFailed)
	h2 := rc.wait(t, 2, 5*time.Second)[1]
	if err := goVerify(secret2, h2); err != nil {
		t.Fatalf("Go library rejects the new secret: %v", err)
	}
	if err := goVerify(secret1, h2); err == nil {
		t.Fatal("the old secret still verifies after rotation")
	}
	var fb map[string]any
	_ = json.Unmarshal(h2.body, &fb)
	if fd := fb["data"].(map[string]any); fb["event"] != webhooks.EventJobFailed || fd["error"] == nil || fd["response"] != nil {
		t.Fatalf("failed body: %s", h2.body)
	}

	errs := jsVerify(t, []string{secret1, secret2, secret1, secret2}, []hit{h1, h2, h2, h1})
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("npm standardwebhooks rejects valid deliveries: %v / %v", errs[0], errs[1])
	}
	if errs[2] == nil || errs[3] == nil {
		t.Fatal("npm standardwebhooks accepted a delivery under the wrong secret")
	}

	// The secret is never shown again; header values are redacted.
	for _, path := range []string{"/api/webhooks/" + id, "/api/webhooks", "/api/webhooks/" + id + "/deliveries"} {
		resp := g.Do("GET", path, nil)
		if resp.Status != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.Status, resp.Body)
		}
		for _, leak := range []string{secret1, secret2, "whsec_", `"secret"`, "acme-corp-tenant-identifier", "resolved-at-send-time"} {
			if strings.Contains(string(resp.Body), leak) {
				t.Fatalf("GET %s leaks %q: %s", path, leak, resp.Body)
			}
		}
	}
	ep := g.Do("GET", "/api/webhooks/"+id, nil).JSON(t)
	hs := ep["headers"].(map[string]any)
	if auth := hs["Authorization"].(map[string]any); auth["ref"] != "env.WH_TEST_TOKEN" || auth["value"] != "" {
		t.Fatalf("env header shown as %v", auth)
	}

	// GET-modify-PUT keeps redacted header values.
	ep["disabled"] = false
	ep["name"] = "signed-renamed"
	if r := g.Do("PUT", "/api/webhooks/"+id, ep); r.Status != 200 {
		t.Fatalf("put back: %d %s", r.Status, r.Body)
	}
	sendTest(t, g, id, webhooks.EventJobCompleted)
	h3 := rc.wait(t, 3, 5*time.Second)[2]
	if h3.header.Get("X-Tenant") != "acme-corp-tenant-identifier" || goVerify(secret2, h3) != nil {
		t.Fatalf("after PUT-back: tenant %q", h3.header.Get("X-Tenant"))
	}
}

// TestRetriesWithBackoff: a receiver failing three times gets four attempts
// with the same webhook-id at growing intervals, then the delivery is
// delivered and the endpoint stats say so.
func TestRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	g := testgw.New(t)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n <= 3 {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	id, _ := create(t, g, endpointBody("retry", rc.srv.URL, nil))
	did := sendTest(t, g, id, webhooks.EventJobCompleted)
	hits := rc.wait(t, 4, 15*time.Second)
	for i, h := range hits {
		if got := h.header.Get("webhook-id"); got != did {
			t.Fatalf("attempt %d webhook-id %q, want %q", i+1, got, did)
		}
	}
	var gaps []time.Duration
	for i := 1; i < len(hits); i++ {
		gaps = append(gaps, hits[i].at.Sub(hits[i-1].at))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	for i, gap := range gaps {
		// Never early; late by up to 2s on a loaded 2-core machine
		// (measured: +1.1s while other builds ran).
		if gap < want[i]-100*time.Millisecond || gap > want[i]+2*time.Second {
			t.Fatalf("retry gaps %v, want about %v", gaps, want)
		}
	}
	d := waitDelivery(t, g, did, 5*time.Second, finished)
	if d.State != webhooks.StateDelivered || len(d.Attempts) != 4 {
		t.Fatalf("delivery: %+v", d)
	}
	for i, a := range d.Attempts {
		wantCode := 503
		if i == 3 {
			wantCode = 204
		}
		if a.Number != i+1 || a.StatusCode != wantCode || (i < 3 && (a.Error == "" || !strings.Contains(a.ResponseSnippet, "try again"))) {
			t.Fatalf("attempt %d: %+v", i+1, a)
		}
	}
	ep := g.Do("GET", "/api/webhooks/"+id, nil).JSON(t)
	if ep["consecutive_failures"] != float64(0) || ep["last_success_at"] == nil || ep["last_failure_at"] == nil {
		t.Fatalf("endpoint stats: %v", ep)
	}
	// History lists newest first.
	sendTest(t, g, id, webhooks.EventJobFailed)
	list := g.Do("GET", "/api/webhooks/"+id+"/deliveries?limit=1", nil).JSON(t)
	ds := list["deliveries"].([]any)
	if list["total_count"] != float64(2) || list["count"] != float64(1) || ds[0].(map[string]any)["id"] == did {
		t.Fatalf("deliveries list: %v", list)
	}
}

// TestRetriesExhaustedAndTimeout: a hanging receiver is cut at
// attempt_timeout_seconds and, with retries exhausted, the delivery fails.
func TestRetriesExhaustedAndTimeout(t *testing.T) {
	t.Parallel()
	g := testgw.New(t)
	rc := newReceiver(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	id, _ := create(t, g, endpointBody("hang", rc.srv.URL, map[string]any{"attempt_timeout_seconds": 1, "max_retries": 1}))
	did := sendTest(t, g, id, webhooks.EventJobCompleted)
	d := waitDelivery(t, g, did, 10*time.Second, finished)
	if d.State != webhooks.StateFailed || len(d.Attempts) != 2 || !strings.Contains(d.Reason, "gave up after 2 attempts") {
		t.Fatalf("delivery: %+v", d)
	}
	for _, a := range d.Attempts {
		if !strings.Contains(a.Error, "timed out after 1s") || a.DurationMS < 900 || a.DurationMS > 2500 {
			t.Fatalf("attempt not cut at 1s: %+v", a)
		}
	}
	if ep := g.Do("GET", "/api/webhooks/"+id, nil).JSON(t); ep["consecutive_failures"] != float64(2) {
		t.Fatalf("consecutive_failures: %v", ep["consecutive_failures"])
	}
}

// TestDisabledOrUnsubscribedGetNothing: enqueueing for a disabled or
// unsubscribed endpoint is refused, and a queued delivery whose endpoint was
// disabled or unsubscribed before its retry is skipped with a reason.
func TestDisabledOrUnsubscribedGetNothing(t *testing.T) {
	t.Parallel()
	g := testgw.New(t)
	wh := g.Server.Webhooks()
	ctx := context.Background()
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) })
	id, _ := create(t, g, endpointBody("skip", rc.srv.URL, map[string]any{"events": []string{webhooks.EventJobCompleted}}))
	create(t, g, endpointBody("off", rc.srv.URL, map[string]any{"disabled": true}))

	if _, err := wh.Enqueue(ctx, "skip", webhooks.EventJobFailed, []byte(`{}`)); !errors.Is(err, webhooks.ErrNotSubscribed) {
		t.Fatalf("unsubscribed enqueue: %v", err)
	}
	if _, err := wh.Enqueue(ctx, "off", webhooks.EventJobCompleted, []byte(`{}`)); !errors.Is(err, webhooks.ErrEndpointDisabled) {
		t.Fatalf("disabled enqueue: %v", err)
	}
	if _, err := wh.Enqueue(ctx, "nope", webhooks.EventJobCompleted, []byte(`{}`)); !errors.Is(err, webhooks.ErrEndpointNotFound) {
		t.Fatalf("missing endpoint enqueue: %v", err)
	}
	if err := wh.CheckEndpoint(ctx, "off"); !errors.Is(err, webhooks.ErrEndpointDisabled) {
		t.Fatalf("CheckEndpoint(off): %v", err)
	}
	offID := g.Do("GET", "/api/webhooks?search=off", nil).JSON(t)["endpoints"].([]any)[0].(map[string]any)["id"].(string)
	testgw.WantEnvelope(t, g.Do("POST", "/api/webhooks/"+offID+"/test", map[string]any{"event": webhooks.EventJobCompleted}), 409, "endpoint_disabled")

	// Queued while subscribed, first attempt fails, then the subscription
	// changes before the retry: the retry is skipped.
	body := endpointBody("skip", rc.srv.URL, map[string]any{"events": []string{webhooks.EventJobCompleted}})
	d1, err := wh.Enqueue(ctx, id, webhooks.EventJobCompleted, []byte(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	rc.wait(t, 1, 5*time.Second)
	body["events"] = []string{webhooks.EventJobFailed}
	if r := g.Do("PUT", "/api/webhooks/"+id, body); r.Status != 200 {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	d := waitDelivery(t, g, d1, 5*time.Second, finished)
	if d.State != webhooks.StateSkipped || !strings.Contains(d.Reason, "no longer subscribed") {
		t.Fatalf("unsubscribed delivery: %+v", d)
	}

	// Same with disabling.
	d2, err := wh.Enqueue(ctx, id, webhooks.EventJobFailed, []byte(`{"n":2}`))
	if err != nil {
		t.Fatal(err)
	}
	rc.wait(t, 2, 5*time.Second)
	body["disabled"] = true
	if r := g.Do("PUT", "/api/webhooks/"+id, body); r.Status != 200 {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	d = waitDelivery(t, g, d2, 5*time.Second, finished)
	if d.State != webhooks.StateSkipped || d.Reason != "endpoint is disabled" {
		t.Fatalf("disabled delivery: %+v", d)
	}
	time.Sleep(300 * time.Millisecond)
	if n := rc.count(); n != 2 {
		t.Fatalf("receiver got %d requests, want 2 (one per delivery before the change)", n)
	}
}

// TestJobPayloadInliningAndRedeliver: the job payload builder inlines a
// response that fits, omits and flags one that does not, and redelivery
// sends the same webhook-id again.
func TestJobPayloadInliningAndRedeliver(t *testing.T) {
	t.Parallel()
	g := testgw.New(t)
	wh := g.Server.Webhooks()
	ctx := context.Background()
	rc := newReceiver(t, nil)
	create(t, g, endpointBody("jobs", rc.srv.URL, map[string]any{"include_response": true, "max_response_payload_kbs": 1}))
	job := webhooks.JobFacts{
		JobID: "job_1", RequestType: "chat_completion", Status: "completed", StatusCode: 200,
		ResultURL: "/v1/async/chat/completions/job_1", ResultExpiresAt: time.Now().Add(time.Hour),
		Response: json.RawMessage(`{"big":"` + strings.Repeat("x", 2000) + `"}`),
	}
	big, err := wh.EnqueueJob(ctx, "jobs", job)
	if err != nil {
		t.Fatal(err)
	}
	job.JobID, job.Response = "job_2", json.RawMessage(`{"small":true}`)
	if _, err := wh.EnqueueJob(ctx, "jobs", job); err != nil {
		t.Fatal(err)
	}
	job.JobID, job.Status, job.StatusCode, job.Response = "job_3", "failed", 502, nil
	job.Error = json.RawMessage(`{"error":{"message":"` + strings.Repeat("e", 2000) + `"}}`)
	job.ResultExpiresAt = time.Now().Add(-time.Minute) // already gone at send time
	if _, err := wh.EnqueueJob(ctx, "jobs", job); err != nil {
		t.Fatal(err)
	}
	hits := rc.wait(t, 3, 5*time.Second)
	byJob := map[string]map[string]any{}
	for _, h := range hits {
		var b struct {
			Event string         `json:"event"`
			Data  map[string]any `json:"data"`
		}
		if err := json.Unmarshal(h.body, &b); err != nil {
			t.Fatal(err)
		}
		byJob[b.Data["job_id"].(string)] = b.Data
	}
	if d := byJob["job_1"]; d["response"] != nil || d["response_omitted"] != true {
		t.Fatalf("oversized response: %v", d)
	}
	if d := byJob["job_2"]; d["response"] == nil || d["response_omitted"] != nil {
		t.Fatalf("small response: %v", d)
	}
	if d := byJob["job_3"]; d["error"] != nil || d["error_omitted"] != true || d["result_expired"] != true || d["status"] != "failed" {
		t.Fatalf("oversized error / expired result: %v", d)
	}

	waitDelivery(t, g, big, 5*time.Second, func(d webhooks.Delivery) bool { return d.State == webhooks.StateDelivered })
	r := g.Do("POST", "/api/webhooks/deliveries/"+big+"/redeliver", nil)
	if r.Status != 202 {
		t.Fatalf("redeliver: %d %s", r.Status, r.Body)
	}
	h := rc.wait(t, 4, 5*time.Second)[3]
	if h.header.Get("webhook-id") != big {
		t.Fatalf("redelivery webhook-id %q, want %q", h.header.Get("webhook-id"), big)
	}
	d := waitDelivery(t, g, big, 5*time.Second, func(d webhooks.Delivery) bool {
		return d.State == webhooks.StateDelivered && len(d.Attempts) == 2
	})
	if d.Attempts[1].Number != 2 {
		t.Fatalf("attempts after redelivery: %+v", d.Attempts)
	}
	testgw.WantEnvelope(t, g.Do("POST", "/api/webhooks/deliveries/msg_missing/redeliver", nil), 404, "not_found")
}

// TestPrivateNetworkGuard: a literal private URL is refused at create time,
// and a host name that resolves to loopback is refused when dialled unless
// the endpoint allows private networks.
func TestPrivateNetworkGuard(t *testing.T) {
	t.Parallel()
	g := testgw.New(t)
	rc := newReceiver(t, nil)
	port := rc.srv.Listener.Addr().(*net.TCPAddr).Port

	for _, u := range []string{"https://127.0.0.1/x", "https://169.254.169.254/latest", "https://[::ffff:10.0.0.1]/", "https://[fd00::1]/"} {
		e := testgw.WantEnvelope(t, g.Do("POST", "/api/webhooks", map[string]any{"name": "p", "url": u, "events": []string{webhooks.EventJobCompleted}}), 400, "private_network_url")
		if e["error"].(map[string]any)["param"] != "url" {
			t.Fatalf("param: %v", e)
		}
	}
	testgw.WantEnvelope(t, g.Do("POST", "/api/webhooks", map[string]any{"name": "p", "url": rc.srv.URL, "events": []string{webhooks.EventJobCompleted}}), 400, "insecure_url")

	// https://localhost passes validation (a host name) but dials 127.0.0.1.
	id, _ := create(t, g, map[string]any{"name": "guarded", "url": fmt.Sprintf("https://localhost:%d/", port),
		"events": []string{webhooks.EventJobCompleted}, "max_retries": 0})
	did := sendTest(t, g, id, webhooks.EventJobCompleted)
	d := waitDelivery(t, g, did, 5*time.Second, finished)
	if d.State != webhooks.StateFailed || len(d.Attempts) != 1 || !strings.Contains(d.Attempts[0].Error, "private or reserved address") {
		t.Fatalf("guarded delivery: %+v", d)
	}
	if rc.count() != 0 {
		t.Fatal("the receiver on loopback was reached")
	}

	// Allowed: plain http to localhost is delivered.
	body := map[string]any{"name": "guarded", "url": fmt.Sprintf("http://localhost:%d/", port),
		"events": []string{webhooks.EventJobCompleted}, "allow_private_network": true}
	if r := g.Do("PUT", "/api/webhooks/"+id, body); r.Status != 200 {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	did = sendTest(t, g, id, webhooks.EventJobCompleted)
	waitDelivery(t, g, did, 5*time.Second, func(d webhooks.Delivery) bool { return d.State == webhooks.StateDelivered })

	// A redirect is a failed attempt, never followed.
	redir := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, rc.srv.URL, http.StatusTemporaryRedirect)
	})
	rid, _ := create(t, g, endpointBody("redirect", redir.srv.URL, map[string]any{"max_retries": 0}))
	before := rc.count()
	d = waitDelivery(t, g, sendTest(t, g, rid, webhooks.EventJobCompleted), 5*time.Second, finished)
	if d.State != webhooks.StateFailed || d.Attempts[0].StatusCode != 307 || rc.count() != before {
		t.Fatalf("redirect: %+v", d)
	}
}

// TestValidation: the API names the offending field.
func TestValidation(t *testing.T) {
	t.Parallel()
	g := testgw.New(t)
	ok := func() map[string]any {
		return map[string]any{"name": "v", "url": "https://example.com/hook", "events": []string{webhooks.EventJobCompleted}}
	}
	cases := []struct {
		field string
		value any
		param string
		code  string
	}{
		{"secret", "whsec_AAAA", "secret", "unknown_field"},
		{"headers", map[string]any{"Webhook-Signature": "x"}, "headers.Webhook-Signature", "reserved_header"},
		{"headers", map[string]any{"content-type": "text/plain"}, "headers.content-type", "reserved_header"},
		{"headers", map[string]any{"Bad Header": "x"}, "headers.Bad Header", "invalid_value"},
		{"events", []string{"job.done"}, "events[0]", "invalid_value"},
		{"events", []string{}, "events", "missing_field"},
		{"url", "ftp://example.com", "url", "invalid_value"},
		{"url", "https://user:pw@example.com", "url", "invalid_value"},
		{"name", "", "name", "missing_field"},
		{"max_retries", 21, "max_retries", "invalid_value"},
		{"retry_backoff_initial_seconds", 0, "retry_backoff_initial_seconds", "invalid_value"},
		{"attempt_timeout_seconds", 0, "attempt_timeout_seconds", "invalid_value"},
		{"max_concurrent_deliveries", 0, "max_concurrent_deliveries", "invalid_value"},
		{"retry_backoff_max_seconds", 10, "retry_backoff_max_seconds", "invalid_value"}, // below the default initial 30
	}
	for _, c := range cases {
		b := ok()
		b[c.field] = c.value
		e := testgw.WantEnvelope(t, g.Do("POST", "/api/webhooks", b), 400, c.code)
		if p := e["error"].(map[string]any)["param"]; p != c.param {
			t.Errorf("%s=%v: param %v, want %s", c.field, c.value, p, c.param)
		}
	}
	r := g.Do("POST", "/api/webhooks", ok())
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	ep := r.JSON(t)
	for k, want := range map[string]float64{"max_retries": 4, "retry_backoff_initial_seconds": 30, "retry_backoff_max_seconds": 1800,
		"attempt_timeout_seconds": 10, "max_response_payload_kbs": 256, "max_concurrent_deliveries": 10} {
		if ep[k] != want {
			t.Errorf("default %s = %v, want %v", k, ep[k], want)
		}
	}
	testgw.WantEnvelope(t, g.Do("POST", "/api/webhooks", ok()), 409, "name_taken")
	id := ep["id"].(string)
	testgw.WantEnvelope(t, g.Do("PUT", "/api/webhooks/"+id, `{"name":"v","url":"https://example.com","events":["async_job.failed"],"secret":"whsec_x"}`), 400, "unknown_field")
	testgw.WantEnvelope(t, g.Do("PUT", "/api/webhooks/"+id, `{"id":"other","name":"v","url":"https://example.com","events":["async_job.failed"]}`), 400, "immutable_field")
	testgw.WantEnvelope(t, g.Do("POST", "/api/webhooks/"+id+"/test", `{"event":"nope"}`), 400, "invalid_value")
	testgw.WantEnvelope(t, g.Do("GET", "/api/webhooks/nope", nil), 404, "not_found")
	if r := g.Do("DELETE", "/api/webhooks/"+id, nil); r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/webhooks/"+id, nil), 404, "not_found")
}

// TestListFilters covers search, events, disabled and paging.
func TestListFilters(t *testing.T) {
	t.Parallel()
	g := testgw.New(t)
	mk := func(name, url string, events []string, disabled bool) {
		if r := g.Do("POST", "/api/webhooks", map[string]any{"name": name, "url": url, "events": events, "disabled": disabled}); r.Status != 201 {
			t.Fatalf("create %s: %d %s", name, r.Status, r.Body)
		}
	}
	mk("Billing", "https://billing.example.com/h", []string{webhooks.EventJobCompleted}, false)
	mk("alerts", "https://ops.example.com/ALERTS", []string{webhooks.EventJobFailed}, true)
	mk("both", "https://both.example.org/h", []string{webhooks.EventJobCompleted, webhooks.EventJobFailed}, false)
	names := func(q string) (out []string, total float64) {
		r := g.Do("GET", "/api/webhooks"+q, nil)
		if r.Status != 200 {
			t.Fatalf("list %s: %d %s", q, r.Status, r.Body)
		}
		m := r.JSON(t)
		for _, e := range m["endpoints"].([]any) {
			out = append(out, e.(map[string]any)["name"].(string))
		}
		return out, m["total_count"].(float64)
	}
	check := func(q string, want ...string) {
		t.Helper()
		got, _ := names(q)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: %v, want %v", q, got, want)
		}
	}
	check("", "Billing", "alerts", "both")
	check("?search=BILL", "Billing")
	check("?search=alerts", "alerts") // URL match, case-insensitive
	check("?search=example.org", "both")
	check("?events=async_job.failed", "alerts", "both")
	check("?events=async_job.completed,async_job.failed", "Billing", "alerts", "both")
	check("?disabled=true", "alerts")
	check("?disabled=false&events=async_job.failed", "both")
	check("?limit=1&offset=1", "alerts")
	if got, total := names("?limit=2&offset=2"); len(got) != 1 || total != 3 {
		t.Errorf("page: %v total %v", got, total)
	}
	m := g.Do("GET", "/api/webhooks", nil).JSON(t)
	if m["limit"] != float64(50) || m["offset"] != float64(0) || m["count"] != float64(3) {
		t.Errorf("defaults: %v", m)
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/webhooks?limit=501", nil), 400, "invalid_parameter")
	testgw.WantEnvelope(t, g.Do("GET", "/api/webhooks?disabled=maybe", nil), 400, "invalid_value")
	testgw.WantEnvelope(t, g.Do("GET", "/api/webhooks?events=nope", nil), 400, "invalid_value")
}

// TestDeliverySurvivesRestart: a delivery pending when the server stops
// (receiver down) is delivered by the next server on the same data
// directory, with the same webhook-id.
func TestDeliverySurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // receiver down for now

	g1 := testgw.Start(t, testgw.Options{Dir: dir})
	id, secret := create(t, g1, endpointBody("durable", "http://"+addr+"/", map[string]any{"retry_backoff_initial_seconds": 1}))
	did := sendTest(t, g1, id, webhooks.EventJobCompleted)
	waitDelivery(t, g1, did, 5*time.Second, func(d webhooks.Delivery) bool { return len(d.Attempts) >= 1 })
	g1.Close()

	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("could not re-bind %s for the receiver: %v", addr, err)
	}
	rc := &receiver{}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(rc.serve)}}
	srv.Start()
	t.Cleanup(srv.Close)

	g2 := testgw.Start(t, testgw.Options{Dir: dir})
	h := rc.wait(t, 1, 5*time.Second)[0]
	if h.header.Get("webhook-id") != did {
		t.Fatalf("after restart webhook-id %q, want %q", h.header.Get("webhook-id"), did)
	}
	if err := goVerify(secret, h); err != nil {
		t.Fatalf("signature after restart: %v", err)
	}
	d := waitDelivery(t, g2, did, 5*time.Second, finished)
	if d.State != webhooks.StateDelivered {
		t.Fatalf("delivery: %+v", d)
	}
}

// TestConfigFileEndpoints: config entries are reconciled by name with a
// config_hash; an unchanged entry keeps API edits, a changed one wins; a
// caller-supplied env. secret signs; invalid entries fail start-up naming
// the field.
func TestConfigFileEndpoints(t *testing.T) {
	secret := webhooks.NewSecret()
	t.Setenv("WH_CFG_SECRET", secret)
	dir := t.TempDir()
	rc := newReceiver(t, nil)
	file := filepath.Join(dir, "gateway.json")
	write := func(entries ...map[string]any) {
		raw, _ := json.Marshal(map[string]any{"webhooks": entries})
		if err := os.WriteFile(file, raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	entry := map[string]any{"name": "from-file", "url": rc.srv.URL, "events": []string{webhooks.EventJobCompleted},
		"secret": "env.WH_CFG_SECRET", "allow_private_network": true, "max_retries": 2}
	write(entry)
	start := func() *testgw.Gateway {
		return testgw.Start(t, testgw.Options{Dir: dir, Args: []string{"--config", file}})
	}

	g := start()
	list := g.Do("GET", "/api/webhooks", nil).JSON(t)["endpoints"].([]any)
	if len(list) != 1 {
		t.Fatalf("endpoints: %v", list)
	}
	ep := list[0].(map[string]any)
	id, hash := ep["id"].(string), ep["config_hash"].(string)
	if ep["name"] != "from-file" || len(hash) != 64 || ep["max_retries"] != float64(2) {
		t.Fatalf("synced endpoint: %v", ep)
	}
	did := sendTest(t, g, id, webhooks.EventJobCompleted)
	if h := rc.wait(t, 1, 5*time.Second)[0]; goVerify(secret, h) != nil || h.header.Get("webhook-id") != did {
		t.Fatal("delivery not signed with the config-file secret")
	}
	// API edit, then restart with the same file: the edit is kept.
	ep["max_retries"] = 3
	if r := g.Do("PUT", "/api/webhooks/"+id, ep); r.Status != 200 {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	g.Close()
	g = start()
	ep = g.Do("GET", "/api/webhooks/"+id, nil).JSON(t)
	if ep["max_retries"] != float64(3) || ep["config_hash"] != hash {
		t.Fatalf("unchanged file overwrote the API edit: %v", ep)
	}
	g.Close()

	// Changed entry: the file wins, the id stays.
	entry["max_retries"] = 1
	write(entry)
	g = start()
	ep = g.Do("GET", "/api/webhooks/"+id, nil).JSON(t)
	if ep["max_retries"] != float64(1) || ep["config_hash"] == hash {
		t.Fatalf("changed file did not win: %v", ep)
	}
	g.Close()

	// Invalid entries fail start-up naming the field.
	for want, bad := range map[string]map[string]any{
		"webhooks[0].url":                       {"name": "x", "url": "http://example.com", "events": []string{webhooks.EventJobCompleted}},
		"webhooks[0].secret":                    {"name": "x", "url": "https://example.com", "events": []string{webhooks.EventJobCompleted}, "secret": "not-a-secret"},
		"webhooks[0].events":                    {"name": "x", "url": "https://example.com"},
		"webhooks[0].bogus":                     {"name": "x", "url": "https://example.com", "events": []string{webhooks.EventJobCompleted}, "bogus": 1},
		"webhooks[0].headers.webhook-id":        {"name": "x", "url": "https://example.com", "events": []string{webhooks.EventJobCompleted}, "headers": map[string]any{"webhook-id": "x"}},
		"webhooks[0].retry_backoff_max_seconds": {"name": "x", "url": "https://example.com", "events": []string{webhooks.EventJobCompleted}, "retry_backoff_max_seconds": 0},
	} {
		write(bad)
		cfg := testgw.Config(t, t.TempDir(), nil, "--config", file)
		srv, err := newServer(cfg)
		if err == nil {
			_ = srv.Shutdown(context.Background())
			t.Fatalf("%s: start-up succeeded", want)
		}
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("start-up error %q does not name %s", err, want)
		}
	}
}

// TestRoutePermissions checks the declared permissions of every route.
func TestRoutePermissions(t *testing.T) {
	t.Parallel()
	g := testgw.New(t)
	want := map[string]string{
		"GET /api/webhooks": "Webhooks:View", "POST /api/webhooks": "Webhooks:Create",
		"GET /api/webhooks/:id": "Webhooks:View", "PUT /api/webhooks/:id": "Webhooks:Update",
		"DELETE /api/webhooks/:id": "Webhooks:Delete", "POST /api/webhooks/:id/rotate-secret": "Webhooks:Update",
		"POST /api/webhooks/:id/test": "Webhooks:Update", "GET /api/webhooks/:id/deliveries": "Webhooks:View",
		"GET /api/webhooks/deliveries/:id": "Webhooks:View", "POST /api/webhooks/deliveries/:id/redeliver": "Webhooks:Update",
	}
	got := map[string]string{}
	for _, r := range g.Server.Routes() {
		if strings.HasPrefix(r.Path, "/api/webhooks") {
			got[r.Method+" "+r.Path] = r.Permission
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: permission %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("routes: %v", got)
	}
}

func newServer(cfg *config.Config) (*server.Server, error) {
	return server.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// TestConcurrencyCapPerEndpoint: no more than max_concurrent_deliveries
// attempts to one endpoint are in flight at once.
func TestConcurrencyCapPerEndpoint(t *testing.T) {
	t.Parallel()
	g := testgw.New(t)
	var mu sync.Mutex
	cur, peak := 0, 0
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		cur++
		peak = max(peak, cur)
		mu.Unlock()
		time.Sleep(150 * time.Millisecond)
		mu.Lock()
		cur--
		mu.Unlock()
		w.WriteHeader(200)
	})
	create(t, g, endpointBody("capped", rc.srv.URL, map[string]any{"max_concurrent_deliveries": 2}))
	for i := 0; i < 6; i++ {
		if _, err := g.Server.Webhooks().Enqueue(context.Background(), "capped", webhooks.EventJobCompleted, []byte(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	rc.wait(t, 6, 10*time.Second)
	mu.Lock()
	defer mu.Unlock()
	if peak != 2 {
		t.Fatalf("peak concurrency %d, want 2", peak)
	}
}
