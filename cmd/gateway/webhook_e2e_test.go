package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// TestPendingDeliverySurvivesSIGKILL: an async job completes while its
// webhook receiver is down, so the delivery is queued and retrying; the
// gateway is killed with SIGKILL; after a restart with the receiver up the
// delivery arrives, with the same webhook-id and a valid signature.
func TestPendingDeliverySurvivesSIGKILL(t *testing.T) {
	cfg := fakeProviders(t)
	cwd, data := t.TempDir(), t.TempDir()
	p := start(t, cwd, data, nil, "--config", cfg)

	// Reserve a port for the receiver, which stays down for now.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	code, body := p.do("POST", "/api/webhooks", map[string]any{
		"name": "receiver", "url": "http://" + addr + "/hook", "events": []string{"async_job.completed"},
		"allow_private_network": true, "retry_backoff_initial_seconds": 1, "retry_backoff_max_seconds": 2, "max_retries": 20,
	})
	if code != 201 {
		t.Fatalf("create endpoint: %d %s", code, body)
	}
	var ep struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	_ = json.Unmarshal(body, &ep)

	req, _ := http.NewRequest("POST", p.base+"/v1/async/chat/completions",
		strings.NewReader(`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-gw-async-webhook", "receiver")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("submit: %d %s", resp.StatusCode, raw)
	}
	var job struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &job)

	// Wait until the delivery exists and has failed at least once.
	var deliveryID string
	deadline := time.Now().Add(20 * time.Second)
	for deliveryID == "" && time.Now().Before(deadline) {
		_, body := p.do("GET", "/api/webhooks/"+ep.ID+"/deliveries", nil)
		var list struct {
			Deliveries []struct {
				ID       string            `json:"id"`
				State    string            `json:"state"`
				Attempts []json.RawMessage `json:"attempts"`
			} `json:"deliveries"`
		}
		_ = json.Unmarshal(body, &list)
		if len(list.Deliveries) == 1 && len(list.Deliveries[0].Attempts) >= 1 {
			deliveryID = list.Deliveries[0].ID
		}
		time.Sleep(50 * time.Millisecond)
	}
	if deliveryID == "" {
		t.Fatal("no failed delivery attempt recorded")
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(10 * time.Second)

	got := make(chan *http.Request, 4)
	bodies := make(chan []byte, 4)
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("could not re-bind the receiver port %s: %v", addr, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
		w.WriteHeader(204)
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	start(t, cwd, data, nil, "--config", cfg)
	select {
	case r := <-got:
		b := <-bodies
		if id := r.Header.Get("webhook-id"); id != deliveryID {
			t.Fatalf("webhook-id %q after restart, want %q", id, deliveryID)
		}
		wh, err := standardwebhooks.NewWebhook(ep.Secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(b, r.Header); err != nil {
			t.Fatalf("signature: %v", err)
		}
		if !bytes.Contains(b, []byte(fmt.Sprintf(`"job_id":%q`, job.ID))) {
			t.Fatalf("payload: %s", b)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the pending delivery was not delivered after the restart")
	}
}
