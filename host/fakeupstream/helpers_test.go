package fakeupstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

type sseEvent struct {
	Event string
	Data  string
}

// parseSSE implements the WHATWG framing: events end at a blank line, lines
// end in LF or CRLF, data lines concatenate with LF.
func parseSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	var data []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			if len(data) > 0 || cur.Event != "" {
				cur.Data = strings.Join(data, "\n")
				out = append(out, cur)
			}
			cur, data = sseEvent{}, nil
			continue
		}
		field, val, _ := strings.Cut(line, ":")
		val = strings.TrimPrefix(val, " ")
		switch field {
		case "event":
			cur.Event = val
		case "data":
			data = append(data, val)
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if len(data) > 0 {
		t.Fatalf("stream ended inside an event: %q", data)
	}
	// Every event must be terminated by a blank line.
	if len(body) > 0 && !bytes.HasSuffix(body, []byte("\n\n")) && !bytes.HasSuffix(body, []byte("\r\n\r\n")) {
		t.Fatalf("stream does not end with a blank line: %q", body[max(0, len(body)-20):])
	}
	return out
}

func jsonOf(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not JSON: %v: %s", err, s)
	}
	return m
}

// do sends a request and returns status, headers and body.
func do(t *testing.T, s *Server, method, p string, hdr map[string]string, body string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+p, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func num(v any) int { f, _ := v.(float64); return int(f) }

var bearer = map[string]string{"Authorization": "Bearer sk-test", "Content-Type": "application/json"}
