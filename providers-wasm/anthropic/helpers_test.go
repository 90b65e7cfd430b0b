package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/sse"
	"github.com/wasmgate/gateway/pluginsdk"
)

// -update rewrites the "want" side of golden files from the current
// output; review the diff before committing.
var update = flag.Bool("update", false, "rewrite golden files")

// fixedNow makes "created" deterministic in golden files.
func testAdapter() *Adapter {
	return &Adapter{now: func() time.Time { return time.Unix(1700000000, 0) }}
}

// golden is a testdata file: input and expected output, both JSON.
type golden struct {
	Input json.RawMessage `json:"input"`
	Want  json.RawMessage `json:"want"`
}

func readGolden(t *testing.T, path string) golden {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return g
}

// checkGolden compares got with the file's want as decoded JSON (member
// order and spacing do not matter), or rewrites it under -update.
func checkGolden(t *testing.T, path string, g golden, got []byte) {
	t.Helper()
	if !json.Valid(got) {
		t.Fatalf("%s: output is not JSON: %s", path, got)
	}
	if *update {
		var buf bytes.Buffer
		_ = json.Indent(&buf, got, "  ", "  ")
		var in bytes.Buffer
		_ = json.Indent(&in, g.Input, "  ", "  ")
		out := "{\n  \"input\": " + in.String() + ",\n  \"want\": " + buf.String() + "\n}\n"
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	assertJSONEqual(t, path, g.Want, got)
}

func assertJSONEqual(t *testing.T, what string, want, got []byte) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: want is not JSON: %v", what, err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: got is not JSON: %v\n%s", what, err, got)
	}
	if !reflect.DeepEqual(w, g) {
		t.Fatalf("%s: mismatch\nwant %s\ngot  %s", what, compactJSON(want), compactJSON(got))
	}
}

func compactJSON(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}

func goldenFiles(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files %s", pattern)
	}
	return files
}

// readSSE frames an SSE transcript exactly as the host does (host/sse)
// into the events adapt_stream receives.
func readSSE(t testing.TB, transcript []byte) []pluginsdk.UpstreamEvent {
	t.Helper()
	r := sse.NewReader(bytes.NewReader(transcript), 0)
	var out []pluginsdk.UpstreamEvent
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data := json.RawMessage(ev.Data)
		if !json.Valid(data) {
			data, _ = json.Marshal(string(ev.Data))
		}
		out = append(out, pluginsdk.UpstreamEvent{Event: ev.Event, Data: data})
	}
}

// streamAdapter runs a stream hook the way the host does: batch by batch,
// carrying the state blob, the end flag on the last call.
type streamHook func(pluginsdk.StreamInput) (pluginsdk.Output, error)

func runStream(t testing.TB, hook streamHook, batches [][]byte) []json.RawMessage {
	t.Helper()
	var state []byte
	var all []json.RawMessage
	for i, b := range batches {
		out, err := hook(pluginsdk.StreamInput{State: state, Batch: b, End: i == len(batches)-1})
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		state = out.State
		if out.Status == pluginsdk.StatusOK {
			var items []json.RawMessage
			if err := json.Unmarshal(out.Body, &items); err != nil {
				t.Fatalf("batch %d: body is not an array: %v\n%s", i, err, out.Body)
			}
			all = append(all, items...)
		}
	}
	return all
}

// splitBatches groups events n per batch (n <= 0: one batch).
func splitBatches(t testing.TB, events []pluginsdk.UpstreamEvent, n int) [][]byte {
	t.Helper()
	if n <= 0 {
		n = len(events)
	}
	var out [][]byte
	for i := 0; i < len(events); i += n {
		b, err := json.Marshal(events[i:min(i+n, len(events))])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		out = append(out, []byte("[]"))
	}
	return out
}

func arrayOf(items []json.RawMessage) []byte {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.Write(it)
	}
	sb.WriteByte(']')
	return []byte(sb.String())
}

func globTestdata(dir string) ([]string, error) {
	return filepath.Glob(filepath.Join("testdata", dir, "*.json"))
}

func readFileBytes(path string) ([]byte, error) { return os.ReadFile(path) }
