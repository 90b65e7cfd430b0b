package webhooks

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/wasmgate/gateway/store"
	"github.com/wasmgate/gateway/store/badgerstore"
)

func TestBlockedAddr(t *testing.T) {
	blocked := []string{
		"127.0.0.1", "127.8.9.10", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "100.64.0.1",
		"100.127.255.254", "169.254.169.254", "169.254.1.1", "0.0.0.0", "0.1.2.3", "224.0.0.1", "239.255.255.250",
		"255.255.255.255", "240.0.0.1", "192.0.2.5", "198.18.0.1", "::1", "::", "fd00::1", "fc00::1", "fe80::1",
		"ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1",
		"64:ff9b::a9fe:a9fe", "2002:7f00:1::1", "2001:db8::1", "fe80::1%eth0",
	}
	allowed := []string{"8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"}
	for _, s := range blocked {
		if !blockedAddr(netip.MustParseAddr(s)) {
			t.Errorf("%s is not blocked", s)
		}
	}
	for _, s := range allowed {
		if blockedAddr(netip.MustParseAddr(s)) {
			t.Errorf("%s is blocked", s)
		}
	}
}

func TestBackoffDoublesAndCaps(t *testing.T) {
	tu := Tuning{RetryBackoffInitialSeconds: 30, RetryBackoffMaxSeconds: 1800}
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 30 * time.Minute, 30 * time.Minute}
	for i, w := range want {
		if got := tu.backoff(i + 1); got != w {
			t.Errorf("retry %d: %s, want %s", i+1, got, w)
		}
	}
	if got := (Tuning{RetryBackoffInitialSeconds: 1, RetryBackoffMaxSeconds: 86400}).backoff(200); got != 86400*time.Second {
		t.Errorf("large retry number: %s", got)
	}
}

func TestSignerMatchesOfficialLibrary(t *testing.T) {
	sec := NewSecret()
	s, err := NewSigner(sec)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Now()
	body := []byte(`{"event":"async_job.completed"}`)
	wh, err := standardwebhooks.NewWebhook(sec)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := wh.Sign("msg_1", ts, body)
	if got := s.Sign("msg_1", ts, body); got != want {
		t.Fatalf("signature %s, library %s", got, want)
	}
	for _, bad := range []string{"", "whsec_", "whsec_!!!", "abc", "whsec_" + strings.Repeat("A", 8)} {
		if _, err := ParseSecret(bad); err == nil {
			t.Errorf("ParseSecret(%q) accepted", bad)
		}
	}
}

func TestBuildEventBody(t *testing.T) {
	f := JobFacts{JobID: "j", RequestType: "chat_completion", Status: "completed", StatusCode: 200,
		ResultURL: "/v1/async/chat/completions/j", ResultExpiresAt: time.Unix(1700000000, 0),
		Response: json.RawMessage(`{"a":1}`), CompletedAt: time.Unix(1690000000, 0)}
	body, err := BuildEventBody(f, false, 256)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"event":"async_job.completed","created_at":"2023-07-22T04:26:40Z","data":{"job_id":"j","request_type":"chat_completion","status":"completed","status_code":200,"result_url":"/v1/async/chat/completions/j","result_expires_at":"2023-11-14T22:13:20Z"}}`
	if string(body) != want {
		t.Fatalf("without include_response:\n%s\nwant\n%s", body, want)
	}
	body, _ = BuildEventBody(f, true, 256)
	if !strings.Contains(string(body), `"response":{"a":1}`) {
		t.Fatalf("inlined: %s", body)
	}
	f.Response = json.RawMessage(`{"x":"` + strings.Repeat("y", 1024) + `"}`)
	body, _ = BuildEventBody(f, true, 1)
	if strings.Contains(string(body), `"response":`) || !strings.Contains(string(body), `"response_omitted":true`) {
		t.Fatalf("omitted: %s", body)
	}
	if _, err := BuildEventBody(JobFacts{Status: "running"}, true, 1); err == nil {
		t.Fatal("non-terminal status accepted")
	}
	if got := string(markResultExpired([]byte(`{"event":"e","data":{"job_id":"j"}}`))); !strings.Contains(got, `"result_expired":true`) {
		t.Fatalf("markResultExpired: %s", got)
	}
}

// TestPrune: finished history older than the retention window goes, young
// and queued deliveries stay.
func TestPrune(t *testing.T) {
	db, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := New(ctx, Options{Store: db, RetentionDays: 1, PruneInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	defer s.Close()
	// Stop the dispatcher so queued deliveries stay pending.
	_ = s.Close()
	ep := Endpoint{ID: "ep", Name: "ep", Events: []string{EventJobCompleted}}
	ep.MaxConcurrentDeliveries = 1
	clock := time.Now().Add(-48 * time.Hour)
	s.now = func() time.Time { return clock }
	var ids []string
	err = db.Update(ctx, func(tx store.Tx) error {
		if err := putEndpoint(tx, &record{Endpoint: ep}, ""); err != nil {
			return err
		}
		for i := 0; i < 2*pruneBatch+3; i++ {
			id, err := s.enqueueRecord(tx, &ep, EventJobCompleted, []byte(`{}`), nil, false)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// All but the first stay pending (old); the first gets delivered; one
	// young delivered record is added.
	finishOne := func(id string) {
		if err := db.Update(ctx, func(tx store.Tx) error {
			d, err := store.GetJSON[Delivery](tx, nsDeliveries, id)
			if err != nil {
				return err
			}
			return s.finish(tx, &d, StateDelivered, "")
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids[:pruneBatch+1] {
		finishOne(id)
	}
	clock = time.Now()
	var young string
	_ = db.Update(ctx, func(tx store.Tx) error {
		young, err = s.enqueueRecord(tx, &ep, EventJobCompleted, []byte(`{}`), nil, false)
		return err
	})
	finishOne(young)
	n, err := s.Prune(ctx)
	if err != nil || n != pruneBatch+1 {
		t.Fatalf("pruned %d (%v), want %d", n, err, pruneBatch+1)
	}
	_ = db.View(ctx, func(tx store.Tx) error {
		if _, err := tx.Get(nsDeliveries, ids[0]); err == nil {
			t.Error("old delivered record survived")
		}
		if _, err := tx.Get(nsByEndpoint, "ep/"+ids[0]); err == nil {
			t.Error("old history index entry survived")
		}
		for _, id := range []string{ids[len(ids)-1], young} {
			if _, err := tx.Get(nsDeliveries, id); err != nil {
				t.Errorf("%s was pruned", id)
			}
		}
		return nil
	})
}
