package mcpgw

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/inference"
)

// Response headers of a chat request whose tool loop ran in the gateway.
const (
	HeaderSteps     = "X-Gw-Mcp-Steps"      // rounds of tool execution
	HeaderToolCalls = "X-Gw-Mcp-Tool-Calls" // tool calls executed
	// HeaderStopped says why the loop ended with tool calls unexecuted:
	// "max_steps" (bound reached) or "client_tools" (the model called a
	// tool of the caller's own, which the gateway cannot run).
	HeaderStopped = "X-Gw-Mcp-Stopped"
)

// answer is the part of a chat completion the loop reads.
type answer struct {
	Choices []struct {
		Message struct {
			Content   json.RawMessage `json:"content"`
			ToolCalls []toolCall      `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// runLoop calls the model, executes the MCP tool calls it answers with,
// appends their results and calls it again: at most req.steps rounds of
// tool execution, so at most req.steps+1 model calls. Every model call is a
// full pipeline run (logged, metered, governed); every tool call is logged
// as request type mcp_tool.
func (s *Service) runLoop(ctx context.Context, req *chatRequest, models inference.ModelCaller) (*inference.ChatToolsResult, *apierr.Error) {
	var messages []json.RawMessage
	if err := json.Unmarshal(req.fields["messages"], &messages); err != nil {
		return nil, apierr.BadRequest("invalid_type", "messages", `field "messages" must be an array of messages`)
	}
	headers := map[string]string{}
	calls := 0
	for step := 0; ; step++ {
		req.fields["messages"], _ = json.Marshal(messages)
		body, err := json.Marshal(req.fields)
		if err != nil {
			return nil, apierr.Internal(fmt.Errorf("encode chat request: %w", err))
		}
		out, aerr := models.Complete(ctx, body)
		if aerr != nil {
			return nil, aerr
		}
		headers[HeaderSteps], headers[HeaderToolCalls] = strconv.Itoa(step), strconv.Itoa(calls)
		var a answer
		if err := json.Unmarshal(out, &a); err != nil || len(a.Choices) == 0 {
			// Not a chat answer the loop can follow: hand it over as is.
			return &inference.ChatToolsResult{Response: out, Headers: headers}, nil
		}
		msg := a.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			return &inference.ChatToolsResult{Response: out, Headers: headers}, nil
		}
		if slices.ContainsFunc(msg.ToolCalls, func(tc toolCall) bool { _, ok := req.tools[tc.Function.Name]; return !ok }) {
			headers[HeaderStopped] = "client_tools"
			return &inference.ChatToolsResult{Response: out, Headers: headers}, nil
		}
		if step == req.steps {
			headers[HeaderStopped] = "max_steps"
			return &inference.ChatToolsResult{Response: out, Headers: headers}, nil
		}
		// Only role, content and tool_calls go back: output-only fields
		// (refusal, annotations) are refused as input by some providers.
		content := msg.Content
		if len(content) == 0 {
			content = json.RawMessage("null")
		}
		tcs, _ := json.Marshal(msg.ToolCalls)
		am, _ := json.Marshal(map[string]json.RawMessage{"role": json.RawMessage(`"assistant"`), "content": content, "tool_calls": tcs})
		messages = append(messages, am)
		for _, tc := range msg.ToolCalls {
			text, aerr := s.runToolCall(ctx, req.tools[tc.Function.Name], tc, models)
			if aerr != nil {
				return nil, aerr
			}
			calls++
			tm, _ := json.Marshal(map[string]string{"role": "tool", "tool_call_id": tc.ID, "content": text})
			messages = append(messages, tm)
		}
	}
}

// runToolCall executes one tool call and returns the text fed back to the
// model. A tool's failure is fed back so the model can react; only an
// authorization the caller must give (mcp_auth_required) ends the request.
func (s *Service) runToolCall(ctx context.Context, t Tool, tc toolCall, models inference.ModelCaller) (string, *apierr.Error) {
	start := time.Now()
	rec := inference.ToolCall{Name: t.ExposedName(), Start: start, Arguments: []byte(tc.Function.Arguments)}
	args := json.RawMessage(strings.TrimSpace(tc.Function.Arguments))
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	var text string
	if !json.Valid(args) || args[0] != '{' {
		rec.Err = apierr.BadRequest("invalid_tool_arguments", "arguments", "the model's tool arguments are not a JSON object")
		text = "Error: the arguments are not a JSON object: " + tc.Function.Arguments
	} else {
		res, aerr := s.execute(withLoopRecord(ctx), t, args)
		if aerr != nil {
			rec.Err = aerr
			if aerr.ExtraFields != nil && aerr.ExtraFields.MCPAuthRequired != nil {
				rec.Latency = time.Since(start)
				models.RecordTool(rec)
				return "", aerr
			}
			text = "Error: " + aerr.Detail.Message
		} else {
			text = resultText(res)
			rec.Result, _ = json.Marshal(res)
		}
	}
	rec.Latency = time.Since(start)
	models.RecordTool(rec)
	return text, nil
}

// resultText renders a tool result as the text of a tool message: text
// content as is, other content (images, resources) as its JSON, structured
// content when there is nothing else; a tool-reported error is marked.
func resultText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
			continue
		}
		if b, err := json.Marshal(c); err == nil {
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 && r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	text := strings.Join(parts, "\n")
	if r.IsError {
		return "Error: " + text
	}
	return text
}
