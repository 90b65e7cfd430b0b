package mcpgw

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/gateway/host/apierr"
)

// ToolSource is where the gateway's MCP tools come from: the MCP clients of
// host/mcp, already filtered by each client's tools_to_execute. mcpgw only
// aggregates, exposes and executes them; it owns no connection.
type ToolSource interface {
	// Tools lists the allowed tools of every connected client.
	Tools(ctx context.Context) ([]Tool, error)
	// CallTool executes tool of client with JSON arguments. Failures the
	// caller should see (auth required, client down) are *apierr.Error.
	CallTool(ctx context.Context, client, tool string, args json.RawMessage) (*mcp.CallToolResult, error)
}

// Tool is one tool of one MCP client.
type Tool struct {
	Client      string
	Name        string
	Description string
	// InputSchema is the tool's JSON Schema for its arguments.
	InputSchema json.RawMessage
}

// ExposedName is the tool's name as models and MCP clients of the gateway
// see it: "<client>-<tool>", unique across clients.
func (t Tool) ExposedName() string { return t.Client + "-" + t.Name }

// schema is InputSchema, or the empty object schema both MCP and OpenAI
// require when a server gave none.
func (t Tool) schema() json.RawMessage {
	if len(t.InputSchema) == 0 || string(t.InputSchema) == "null" {
		return json.RawMessage(`{"type":"object"}`)
	}
	return t.InputSchema
}

// NoTools is the ToolSource of a gateway without MCP clients: no tools.
type NoTools struct{}

// Tools implements ToolSource.
func (NoTools) Tools(context.Context) ([]Tool, error) { return nil, nil }

// CallTool implements ToolSource.
func (NoTools) CallTool(_ context.Context, client, tool string, _ json.RawMessage) (*mcp.CallToolResult, error) {
	return nil, toolNotFound(client + "-" + tool)
}

// toolIndex maps exposed names to tools. Client names may contain '-', so a
// name is resolved by lookup, never by splitting.
type toolIndex map[string]Tool

func (s *Service) index(ctx context.Context) (toolIndex, []Tool, *apierr.Error) {
	tools, err := s.o.Tools.Tools(ctx)
	if err != nil {
		return nil, nil, wrapSourceError(err, "listing MCP tools failed")
	}
	idx := make(toolIndex, len(tools))
	for _, t := range tools {
		idx[t.ExposedName()] = t
	}
	return idx, tools, nil
}

func toolNotFound(name string) *apierr.Error {
	return apierr.New(http.StatusNotFound, apierr.TypeNotFound, "mcp_tool_not_found",
		fmt.Sprintf("no allowed MCP tool is named %q (tools are named \"<client>-<tool>\")", name))
}

// wrapSourceError keeps a source's envelope (its status and extra_fields,
// such as mcp_auth_required) and wraps anything else as a 502.
func wrapSourceError(err error, what string) *apierr.Error {
	if ae, ok := err.(*apierr.Error); ok && ae != nil {
		return ae
	}
	return apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "mcp_error", fmt.Sprintf("%s: %v", what, err))
}

func sortedNames(idx toolIndex) []string {
	names := make([]string, 0, len(idx))
	for n := range idx {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// loopRecordKey marks a tool call the chat tool loop records itself (as
// part of the client request, with its caller credential).
type loopRecordKey struct{}

func withLoopRecord(ctx context.Context) context.Context {
	return context.WithValue(ctx, loopRecordKey{}, true)
}

// RecordedByLoop reports whether the tool call running under ctx is logged
// by the chat tool loop, so a ToolSource that logs its calls can skip it
// and each call appears once in the request log.
func RecordedByLoop(ctx context.Context) bool {
	v, _ := ctx.Value(loopRecordKey{}).(bool)
	return v
}
