package plugintest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
)

// Golden-file helpers shared by provider adapters: each adapter keeps
// testdata/<hook>/*.in.json inputs with *.want.json expected outputs.

// Golden runs fn over every testdata/<dir>/*.in.json and compares its
// result with the .want.json next to it (semantically, so the files stay
// readable). A hook error is recorded as {"error":{"code":N,"message":...}}.
func Golden(t *testing.T, dir string, update bool, fn func(t *testing.T, in []byte) (any, error)) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", dir, "*.in.json"))
	if len(files) == 0 {
		t.Fatalf("no golden cases in testdata/%s", dir)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".in.json")
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, herr := fn(t, in)
			if herr != nil {
				pe := pluginsdk.AsError(herr)
				got = map[string]any{"error": map[string]any{"code": pe.Code, "message": pe.Message}, "before_error": got}
			}
			gotJSON, err := json.MarshalIndent(Normalize(t, got), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			wantFile := strings.TrimSuffix(f, ".in.json") + ".want.json"
			if update {
				if err := os.WriteFile(wantFile, append(gotJSON, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(wantFile)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			wantJSON, _ := json.MarshalIndent(Normalize(t, json.RawMessage(want)), "", "  ")
			if !bytes.Equal(gotJSON, wantJSON) {
				t.Errorf("%s:\n got %s\nwant %s", name, gotJSON, wantJSON)
			}
		})
	}
}

// Normalize turns raw JSON outputs into plain values, so comparisons
// ignore key order and whitespace but not content; it also proves every
// output is valid JSON.
func Normalize(t testing.TB, v any) any {
	t.Helper()
	switch x := v.(type) {
	case json.RawMessage:
		var out any
		if err := json.Unmarshal(x, &out); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, x)
		}
		return out
	case []byte:
		return Normalize(t, json.RawMessage(x))
	case []json.RawMessage:
		out := make([]any, len(x))
		for i, r := range x {
			out[i] = Normalize(t, r)
		}
		return out
	case map[string]any:
		for k, e := range x {
			x[k] = Normalize(t, e)
		}
	}
	return v
}

// StreamCase is the input of a stream golden case: the upstream events in
// order (as the host frames them).
type StreamCase struct {
	State  string                    `json:"state"`
	Events []pluginsdk.UpstreamEvent `json:"events"`
}

// RunStream feeds the events one per batch, then all in one batch, and
// fails unless both give the same chunks: a state machine that depends on
// batch boundaries would break on a real network's timing.
func RunStream(t testing.TB, in []byte, hook func(pluginsdk.StreamInput) (pluginsdk.Output, error)) (any, error) {
	t.Helper()
	var sc StreamCase
	if err := json.Unmarshal(in, &sc); err != nil {
		t.Fatal(err)
	}
	feed := func(batches [][]pluginsdk.UpstreamEvent) ([]json.RawMessage, error) {
		var all []json.RawMessage
		state := []byte(sc.State)
		for i, batch := range batches {
			b, _ := json.Marshal(batch)
			out, err := hook(pluginsdk.StreamInput{State: state, Batch: b, End: i == len(batches)-1})
			if err != nil {
				return all, err
			}
			state = append([]byte(nil), out.State...)
			if out.Status == pluginsdk.StatusNoOutput {
				continue
			}
			var chunks []json.RawMessage
			if err := json.Unmarshal(out.Body, &chunks); err != nil {
				t.Fatalf("batch %d: output is not a JSON array: %v\n%s", i, err, out.Body)
			}
			all = append(all, chunks...)
		}
		return all, nil
	}
	var single [][]pluginsdk.UpstreamEvent
	for _, ev := range sc.Events {
		single = append(single, []pluginsdk.UpstreamEvent{ev})
	}
	one, err1 := feed(single)
	whole, err2 := feed([][]pluginsdk.UpstreamEvent{sc.Events})
	if (err1 == nil) != (err2 == nil) {
		t.Fatalf("per-event and whole-batch runs disagree on the error: %v / %v", err1, err2)
	}
	if err1 == nil {
		a, _ := json.Marshal(Normalize(t, one))
		b, _ := json.Marshal(Normalize(t, whole))
		if !bytes.Equal(a, b) {
			t.Fatalf("per-event and whole-batch runs differ:\n%s\n%s", a, b)
		}
	}
	if one == nil {
		one = []json.RawMessage{}
	}
	return one, err1
}

// ErrCode extracts the status of a hook error (0 when err is nil).
func ErrCode(err error) int {
	var pe *pluginsdk.Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	if err != nil {
		return -1
	}
	return 0
}
