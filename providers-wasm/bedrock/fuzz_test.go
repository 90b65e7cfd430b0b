package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// The decoders face upstream bytes: whatever arrives, they must answer an
// *pluginsdk.Error or valid JSON, never panic or loop. (A panic in the
// guest kills the wasm instance.)

func seedFiles(f *testing.F, pattern string) {
	m, _ := filepath.Glob(filepath.Join("testdata", pattern))
	for _, p := range m {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

func checkOutput(t *testing.T, out pluginsdk.Output, err error) {
	if err != nil {
		var pe *pluginsdk.Error
		if !errors.As(err, &pe) {
			t.Fatalf("error is not a *pluginsdk.Error: %v", err)
		}
		return
	}
	if out.Status == pluginsdk.StatusOK && !json.Valid(out.Body) {
		t.Fatalf("invalid JSON output: %s", out.Body)
	}
	if len(out.State) > 0 && !json.Valid(out.State) {
		t.Fatalf("invalid state: %s", out.State)
	}
}

func FuzzAdaptResponse(f *testing.F) {
	seedFiles(f, "responses/*.json")
	f.Add([]byte(`{"request_type":"chat.completion","body":{"output":{"message":{"content":[{"text":"a\"b"},{"toolUse":{"input":[1,{"x":"\u00e9"}]}}]}},"usage":{"inputTokens":"x"}}}`))
	f.Add([]byte(`{"body":"not json"}`))
	f.Add([]byte(`{"body":{"output":{"message":{"content":[{"text":"\`))
	a := New()
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := a.AdaptResponse(in)
		checkOutput(t, out, err)
	})
}

func FuzzAdaptStream(f *testing.F) {
	m, _ := filepath.Glob(filepath.Join("testdata", "stream", "*.events.json"))
	for _, p := range m {
		if b, err := os.ReadFile(p); err == nil {
			f.Add([]byte(nil), b)
		}
	}
	f.Add([]byte(`{"id":"x","created":1,"role":true,"tools":[3,"a",{}]}`), []byte(`[{"event":"contentBlockDelta","data":{"contentBlockIndex":3,"delta":{"toolUse":{"input":"{\"a"}}}}]`))
	f.Add([]byte(`{`), []byte(`[`))
	f.Add([]byte(nil), []byte(`[{"event":"throttlingException","exception":true,"data":"x"}]`))
	a := New()
	f.Fuzz(func(t *testing.T, state, batch []byte) {
		out, err := a.AdaptStream(pluginsdk.StreamInput{State: state, Batch: batch})
		checkOutput(t, out, err)
	})
}

func FuzzAdaptRequest(f *testing.F) {
	seedFiles(f, "requests/*.json")
	a := New()
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := a.AdaptRequest(in)
		checkOutput(t, out, err)
	})
}

// jsonx.Valid (which began here as validJSON) must agree with
// encoding/json on every input, bedrock payloads included.
func FuzzValidJSON(f *testing.F) {
	seedFiles(f, "*/*.json")
	for _, s := range []string{``, ` `, `1`, `-0.5e+3`, `01`, `1.`, `-`, `"\u00e9\ud83d"`, `"\x"`, "\"\x01\"", `[1,]`, `{"a":1,}`,
		`{"a" 1}`, `[[[]]]`, `{"a":[{"b":null}]}`, `tru`, `true false`, `[1 2]`, `{,}`, `"abc`, `"\u12"`, "\xff", `["\xff"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := jsonx.Valid(b), json.Valid(b); got != want {
			t.Fatalf("jsonx.Valid(%q) = %v, json.Valid = %v", b, got, want)
		}
	})
}
