package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/eventstream"
	"github.com/wasmgate/gateway/host/fakeupstream"
	"github.com/wasmgate/gateway/host/upstreamauth"
	"github.com/wasmgate/gateway/pluginsdk"
)

// These tests run the adapter against host/fakeupstream's Bedrock server
// the way the host does: build the request from the adapter's spec, sign it
// with SigV4 (the fake verifies the signature, which catches a path
// escaped differently from the AWS SDKs), decode event-stream frames into
// UpstreamEvents and feed them back to the adapter.

var testCreds = upstreamauth.AWSCredentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}

const fakeModel = "anthropic.claude-3-5-sonnet-20240620-v1:0"

func chatInput(baseURL string, stream bool) []byte {
	in := map[string]any{
		"request_type": "chat.completion", "provider": "bedrock", "model": fakeModel, "stream": stream,
		"base_url": baseURL, "key_config": map[string]any{"region": "us-east-1"},
		"body": map[string]any{"model": "claude", "stream": stream, "messages": []any{
			map[string]any{"role": "system", "content": "Be brief."},
			map[string]any{"role": "user", "content": "Echo hello with the tool."}},
			"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "echo",
				"parameters": map[string]any{"type": "object", "properties": map[string]any{"echo": map[string]any{"type": "string"}}}}}},
			"max_tokens": 64},
	}
	b, _ := json.Marshal(in)
	return b
}

// send performs the adapter's upstream request spec, signed like the host.
func send(t *testing.T, specJSON []byte, header http.Header) *http.Response {
	t.Helper()
	var spec pluginsdk.UpstreamRequest
	if err := json.Unmarshal(specJSON, &spec); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(spec.Method, spec.URL, bytes.NewReader(spec.Body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range spec.Headers {
		req.Header.Set(k, v)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	signer, err := upstreamauth.NewBedrockSigner(testCreds, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := signer.Apply(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// decodeEvents turns an event-stream body into UpstreamEvents exactly as
// host/inference's eventReader does.
func decodeEvents(t *testing.T, r io.Reader) []pluginsdk.UpstreamEvent {
	t.Helper()
	dec := eventstream.NewDecoder(r)
	var evs []pluginsdk.UpstreamEvent
	for {
		m, err := dec.Decode()
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
		// The decoder reuses its buffer; the host copies payloads too.
		payload := append([]byte(nil), m.Payload...)
		if mt := m.Header(eventstream.HeaderMessageType); mt == "exception" || mt == "error" {
			name := m.Header(eventstream.HeaderExceptionType)
			if name == "" {
				name = m.Header(eventstream.HeaderErrorCode)
			}
			evs = append(evs, pluginsdk.UpstreamEvent{Event: name, Data: payload, Exception: true})
			continue
		}
		evs = append(evs, pluginsdk.UpstreamEvent{Event: m.Header(eventstream.HeaderEventType), Data: payload})
	}
}

func TestFakeConverse(t *testing.T) {
	fake := fakeupstream.Start(t, fakeupstream.Bedrock, fakeupstream.Options{AWS: &testCreds, CachedTokens: 5})
	a := New()
	spec, err := a.AdaptRequest(chatInput(fake.URL, false))
	if err != nil {
		t.Fatal(err)
	}
	resp := send(t, spec.Body, nil)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("fake answered %d: %s", resp.StatusCode, body)
	}
	if got := fake.LastRequest().Path; got != "/model/"+fakeModel+"/converse" {
		t.Errorf("path %q", got)
	}
	in, _ := json.Marshal(pluginsdk.AdaptResponseInput{RequestType: pluginsdk.RequestChat, Provider: "bedrock", Model: fakeModel,
		Status: 200, Headers: map[string]string{"x-amzn-requestid": "r-1"}, Body: body})
	out, err := a.AdaptResponse(in)
	if err != nil {
		t.Fatal(err)
	}
	var cr pluginsdk.ChatResponse
	if err := json.Unmarshal(out.Body, &cr); err != nil {
		t.Fatal(err)
	}
	m := cr.Choices[0].Message
	if cr.ID != "chatcmpl-r-1" || cr.Model != fakeModel || string(m.Content) != `"hello from bedrock"` ||
		len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Name != "echo" || m.ToolCalls[0].Function.Arguments != `{"echo":"hello"}` ||
		cr.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("%s", out.Body)
	}
	if u := cr.Usage; u == nil || u.PromptTokens <= 5 || u.CompletionTokens != 5 || u.TotalTokens != u.PromptTokens+5 ||
		u.PromptTokensDetails == nil || u.PromptTokensDetails.CachedTokens != 5 {
		t.Fatalf("usage %s", out.Body)
	}
}

func TestFakeConverseStream(t *testing.T) {
	fake := fakeupstream.Start(t, fakeupstream.Bedrock, fakeupstream.Options{AWS: &testCreds})
	a := New()
	spec, err := a.AdaptRequest(chatInput(fake.URL, true))
	if err != nil {
		t.Fatal(err)
	}
	resp := send(t, spec.Body, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/vnd.amazon.eventstream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("fake answered %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	evs := decodeEvents(t, resp.Body)
	transcript, err := json.MarshalIndent(evs, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join("testdata", "stream", "tool_use.events.json")
	if *update {
		if err := os.WriteFile(p, append(transcript, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if want, err := os.ReadFile(p); err != nil || !bytes.Equal(bytes.TrimSpace(want), transcript) {
		t.Errorf("the fake's transcript changed (rerun with -update if intended): %v\n%s", err, transcript)
	}
	batch, _ := json.Marshal(evs)
	chunks, err := streamAll(t, batch, 1)
	if err != nil {
		t.Fatal(err)
	}
	checkToolStream(t, chunks)
}

// checkToolStream reassembles a chunk stream and checks text, tool call,
// finish reason and usage survived.
func checkToolStream(t *testing.T, raw []json.RawMessage) {
	t.Helper()
	var text, args, name, id, finish string
	var usage *pluginsdk.Usage
	var ids = map[string]bool{}
	for i, r := range raw {
		var c pluginsdk.ChatChunk
		if err := json.Unmarshal(r, &c); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		ids[c.ID] = true
		if c.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %d: %s", i, r)
		}
		if i == 0 && (len(c.Choices) == 0 || c.Choices[0].Delta.Role != "assistant") {
			t.Fatalf("first chunk has no role: %s", r)
		}
		if c.Usage != nil {
			usage = c.Usage
			if len(c.Choices) != 0 {
				t.Fatalf("usage chunk with choices: %s", r)
			}
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				text += *ch.Delta.Content
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil || *tc.Index != 0 {
					t.Fatalf("tool call index: %s", r)
				}
				if tc.ID != "" {
					id, name = tc.ID, tc.Function.Name
				}
				args += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if len(ids) != 1 {
		t.Errorf("chunks carry %d different ids", len(ids))
	}
	if text != "hello from bedrock" || id != "tooluse_fake0001" || name != "echo" || args != `{"echo":"hello"}` || finish != "tool_calls" {
		t.Errorf("text %q id %q name %q args %q finish %q", text, id, name, args, finish)
	}
	if usage == nil || usage.PromptTokens == 0 || usage.CompletionTokens != 5 || usage.TotalTokens != usage.PromptTokens+5 {
		t.Errorf("usage %+v", usage)
	}
}

// The fake's in-stream throttling maps to a 429 the host can retry on.
func TestFakeStreamThrottled(t *testing.T) {
	fake := fakeupstream.Start(t, fakeupstream.Bedrock, fakeupstream.Options{AWS: &testCreds})
	for _, where := range []string{"before", "mid"} {
		spec, err := New().AdaptRequest(chatInput(fake.URL, true))
		if err != nil {
			t.Fatal(err)
		}
		resp := send(t, spec.Body, http.Header{fakeupstream.HeaderStreamError: {where}})
		batch, err := json.Marshal(decodeEvents(t, resp.Body))
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := streamAll(t, batch, 1)
		var pe *pluginsdk.Error
		if !errors.As(err, &pe) || pe.Code != 429 || !strings.Contains(pe.Message, "Too many requests") {
			t.Fatalf("%s: %v", where, err)
		}
		// Before content nothing reached the client, so the host may retry.
		if where == "before" && len(chunks) != 0 {
			t.Errorf("chunks before the exception: %s", chunks)
		}
	}
}
