package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
)

var update = flag.Bool("update", false, "rewrite golden files and the recorded stream transcript")

// normalize makes generated parts stable for golden files: "created" is
// the wall clock and generated ids carry a per-instance counter.
func normalize(t *testing.T, b []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, b)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["created"]; ok {
				x["created"] = 0
			}
			if id, ok := x["id"].(string); ok && strings.HasPrefix(id, "chatcmpl-bedrock-") {
				x["id"] = "chatcmpl-bedrock-N"
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// golden compares got (normalized) with testdata/name, or rewrites it
// with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	got = normalize(t, got)
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n got: %s\nwant: %s", name, got, want)
	}
}

func readJSON(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	// Compact, as the host sends it.
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return c.Bytes()
}

func cases(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range m {
		if !strings.HasSuffix(p, ".golden.json") {
			names = append(names, strings.TrimSuffix(filepath.Base(p), ".json"))
		}
	}
	if len(names) == 0 {
		t.Fatalf("no cases in testdata/%s", dir)
	}
	return names
}

func TestRequestGolden(t *testing.T) {
	a := New()
	for _, name := range cases(t, "requests") {
		t.Run(name, func(t *testing.T) {
			out, err := a.AdaptRequest(readJSON(t, "requests/"+name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var spec pluginsdk.UpstreamRequest
			if err := json.Unmarshal(out.Body, &spec); err != nil {
				t.Fatalf("spec: %v\n%s", err, out.Body)
			}
			golden(t, "requests/"+name+".golden.json", out.Body)
		})
	}
}

func TestResponseGolden(t *testing.T) {
	a := New()
	for _, name := range cases(t, "responses") {
		t.Run(name, func(t *testing.T) {
			out, err := a.AdaptResponse(readJSON(t, "responses/"+name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "responses/"+name+".golden.json", out.Body)
		})
	}
}

// streamAll runs a transcript through AdaptStream in batches of size n
// (n <= 0: one batch) and returns every chunk.
func streamAll(t testing.TB, events []byte, n int) ([]json.RawMessage, error) {
	var evs []json.RawMessage
	if err := json.Unmarshal(events, &evs); err != nil {
		t.Fatal(err)
	}
	if n <= 0 {
		n = len(evs)
	}
	a := New()
	var state []byte
	var chunks []json.RawMessage
	for i := 0; i < len(evs) || i == 0; i += n {
		j := min(i+n, len(evs))
		batch, _ := json.Marshal(evs[i:j])
		out, err := a.AdaptStream(pluginsdk.StreamInput{State: state, Batch: batch, End: j == len(evs)})
		if err != nil {
			return chunks, err
		}
		state = out.State
		if out.Status == pluginsdk.StatusOK {
			var cs []json.RawMessage
			if err := json.Unmarshal(out.Body, &cs); err != nil {
				t.Fatalf("chunks: %v\n%s", err, out.Body)
			}
			chunks = append(chunks, cs...)
		}
	}
	return chunks, nil
}

func TestStreamGolden(t *testing.T) {
	m, _ := filepath.Glob(filepath.Join("testdata", "stream", "*.events.json"))
	if len(m) < 3 {
		t.Fatalf("stream transcripts missing: %v", m)
	}
	for _, p := range m {
		name := strings.TrimSuffix(filepath.Base(p), ".events.json")
		t.Run(name, func(t *testing.T) {
			events := readJSON(t, "stream/"+name+".events.json")
			one, err := streamAll(t, events, 1)
			if err != nil {
				t.Fatal(err)
			}
			all, err := streamAll(t, events, 0)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(one)
			b, _ := json.Marshal(all)
			// Batching must not change the result: the state carries
			// everything between batches.
			if !bytes.Equal(normalize(t, a), normalize(t, b)) {
				t.Errorf("batching changes chunks:\n%s\n%s", a, b)
			}
			golden(t, "stream/"+name+".golden.json", a)
		})
	}
}

func TestRequestErrors(t *testing.T) {
	a := New()
	body := func(s string) string { return `"body":` + s }
	msgs := `{"messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct {
		name, in, want string
		code           int
	}{
		{"no region", `{"request_type":"chat.completion","model":"m",` + body(msgs) + `}`, "bedrock_key_config.region", 400},
		{"bad region", `{"request_type":"chat.completion","model":"m","key_config":{"region":"evil.com/x"},` + body(msgs) + `}`, "not an AWS region", 400},
		{"no model", `{"request_type":"chat.completion","key_config":{"region":"us-east-1"},` + body(msgs) + `}`, "model", 400},
		{"http image", `{"request_type":"chat.completion","model":"m","key_config":{"region":"us-east-1"},` +
			body(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`) + `}`, "inline images", 400},
		{"bad image type", `{"request_type":"chat.completion","model":"m","key_config":{"region":"us-east-1"},` +
			body(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/bmp;base64,AA=="}}]}]}`) + `}`, "image/bmp", 400},
		{"bad role", `{"request_type":"chat.completion","model":"m","key_config":{"region":"us-east-1"},` +
			body(`{"messages":[{"role":"function","content":"x"}]}`) + `}`, "role", 400},
		{"bad args", `{"request_type":"chat.completion","model":"m","key_config":{"region":"us-east-1"},` +
			body(`{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"[1"}}]}]}`) + `}`, "arguments", 400},
		{"no messages", `{"request_type":"chat.completion","model":"m","key_config":{"region":"us-east-1"},` + body(`{"messages":[]}`) + `}`, "at least one", 400},
		{"thinking small max", `{"request_type":"chat.completion","model":"anthropic.claude-3-7","key_config":{"region":"us-east-1"},` +
			body(`{"messages":[{"role":"user","content":"x"}],"reasoning_effort":"high","max_tokens":100}`) + `}`, "1024", 400},
		{"titan batch", `{"request_type":"embedding","model":"amazon.titan-embed-text-v2:0","key_config":{"region":"us-east-1"},` +
			body(`{"input":["a","b"]}`) + `}`, "one text", 400},
		{"tokens", `{"request_type":"embedding","model":"cohere.embed-english-v3","key_config":{"region":"us-east-1"},` +
			body(`{"input":[[1,2]]}`) + `}`, "not tokens", 400},
		{"unsupported type", `{"request_type":"rerank","model":"m","key_config":{"region":"us-east-1"},"body":{}}`, "not supported", 400},
		{"not json", `{"request_type":`, "not a JSON object", 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := a.AdaptRequest([]byte(c.in))
			var pe *pluginsdk.Error
			if !errors.As(err, &pe) || pe.Code != c.code || !strings.Contains(pe.Message, c.want) {
				t.Fatalf("got %v, want %d containing %q", err, c.code, c.want)
			}
		})
	}
}

func TestExceptionMapping(t *testing.T) {
	for name, code := range map[string]int{
		"throttlingException": 429, "serviceUnavailableException": 503, "internalServerException": 500,
		"modelStreamErrorException": 500, "validationException": 400, "somethingNewException": 500,
		"ThrottlingException": 429, "modelTimeoutException": 408, "": 500,
	} {
		batch := `[{"event":"messageStart","data":{"role":"assistant"}},{"event":"` + name +
			`","data":{"message":"nope: ` + name + `"},"exception":true}]`
		out, err := New().AdaptStream(pluginsdk.StreamInput{Batch: []byte(batch)})
		var pe *pluginsdk.Error
		if !errors.As(err, &pe) || pe.Code != code || !strings.Contains(pe.Message, "nope: "+name) {
			t.Errorf("%s: got %v (out %s), want code %d", name, err, out.Body, code)
		}
	}
}

// Before any content the adapter emits nothing, so an exception that
// follows messageStart can still be retried by the host.
func TestRoleHeldUntilContent(t *testing.T) {
	out, err := New().AdaptStream(pluginsdk.StreamInput{Batch: []byte(`[{"event":"messageStart","data":{"role":"assistant"}}]`)})
	if err != nil || out.Status != pluginsdk.StatusNoOutput || len(out.State) == 0 {
		t.Fatalf("%v %v %s", out.Status, err, out.Body)
	}
}

func TestEscapePathLabel(t *testing.T) {
	for in, want := range map[string]string{
		"anthropic.claude-3-5-sonnet-20240620-v1:0":                        "anthropic.claude-3-5-sonnet-20240620-v1%3A0",
		"arn:aws:bedrock:us-east-1:1:inference-profile/us.meta.llama-v1:0": "arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.meta.llama-v1%3A0",
		"a b~_.": "a%20b~_.",
	} {
		if got := escapePathLabel(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

func TestManifest(t *testing.T) {
	m := pluginsdk.FullManifest(New())
	if m.Name != "adapter-bedrock" || m.Kind != pluginsdk.KindProvider || m.Wire != "bedrock" ||
		!m.HasCapability("request:chat.completion") || !m.HasCapability("request:list_models") ||
		!m.Implements(pluginsdk.HookAdaptRequest) || !m.Implements(pluginsdk.HookAdaptResponse) || !m.Implements(pluginsdk.HookAdaptStream) {
		t.Fatalf("%+v", m)
	}
}
