package inference_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/inference"
	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/host/server"
)

// strictWire translates like openAIWire but, as the wasm adapters do,
// answers a batch holding an upstream error event with the error alone:
// no chunks for the content that came before it in the same batch.
type strictWire struct{ openAIWire }

func (a *strictWire) AdaptStream(_ context.Context, state []byte, events []inference.UpstreamEvent, end bool) ([]json.RawMessage, []byte, error) {
	var out []json.RawMessage
	for _, ev := range events {
		if strings.HasPrefix(string(ev.Data), `{"error"`) {
			return nil, nil, &plugins.Error{Plugin: a.Name(), Hook: "adapt_stream", Kind: plugins.KindRejected, Code: 502, Message: "upstream error event"}
		}
		if !strings.HasPrefix(string(ev.Data), `"`) {
			out = append(out, ev.Data)
		}
	}
	return out, state, nil
}

// TestContentBeforeAMidStreamErrorInOneBurst: content that arrives in the
// same read as a mid-stream error still reaches the client before the
// error event. The upstream writes " world" and its error in one write,
// after a pause, so they form one batch after the stream opened.
func TestContentBeforeAMidStreamErrorInOneBurst(t *testing.T) {
	chunk := func(content string) string {
		return `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` + content + `"},"finish_reason":null}]}` + "\n\n"
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		_, _ = w.Write([]byte(chunk("hello")))
		f.Flush()
		time.Sleep(100 * time.Millisecond)
		_, _ = w.Write([]byte(chunk(" world") + `data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n"))
		f.Flush()
	}))
	t.Cleanup(up.Close)
	ad := &strictWire{openAIWire{calls: map[string]int{}}}
	g := testgw.Start(t, testgw.Options{ServerOptions: []server.Option{server.WithAdapters(source(ad))}})
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "openai", "network_config": map[string]any{"base_url": up.URL + "/v1", "max_retries": 0}})
	g.Expect(201, "POST", "/api/providers/openai/keys", map[string]any{"name": "k", "value": "sk-x"})
	r := g.Expect(200, "POST", "/v1/chat/completions", chat("openai/gpt-4o-mini", true, ""))
	body := string(r.Body)
	world, errAt := strings.Index(body, `" world"`), strings.Index(body, `"error"`)
	if !strings.Contains(body, `"hello"`) || world < 0 || errAt < 0 || world > errAt {
		t.Fatalf("want hello, then world, then the error event: %s", body)
	}
	if strings.Count(body, `" world"`) != 1 {
		t.Fatalf("content repeated: %s", body)
	}
}
