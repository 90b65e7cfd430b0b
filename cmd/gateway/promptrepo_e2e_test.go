package main_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestPromptCommitsSurviveSIGKILL commits prompt versions (some
// concurrently) through the real binary, kills it with SIGKILL right after
// the last acknowledgement and checks every acknowledged version, its
// number and the latest marker after a restart.
func TestPromptCommitsSurviveSIGKILL(t *testing.T) {
	cwd, data := t.TempDir(), t.TempDir()
	p := start(t, cwd, data, nil)
	code, body := p.do("POST", "/api/prompt-repo/prompts", map[string]any{"name": "durable"})
	if code != 201 {
		t.Fatalf("create prompt: %d %s", code, body)
	}
	var pr struct {
		Prompt struct{ ID string } `json:"prompt"`
	}
	_ = json.Unmarshal(body, &pr)

	const n = 8
	sessions := make([]string, n)
	for i := range sessions {
		code, body := p.do("POST", "/api/prompt-repo/sessions", map[string]any{"prompt_id": pr.Prompt.ID,
			"messages": []any{map[string]any{"role": "user", "content": fmt.Sprint("v", i)}}, "model": "gpt-4o-mini", "provider": "openai"})
		if code != 201 {
			t.Fatalf("create session: %d %s", code, body)
		}
		var s struct {
			Session struct{ ID string } `json:"session"`
		}
		_ = json.Unmarshal(body, &s)
		sessions[i] = s.Session.ID
	}
	type ack struct {
		ID     int64 `json:"id"`
		Number int64 `json:"version_number"`
	}
	acks := make([]ack, n)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			code, body := p.do("POST", "/api/prompt-repo/sessions/"+sessions[i]+"/commit", map[string]any{"commit_message": fmt.Sprint("c", i)})
			if code != 200 {
				t.Errorf("commit %d: %d %s", i, code, body)
				return
			}
			var v struct{ Version ack }
			_ = json.Unmarshal(body, &v)
			acks[i] = v.Version
		}(i)
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(10 * time.Second)

	p = start(t, cwd, data, nil)
	code, body = p.do("GET", "/api/prompt-repo/prompts/"+pr.Prompt.ID+"/versions", nil)
	if code != 200 {
		t.Fatalf("list: %d %s", code, body)
	}
	var list struct {
		Versions []struct {
			ID       int64 `json:"id"`
			Number   int64 `json:"version_number"`
			IsLatest bool  `json:"is_latest"`
			Messages []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"messages"`
		} `json:"versions"`
		TotalCount int `json:"total_count"`
	}
	_ = json.Unmarshal(body, &list)
	if list.TotalCount != n {
		t.Fatalf("%d of %d acknowledged versions after SIGKILL: %s", list.TotalCount, n, body)
	}
	byID := map[int64]int64{}
	for _, v := range list.Versions {
		byID[v.ID] = v.Number
		if v.IsLatest != (v.Number == n) {
			t.Fatalf("version %d is_latest=%v", v.Number, v.IsLatest)
		}
	}
	for _, a := range acks {
		if byID[a.ID] != a.Number {
			t.Fatalf("acknowledged version id %d number %d not found as such: %v", a.ID, a.Number, byID)
		}
	}
	// Numbering continues after the restart.
	code, body = p.do("POST", "/api/prompt-repo/sessions/"+sessions[0]+"/commit", map[string]any{"commit_message": "after"})
	if code != 200 || !json.Valid(body) {
		t.Fatalf("commit after restart: %d %s", code, body)
	}
	var v struct{ Version ack }
	_ = json.Unmarshal(body, &v)
	if v.Version.Number != n+1 {
		t.Fatalf("version after restart %d, want %d", v.Version.Number, n+1)
	}
}
