package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/fakeupstream"
	"github.com/wasmgate/gateway/host/sse"
	"github.com/wasmgate/gateway/pluginsdk"
)

// exchange plays the host against the Cohere fake: adapt_request, send the
// spec, then adapt_response (or adapt_stream, one event per batch, state
// seeded with the spec's context). It proves the adapter speaks the fake's
// exact wire, not only the shapes of the golden files.
func exchange(t *testing.T, fake *fakeupstream.Server, reqType string, stream bool, body string, hdr map[string]string) ([]byte, []json.RawMessage, error) {
	t.Helper()
	a := New()
	in, _ := json.Marshal(pluginsdk.AdaptRequestInput{RequestType: reqType, Provider: "cohere", Model: "command-r-plus",
		Stream: stream, BaseURL: fake.URL + "/v2", Body: json.RawMessage(body)})
	out, err := a.AdaptRequest(in)
	if err != nil {
		t.Fatalf("adapt_request: %v", err)
	}
	var spec pluginsdk.UpstreamRequest
	if err := json.Unmarshal(out.Body, &spec); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(spec.Method, fake.URL+"/v2"+spec.Path, bytes.NewReader(spec.Body))
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := fake.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("fake answered %d: %s (sent %s)", resp.StatusCode, b, spec.Body)
	}
	if !spec.Stream {
		b, _ := io.ReadAll(resp.Body)
		rin, _ := json.Marshal(pluginsdk.AdaptResponseInput{RequestType: reqType, Provider: "cohere", Model: "command-r-plus",
			Status: 200, Body: b, Context: spec.Context})
		out, err := a.AdaptResponse(rin)
		return out.Body, nil, err
	}
	r := sse.NewReader(resp.Body, 0)
	state := []byte(spec.Context)
	var chunks []json.RawMessage
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil, chunks, nil
		}
		if err != nil {
			t.Fatal(err)
		}
		batch, _ := json.Marshal([]pluginsdk.UpstreamEvent{{Event: ev.Event, Data: append([]byte(nil), ev.Data...)}})
		out, err := a.AdaptStream(pluginsdk.StreamInput{State: state, Batch: batch})
		if err != nil {
			return nil, chunks, err
		}
		state = append(state[:0], out.State...)
		if out.Status == pluginsdk.StatusOK {
			var cs []json.RawMessage
			if err := json.Unmarshal(out.Body, &cs); err != nil {
				t.Fatalf("%v: %s", err, out.Body)
			}
			chunks = append(chunks, cs...)
		}
	}
}

func TestAgainstFakeUpstream(t *testing.T) {
	fake := fakeupstream.Start(t, fakeupstream.Cohere, fakeupstream.Options{APIKey: "k"})
	tools := `,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`

	body, _, err := exchange(t, fake, pluginsdk.RequestChat, false, `{"messages":[{"role":"user","content":"hi"}]`+tools+`}`, nil)
	var cr pluginsdk.ChatResponse
	if err != nil || json.Unmarshal(body, &cr) != nil || len(cr.Choices) != 1 || string(cr.Choices[0].Message.Content) != `"hello from cohere"` ||
		cr.Choices[0].FinishReason != "tool_calls" || cr.Choices[0].Message.ToolCalls[0].Function.Arguments != `{"echo":"hello"}` ||
		cr.Usage == nil || cr.Usage.PromptTokens == 0 || cr.Usage.CompletionTokens != 5 || cr.Model != "command-r-plus" {
		t.Fatalf("chat: %v %s", err, body)
	}

	_, chunks, err := exchange(t, fake, pluginsdk.RequestChat, true, `{"stream":true,"messages":[{"role":"user","content":"hi"}]`+tools+`}`, nil)
	all := string(mustJSON(chunks))
	if err != nil || !strings.Contains(all, `"finish_reason":"tool_calls"`) || !strings.Contains(all, `"arguments":"\"hello\"}"`) ||
		!strings.Contains(all, `"usage":{"prompt_tokens"`) || !strings.Contains(all, `"model":"command-r-plus"`) {
		t.Fatalf("stream: %v %s", err, all)
	}

	_, chunks, err = exchange(t, fake, pluginsdk.RequestChat, true, `{"stream":true,"messages":[]}`, map[string]string{fakeupstream.HeaderStreamError: "before"})
	if pe, ok := err.(*pluginsdk.Error); !ok || pe.Code != 500 || len(chunks) != 0 {
		t.Fatalf("error before content must fail with no chunk out: %v %d", err, len(chunks))
	}

	body, _, err = exchange(t, fake, pluginsdk.RequestEmbedding, false, `{"input":["a","b"],"encoding_format":"base64"}`, nil)
	var er struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
		Usage pluginsdk.Usage `json:"usage"`
	}
	if err != nil || json.Unmarshal(body, &er) != nil || len(er.Data) != 2 || len(er.Data[0].Embedding) != 44 || er.Usage.PromptTokens == 0 {
		t.Fatalf("embeddings: %v %s", err, body) // 8 dims * 4 bytes -> 44 base64 chars
	}

	body, _, err = exchange(t, fake, pluginsdk.RequestRerank, false, `{"query":"abc","documents":["xyz","abc d"],"top_n":1}`, nil)
	if err != nil || !strings.Contains(string(body), `"results":[{"index":1,`) || !strings.Contains(string(body), `"search_units":1`) {
		t.Fatalf("rerank: %v %s", err, body)
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }
