package mcpgw

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/gateway/host/apierr"
)

// newServer builds the MCP server behind /mcp. Its tools are not
// registered with the SDK: they change as MCP clients connect and are
// edited, so tools/list and tools/call are answered by a middleware that
// asks the ToolSource each time, and the tools capability is declared
// explicitly.
func (s *Service) newServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "wasmgate", Title: "wasmgate MCP gateway", Version: s.o.Version},
		&mcp.ServerOptions{
			Logger:       s.log,
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
			Instructions: "Tools of the MCP servers connected to this gateway, named <client>-<tool>.",
		})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/list":
				return s.listTools(ctx)
			case "tools/call":
				r, ok := req.(*mcp.CallToolRequest)
				if !ok || r.Params == nil {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call needs params"}
				}
				return s.callTool(ctx, r.Params.Name, r.Params.Arguments)
			}
			return next(ctx, method, req)
		}
	})
	return srv
}

// listTools answers tools/list with every tool the caller may use, in one
// page.
func (s *Service) listTools(ctx context.Context) (*mcp.ListToolsResult, error) {
	ts, aerr := s.index(ctx)
	if aerr != nil {
		return nil, rpcError(aerr)
	}
	out := &mcp.ListToolsResult{Tools: make([]*mcp.Tool, 0, len(ts.allowed))}
	for _, t := range ts.allowed {
		out.Tools = append(out.Tools, &mcp.Tool{Name: t.ExposedName(), Description: t.Description, InputSchema: t.schema()})
	}
	return out, nil
}

// callTool forwards tools/call to the tool's client. An unknown tool, one
// outside the caller's policy (403) or a gateway-side failure (client down,
// authorization required) is a JSON-RPC error whose data is the gateway's
// error envelope, so extra_fields such as mcp_auth_required reach the
// caller; the tool's own failure stays a result with isError, as the MCP
// spec wants.
func (s *Service) callTool(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	ts, aerr := s.index(ctx)
	if aerr != nil {
		return nil, rpcError(aerr)
	}
	t, ok := ts.idx[name]
	if !ok {
		return nil, rpcError(toolNotFound(name))
	}
	if aerr := ts.permitted(t); aerr != nil {
		return nil, rpcError(aerr)
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	res, err := s.execute(ctx, t, args)
	if err != nil {
		return nil, rpcError(err)
	}
	return res, nil
}

// execute runs one tool call with the configured timeout.
func (s *Service) execute(ctx context.Context, t Tool, args json.RawMessage) (*mcp.CallToolResult, *apierr.Error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.ToolTimeout)
	defer cancel()
	res, err := s.o.Tools.CallTool(ctx, t.Client, t.Name, args)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded {
			return nil, apierr.New(504, apierr.TypeUpstream, "mcp_tool_timeout",
				"MCP tool "+t.ExposedName()+" did not answer within "+s.o.ToolTimeout.String())
		}
		return nil, wrapSourceError(err, "MCP tool "+t.ExposedName()+" failed")
	}
	if res == nil {
		res = &mcp.CallToolResult{Content: []mcp.Content{}}
	}
	return res, nil
}

// rpcError carries the envelope as JSON-RPC error data.
func rpcError(e *apierr.Error) error {
	if e.EventID == "" {
		e.EventID = apierr.NewEventID()
	}
	code := int64(jsonrpc.CodeInternalError)
	if e.StatusCode == 404 || e.StatusCode == 400 {
		code = jsonrpc.CodeInvalidParams
	}
	data, _ := json.Marshal(e)
	return &jsonrpc.Error{Code: code, Message: e.Detail.Message, Data: data}
}
