package gosdk

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
)

// TestAnthropicGo drives anthropic-sdk-go against the /anthropic drop-in
// prefix with MODEL (any "<provider>/<model>"): text, a tool call and
// usage, streamed and not.
func TestAnthropicGo(t *testing.T) {
	base := os.Getenv("GATEWAY_URL")
	if base == "" {
		t.Skip("GATEWAY_URL not set: run through cmd/gateway's TestGoSDKs")
	}
	c := anthropic.NewClient(aoption.WithBaseURL(base+"/anthropic/"), aoption.WithAPIKey("caller-key"), aoption.WithMaxRetries(0))
	ctx := context.Background()
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(os.Getenv("MODEL")),
		MaxTokens: 64,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "lookup",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"echo": map[string]any{"type": "string"}}}}}},
	}

	msg, err := c.Messages.New(ctx, params)
	if err != nil {
		t.Fatalf("messages: %v", err)
	}
	var text, input string
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text += b.Text
		case "tool_use":
			input = string(b.Input)
		}
	}
	if !strings.Contains(text, "hello") || !strings.Contains(input, `"echo":"hello"`) || msg.StopReason != anthropic.StopReasonToolUse {
		t.Fatalf("message: text %q input %q stop %q", text, input, msg.StopReason)
	}
	if msg.Usage.InputTokens == 0 || msg.Usage.OutputTokens == 0 {
		t.Fatalf("usage: %+v", msg.Usage)
	}

	stream := c.Messages.NewStreaming(ctx, params)
	var acc anthropic.Message
	text, input = "", ""
	for stream.Next() {
		ev := stream.Current()
		if err := acc.Accumulate(ev); err != nil {
			t.Fatalf("accumulate: %v", err)
		}
		if d, ok := ev.AsAny().(anthropic.ContentBlockDeltaEvent); ok {
			switch dd := d.Delta.AsAny().(type) {
			case anthropic.TextDelta:
				text += dd.Text
			case anthropic.InputJSONDelta:
				input += dd.PartialJSON
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if !strings.Contains(text, "hello") || input != `{"echo":"hello"}` || acc.StopReason != anthropic.StopReasonToolUse {
		t.Fatalf("stream: text %q input %q stop %q", text, input, acc.StopReason)
	}
	if acc.Usage.InputTokens == 0 || acc.Usage.OutputTokens == 0 {
		t.Fatalf("stream usage: %+v", acc.Usage)
	}
}
