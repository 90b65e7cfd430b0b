package convert

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOfficialSDK serves this package's converted streams to the official
// openai npm client (testdata/sdk, pinned by package-lock.json), which is
// the strictest consumer of the event sequence: its stream helper throws on
// an event for a missing item or content part.
func TestOfficialSDK(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	dir, _ := filepath.Abs(filepath.Join("testdata", "sdk"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai")); err != nil {
		t.Fatalf("the openai npm package is missing: run `npm ci --prefix %s` (make test-deps does)",
			filepath.Join("host", "inference", "convert", "testdata", "sdk"))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		stream, _ := req["stream"].(bool)
		switch {
		case r.URL.Path == "/responses" && stream:
			_, sse := runResponsesStream(t, streamChunks)
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(sse)
		case r.URL.Path == "/responses":
			out, err := ChatToResponse([]byte(chatWithTools), "anthropic/claude-sonnet-4")
			if err != nil {
				t.Error(err)
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(out)
		case r.URL.Path == "/completions":
			s := NewCompletionStream("anthropic/claude")
			var sse []byte
			for _, c := range []string{
				`{"id":"chatcmpl-c1","created":5,"model":"claude","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`,
				`{"id":"chatcmpl-c1","created":5,"model":"claude","choices":[{"index":0,"delta":{"content":" there"},"finish_reason":"stop"}]}`,
				`{"id":"chatcmpl-c1","created":5,"model":"claude","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}`,
			} {
				ev, _ := s.Chunk([]byte(c))
				for _, e := range ev {
					sse = e.AppendSSE(sse)
				}
			}
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(append(sse, "data: [DONE]\n\n"...))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	cmd := exec.Command(node, filepath.Join(dir, "client.js"), srv.URL)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node client failed: %v\n%s", err, stderr)
	}
	var got struct {
		Helper struct {
			OutputText string     `json:"output_text"`
			Calls      [][]string `json:"calls"`
			Status     string     `json:"status"`
			Usage      struct {
				TotalTokens        int `json:"total_tokens"`
				InputTokensDetails struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"input_tokens_details"`
			} `json:"usage"`
			Events int `json:"events"`
		} `json:"helper"`
		Raw struct {
			Text           string            `json:"text"`
			Args           map[string]string `json:"args"`
			CompletedItems int               `json:"completed_items"`
		} `json:"raw"`
		Nonstream struct {
			OutputText string   `json:"output_text"`
			Items      []string `json:"items"`
		} `json:"nonstream"`
		Completions struct {
			Text        string `json:"text"`
			TotalTokens int    `json:"total_tokens"`
		} `json:"completions"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	h := got.Helper
	if h.OutputText != "Checking both." || h.Status != "completed" || h.Usage.TotalTokens != 90 ||
		h.Usage.InputTokensDetails.CachedTokens != 32 || h.Events != 32 {
		t.Errorf("stream helper: %+v", h)
	}
	calls, _ := json.Marshal(h.Calls)
	if string(calls) != `[["get_weather","call_1","{\"city\":\"Paris\"}"],["get_time","call_2","{\"tz\":\"CET\"}"]]` {
		t.Errorf("stream helper calls: %s", calls)
	}
	if got.Raw.Text != "Checking both." || got.Raw.Args["fc_call_1"] != `{"city":"Paris"}` ||
		got.Raw.Args["fc_call_2"] != `{"tz":"CET"}` || got.Raw.CompletedItems != 5 {
		t.Errorf("raw iterator: %+v", got.Raw)
	}
	if got.Nonstream.OutputText != "Checking both cities." ||
		strings.Join(got.Nonstream.Items, ",") != "reasoning,message,function_call,function_call" {
		t.Errorf("non-streamed: %+v", got.Nonstream)
	}
	if got.Completions.Text != "Hello there" || got.Completions.TotalTokens != 6 {
		t.Errorf("completions: %+v", got.Completions)
	}
	t.Logf("openai client assembled: %s", out)
}
