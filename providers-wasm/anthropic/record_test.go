package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/fakeupstream"
)

// Transcripts recorded from host/fakeupstream, the reference for the
// Messages wire. The test below re-records them and fails when the fake
// has drifted from the stored copy (-update rewrites them), so the golden
// tests always run on the shapes the rest of the gateway is tested with.
var transcripts = []struct {
	file, path, body string
}{
	{"fake_stream_tool_thinking.sse", "/v1/messages", `{"model":"claude-sonnet-4-20250514","max_tokens":1024,"stream":true,` +
		`"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hi"}],` +
		`"tools":[{"name":"echo","description":"Echo","input_schema":{"type":"object","properties":{"echo":{"type":"string"}}}}]}`},
	{"fake_message_tool_thinking.json", "/v1/messages", `{"model":"claude-sonnet-4-20250514","max_tokens":1024,` +
		`"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hi"}],` +
		`"tools":[{"name":"echo","description":"Echo","input_schema":{"type":"object","properties":{"echo":{"type":"string"}}}}]}`},
	{"fake_stream_text.sse", "/v1/messages", `{"model":"claude-3-5-haiku-20241022","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
}

func record(t *testing.T, s *fakeupstream.Server, path, body string) []byte {
	t.Helper()
	method := http.MethodPost
	var rd io.Reader = strings.NewReader(body)
	if body == "" {
		method, rd = http.MethodGet, nil
	}
	req, _ := http.NewRequest(method, s.URL+path, rd)
	req.Header.Set("x-api-key", "k")
	req.Header.Set("anthropic-version", anthropicVersion)
	req.Header.Set("content-type", "application/json")
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s: %d %v %s", path, resp.StatusCode, err, b)
	}
	return b
}

func TestFakeUpstreamTranscripts(t *testing.T) {
	s := fakeupstream.Start(t, fakeupstream.Anthropic, fakeupstream.Options{CachedTokens: 7})
	for _, tr := range transcripts {
		got := record(t, s, tr.path, tr.body)
		file := filepath.Join("testdata", tr.file)
		if *update {
			if err := os.WriteFile(file, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, got) {
			t.Errorf("%s: fakeupstream drifted (go test -update to re-record)\nwant %s\ngot  %s", tr.file, want, got)
		}
	}
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
