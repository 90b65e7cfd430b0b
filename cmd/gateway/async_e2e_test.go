package main_test

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/fakeupstream"
)

// TestAsyncJobsSurviveSIGKILL submits jobs while the upstream hangs (so
// some are running and some still queued), kills the gateway with SIGKILL
// and checks that after a restart every acknowledged job reaches a terminal
// state with the real answer: acknowledged jobs are never lost, and jobs cut
// short are run again (at-least-once).
func TestAsyncJobsSurviveSIGKILL(t *testing.T) {
	cfg, set := fakeProviderSet(t)
	openai := set.Servers[fakeupstream.OpenAI]
	cwd, data := t.TempDir(), t.TempDir()
	p := start(t, cwd, data, []string{"GATEWAY_ASYNC__WORKERS=4"}, "--config", cfg)

	openai.SetHang(fakeupstream.HangBeforeHeaders)
	const n = 10
	var urls []string
	for i := 0; i < n; i++ {
		code, body := p.do("POST", "/v1/async/chat/completions", map[string]any{
			"model": "openai/gpt-4o-mini", "messages": []map[string]string{{"role": "user", "content": "hi"}}})
		if code != 202 {
			t.Fatalf("submit: %d %s", code, body)
		}
		var v struct {
			ResultURL string `json:"result_url"`
		}
		_ = json.Unmarshal(body, &v)
		urls = append(urls, v.ResultURL)
	}
	// Four workers are stuck on the upstream, six jobs wait in the queue.
	deadline := time.Now().Add(10 * time.Second)
	for openai.Hanging() < 4 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if openai.Hanging() < 4 {
		t.Fatalf("%d upstream calls hanging, want 4", openai.Hanging())
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(10 * time.Second)
	openai.SetHang(fakeupstream.HangNone)

	p = start(t, cwd, data, nil, "--config", cfg)
	for _, u := range urls {
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, body := p.do("GET", u, nil)
			if code != 200 {
				t.Fatalf("job %s after SIGKILL: %d %s", u, code, body)
			}
			var v struct {
				Status   string
				Attempts int
				Result   json.RawMessage
			}
			_ = json.Unmarshal(body, &v)
			if v.Status == "completed" {
				if !strings.Contains(string(v.Result), "hello") {
					t.Fatalf("job %s result: %s", u, v.Result)
				}
				break
			}
			if v.Status == "failed" || time.Now().After(deadline) {
				t.Fatalf("job %s after restart: %s", u, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
