package mcpgw

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/mcpaccess"
)

// ToolSource is where the gateway's MCP tools come from: the MCP clients of
// host/mcp, already filtered by each client's tools_to_execute. mcpgw only
// aggregates, exposes and executes them; it owns no connection. The
// caller's own limits (an mcpaccess.Policy in the context) are applied by
// mcpgw, so Tools lists every allowed tool whoever asks.
type ToolSource interface {
	// Tools lists the allowed tools of every connected client.
	Tools(ctx context.Context) ([]Tool, error)
	// CallTool executes tool of client with JSON arguments. Failures the
	// caller should see (auth required, client down) are *apierr.Error.
	CallTool(ctx context.Context, client, tool string, args json.RawMessage) (*mcp.CallToolResult, error)
}

// Tool is one tool of one MCP client.
type Tool struct {
	Client string
	// ClientID identifies the client in a caller's mcpaccess.Policy; a
	// source without ids leaves it empty and the name stands in for it.
	ClientID    string
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

// clientKey is what a policy knows the tool's client by.
func (t Tool) clientKey() string {
	if t.ClientID != "" {
		return t.ClientID
	}
	return t.Client
}

// toolIndex maps exposed names to tools. Client names may contain '-', so a
// name is resolved by lookup, never by splitting.
type toolIndex map[string]Tool

// toolSet is the tools as one caller sees them.
type toolSet struct {
	// idx holds every tool, so a name outside the caller's policy is told
	// apart (403) from a name that exists nowhere (404).
	idx toolIndex
	// allowed are the tools the caller's policy allows, in source order.
	allowed []Tool
	policy  *mcpaccess.Policy
}

// permitted is the 403 for a tool outside the caller's policy, or nil.
func (ts *toolSet) permitted(t Tool) *apierr.Error {
	if ts.policy.Allows(t.clientKey(), t.Name) {
		return nil
	}
	return ts.policy.Forbidden(t.ExposedName())
}

// index lists the tools and applies the caller's policy from ctx.
func (s *Service) index(ctx context.Context) (*toolSet, *apierr.Error) {
	tools, err := s.o.Tools.Tools(ctx)
	if err != nil {
		return nil, wrapSourceError(err, "listing MCP tools failed")
	}
	ts := &toolSet{idx: make(toolIndex, len(tools)), policy: mcpaccess.FromContext(ctx)}
	ts.allowed = tools
	if ts.policy != nil {
		ts.allowed = make([]Tool, 0, len(tools))
	}
	for _, t := range tools {
		ts.idx[t.ExposedName()] = t
		if ts.policy != nil && ts.policy.Allows(t.clientKey(), t.Name) {
			ts.allowed = append(ts.allowed, t)
		}
	}
	return ts, nil
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
