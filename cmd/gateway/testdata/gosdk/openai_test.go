// Package gosdk drives the official Go SDKs against a running gateway. It is
// its own module so the SDKs' long compile stays out of the main build; the
// cmd/gateway test starts the gateway and runs `go test` here with
// GATEWAY_URL set.
package gosdk

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

func client(t *testing.T) openai.Client {
	base := os.Getenv("GATEWAY_URL")
	if base == "" {
		t.Skip("GATEWAY_URL not set: run through cmd/gateway's TestGoSDKs")
	}
	return openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
}

func TestOpenAIGo(t *testing.T) {
	c := client(t)
	ctx := context.Background()
	model := os.Getenv("MODEL")

	chat, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if !strings.Contains(chat.Choices[0].Message.Content, "hello") || chat.Usage.TotalTokens == 0 {
		t.Fatalf("chat: %+v", chat)
	}

	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:         model,
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: "lookup", Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{}},
		})},
	})
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("chat stream: %v", err)
	}
	if len(acc.Choices) == 0 || len(acc.Choices[0].Message.ToolCalls) != 1 ||
		acc.Choices[0].Message.ToolCalls[0].Function.Arguments != `{"echo":"hello"}` || acc.Usage.TotalTokens == 0 {
		t.Fatalf("accumulated stream: %+v", acc.ChatCompletion)
	}

	resp, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model: model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	})
	if err != nil {
		t.Fatalf("responses: %v", err)
	}
	if !strings.Contains(resp.OutputText(), "hello") || resp.Usage.TotalTokens == 0 {
		t.Fatalf("responses: %+v", resp)
	}

	if em := os.Getenv("EMBED_MODEL"); em != "" {
		emb, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{
			Model: em, Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hello")},
		})
		if err != nil || len(emb.Data) != 1 || len(emb.Data[0].Embedding) == 0 {
			t.Fatalf("embeddings: %v %+v", err, emb)
		}
	}

	page, err := c.Models.List(ctx)
	if err != nil || len(page.Data) == 0 {
		t.Fatalf("models: %v %+v", err, page)
	}
}
