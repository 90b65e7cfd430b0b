package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
)

// Golden files hold a fixed "created".
func TestMain(m *testing.M) {
	now = func() int64 { return 1700000000 }
	os.Exit(m.Run())
}

func TestManifest(t *testing.T) {
	m := pluginsdk.FullManifest(New())
	if m.Name != "adapter-cohere" || m.Wire != "cohere" || m.HasCapability(pluginsdk.CapabilityPassthrough) ||
		!m.HasCapability("request:rerank") || !m.Implements(pluginsdk.HookAdaptStream) {
		t.Fatalf("%+v", m)
	}
}

func TestAdaptRequestGolden(t *testing.T) {
	runGolden(t, "adapt_request", func(t *testing.T, in []byte) (any, error) {
		out, err := New().AdaptRequest(in)
		if err != nil {
			return nil, err
		}
		var spec pluginsdk.UpstreamRequest
		if err := json.Unmarshal(out.Body, &spec); err != nil {
			t.Fatalf("spec: %v\n%s", err, out.Body)
		}
		return json.RawMessage(out.Body), nil
	})
}

func TestAdaptResponseGolden(t *testing.T) {
	runGolden(t, "adapt_response", func(t *testing.T, in []byte) (any, error) {
		out, err := New().AdaptResponse(in)
		if err != nil {
			return nil, err
		}
		return json.RawMessage(out.Body), nil
	})
}

func TestAdaptStreamGolden(t *testing.T) {
	runGolden(t, "adapt_stream", func(t *testing.T, in []byte) (any, error) {
		return runStream(t, in, New().AdaptStream)
	})
}

// The streamed tool call and usage arrive intact: arguments reassembled
// from the deltas are the upstream's, usage is the billed units.
func TestStreamToolCallAndUsage(t *testing.T) {
	in, _ := os.ReadFile("testdata/adapt_stream/chat_tool_usage.in.json")
	got, err := runStream(t, in, New().AdaptStream)
	if err != nil {
		t.Fatal(err)
	}
	var chunks []pluginsdk.ChatChunk
	b, _ := json.Marshal(got)
	if err := json.Unmarshal(b, &chunks); err != nil {
		t.Fatal(err)
	}
	var text, args, name, id, finish string
	var usage *pluginsdk.Usage
	for i, c := range chunks {
		if c.Model != "command-r-plus" || c.ID != "c0hf4ke0-0000-4000-8000-000000000001" || c.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %d header: %+v", i, c)
		}
		if i == 0 && (len(c.Choices) != 1 || c.Choices[0].Delta.Role != "assistant") {
			t.Fatalf("first chunk is not the role: %+v", c)
		}
		if c.Usage != nil {
			usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				text += *ch.Delta.Content
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil || *tc.Index != 0 {
					t.Fatalf("tool call index: %+v", tc)
				}
				args += tc.Function.Arguments
				name += tc.Function.Name
				id += tc.ID
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if text != "hello from cohere" || args != `{"echo":"hello"}` || name != "get_weather" || id != "call_fake_0001" || finish != "tool_calls" {
		t.Fatalf("text %q args %q name %q id %q finish %q", text, args, name, id, finish)
	}
	if usage == nil || usage.PromptTokens != 45 || usage.CompletionTokens != 5 || usage.TotalTokens != 50 ||
		usage.PromptTokensDetails == nil || usage.PromptTokensDetails.CachedTokens != 3 {
		t.Fatalf("usage %+v", usage)
	}
	if last := chunks[len(chunks)-1]; last.Usage == nil || len(last.Choices) != 0 {
		t.Fatalf("usage chunk must come last with no choices: %+v", last)
	}
}

// Base64 embeddings decode to the floats Cohere returned, as float32
// little-endian, like OpenAI's encoding_format=base64.
func TestBase64EmbeddingsDecode(t *testing.T) {
	in, _ := os.ReadFile("testdata/adapt_response/embedding_base64.in.json")
	out, err := New().AdaptResponse(in)
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Data []struct {
			Index     int    `json:"index"`
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(out.Body, &resp); err != nil {
		t.Fatal(err)
	}
	want := [][]float32{{0.25, -0.5, 1}, {0.125, 0, -1e-3}}
	if len(resp.Data) != len(want) {
		t.Fatalf("%s", out.Body)
	}
	for i, d := range resp.Data {
		raw, err := base64.StdEncoding.DecodeString(d.Embedding)
		if err != nil || len(raw) != 4*len(want[i]) || d.Index != i {
			t.Fatalf("%d: %v %d", i, err, len(raw))
		}
		for j, w := range want[i] {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:])); got != w {
				t.Fatalf("vector %d[%d] = %v want %v", i, j, got, w)
			}
		}
	}
}

// The context adapt_request returns is what its response side reads.
func TestContextRoundTrip(t *testing.T) {
	out, err := New().AdaptRequest([]byte(`{"request_type":"embedding","model":"emb\"x|y","body":{"input":"a","encoding_format":"base64"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var spec pluginsdk.UpstreamRequest
	if err := json.Unmarshal(out.Body, &spec); err != nil {
		t.Fatal(err)
	}
	var st state
	if !st.parse([]byte(spec.Context)) || st.flags != flagBase64 || string(st.model) != `emb\"x|y` {
		t.Fatalf("%q -> %+v", spec.Context, st)
	}
	for _, bad := range []string{"", "c1|", "c2|0|0|0||m", "c1|x|0|0||m", "c1|0|0|0|a\"b|m", "c1|0|0|0||m\"", "c1|9|0|0||m"} {
		if (&state{}).parse([]byte(bad)) {
			t.Errorf("%q accepted", bad)
		}
	}
}
