package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/logs"
	"github.com/wasmgate/gateway/host/mcpaccess"
)

// RequestType is the request-log object of a tool call.
const RequestType = "mcp_tool"

// Tool is one allowed tool of a connected client, as inference and the
// gateway's own MCP server see it.
type Tool struct {
	// Client is the MCP client's name; tools are addressed as Client-Name.
	Client string `json:"client"`
	// ClientID is the MCP client's id (what virtual keys' mcp_configs name).
	ClientID    string          `json:"client_id"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Tools lists the allowed tools of every enabled, connected client, ordered
// by client then tool name. It is not limited by the caller's
// mcpaccess.Policy: the routes that expose tools apply that themselves.
func (s *Service) Tools(ctx context.Context) ([]Tool, error) {
	clients, err := s.listClients(ctx)
	if err != nil {
		return nil, apierr.Internal(fmt.Errorf("mcp: list clients: %w", err))
	}
	out := []Tool{}
	for i := range clients {
		cl := &clients[i]
		c := s.getConn(cl.ID)
		if !cl.IsEnabled || c == nil || c.state != StateConnected {
			continue
		}
		for _, t := range c.toolList() {
			if !cl.allows(t.Name) {
				continue
			}
			schema, err := json.Marshal(t.InputSchema)
			if err != nil || string(schema) == "null" {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			out = append(out, Tool{Client: cl.Name, ClientID: cl.ID, Name: t.Name, Description: t.Description, InputSchema: schema})
		}
	}
	return out, nil
}

// CallTool runs tool of the named client with args (a JSON object, or
// empty for none) and records the call in the request logs. Errors are
// *apierr.Error; an OAuth client without a usable token answers 401 whose
// extra_fields.mcp_auth_required carries the authorize URL.
func (s *Service) CallTool(ctx context.Context, client, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	return s.callTool(ctx, "mcp", client, tool, args)
}

// CallToolUnrecorded is CallTool for a caller that logs the call itself
// (the gateway's chat tool loop), so each call is logged once.
func (s *Service) CallToolUnrecorded(ctx context.Context, client, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	return s.callTool(ctx, "", client, tool, args)
}

func (s *Service) callTool(ctx context.Context, route, client, tool string, args json.RawMessage) (res *mcp.CallToolResult, err error) {
	start := s.now()
	defer func() { s.record(start, route, client, tool, args, res, err) }()
	cl, gerr := s.getClient(ctx, client)
	if gerr != nil {
		return nil, apierr.NotFound("MCP client", client).WithExtra(toolExtra())
	}
	if p := mcpaccess.FromContext(ctx); !p.Allows(cl.ID, tool) {
		return nil, p.Forbidden(cl.Name + "-" + tool).WithExtra(toolExtra())
	}
	if !cl.IsEnabled {
		return nil, apierr.New(http.StatusServiceUnavailable, apierr.TypeUnavailable, "mcp_client_disabled",
			fmt.Sprintf("MCP client %s is disabled", cl.Name)).WithExtra(toolExtra())
	}
	if !cl.allows(tool) {
		return nil, apierr.Forbidden("tool_not_allowed",
			fmt.Sprintf("tool %s of MCP client %s is not in its tools_to_execute", tool, cl.Name)).WithExtra(toolExtra())
	}
	var params any
	if len(args) > 0 && string(args) != "null" {
		var obj map[string]any
		if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
			return nil, apierr.BadRequest("invalid_arguments", "function.arguments", "tool arguments must be a JSON object").WithExtra(toolExtra())
		}
		params = obj
	}
	for attempt := 0; ; attempt++ {
		res, err := s.callOnce(ctx, &cl, tool, params)
		if err == nil {
			return res, nil
		}
		var retry *retryAfterRefresh
		if attempt == 0 && errors.As(err, &retry) {
			continue
		}
		return nil, err
	}
}

// retryAfterRefresh asks callTool to try once more: the server refused a
// token that has since been refreshed.
type retryAfterRefresh struct{}

func (*retryAfterRefresh) Error() string { return "retry after refresh" }

func (s *Service) callOnce(ctx context.Context, cl *Client, tool string, params any) (*mcp.CallToolResult, error) {
	if cl.AuthType == AuthOAuth {
		if _, err := s.validToken(ctx, cl.OAuthConfigID); err != nil {
			return nil, s.tokenFailure(ctx, cl, err)
		}
	}
	c := s.getConn(cl.ID)
	if c == nil || c.state != StateConnected {
		// Connect on first use: after a restart, a re-enable or a
		// re-authorization the client has no session yet.
		c = s.connect(ctx, cl.ID)
	}
	if c == nil || c.state != StateConnected {
		msg := "not connected"
		if c != nil && c.err != "" {
			msg = c.err
		}
		if c != nil && c.state == StatePendingOAuth {
			return nil, s.authRequired(ctx, cl, msg)
		}
		return nil, apierr.New(http.StatusServiceUnavailable, apierr.TypeUnavailable, "mcp_client_unavailable",
			fmt.Sprintf("MCP client %s is unavailable: %s", cl.Name, msg)).WithExtra(toolExtra())
	}
	known := false
	for _, t := range c.toolList() {
		if t.Name == tool {
			known = true
			break
		}
	}
	if !known {
		return nil, apierr.New(http.StatusNotFound, apierr.TypeNotFound, "tool_not_found",
			fmt.Sprintf("MCP client %s has no tool %q", cl.Name, tool)).WithExtra(toolExtra())
	}
	cctx, cancel := context.WithTimeout(ctx, s.o.ToolTimeout)
	defer cancel()
	c.rt.unauthorized.Store(false)
	res, err := c.session.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: params})
	if err == nil {
		return res, nil
	}
	var are *authRequiredError
	if errors.As(err, &are) {
		return nil, s.authRequired(ctx, cl, are.reason)
	}
	if c.rt.unauthorized.Load() && cl.AuthType == AuthOAuth {
		// The server refused a token the gateway thought valid (revoked
		// upstream, or its clock disagrees): refresh once and retry on a
		// fresh session, else re-authorization is needed.
		_, rerr := s.refresh(ctx, cl.OAuthConfigID, triggerInline, func(*token) bool { return true })
		if rerr != nil {
			return nil, s.tokenFailure(ctx, cl, rerr)
		}
		s.dropConn(cl.ID)
		return nil, &retryAfterRefresh{}
	}
	if cctx.Err() == context.DeadlineExceeded {
		return nil, apierr.New(http.StatusGatewayTimeout, apierr.TypeUpstream, "mcp_tool_timeout",
			fmt.Sprintf("tool %s of MCP client %s did not answer within %s", tool, cl.Name, s.o.ToolTimeout)).WithExtra(toolExtra())
	}
	return nil, apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "mcp_tool_call_failed",
		fmt.Sprintf("tool %s of MCP client %s failed: %v", tool, cl.Name, err)).WithExtra(toolExtra()).WithCause(err)
}

// tokenFailure maps a token error: re-authorization needed -> 401 with
// mcp_auth_required; anything else (the provider unreachable) -> 502.
func (s *Service) tokenFailure(ctx context.Context, cl *Client, err error) *apierr.Error {
	var are *authRequiredError
	if errors.As(err, &are) {
		return s.authRequired(ctx, cl, are.reason)
	}
	return apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "oauth_refresh_failed",
		fmt.Sprintf("could not refresh the OAuth token of MCP client %s: %v", cl.Name, err)).WithExtra(toolExtra()).WithCause(err)
}

func toolExtra() *apierr.ExtraFields {
	return &apierr.ExtraFields{MCPRequestType: "tool_call", RequestType: RequestType}
}

// record writes the call to the request logs: provider is the client name,
// model the tool name.
func (s *Service) record(start time.Time, route, client, tool string, args json.RawMessage, res *mcp.CallToolResult, err error) {
	if s.o.Logs == nil || route == "" {
		return
	}
	// route may be the request's path (POST /v1/mcp/tool/execute), which
	// points into a pooled buffer the next request reuses; the record is
	// written later by the log writer, so it keeps a copy.
	rec := &logs.Record{Timestamp: start.UTC(), Object: RequestType, Route: strings.Clone(route), Provider: client, Model: tool,
		StatusCode: http.StatusOK, LatencyMS: float64(s.now().Sub(start).Microseconds()) / 1000}
	if err != nil {
		e := apierr.As(err)
		rec.StatusCode = e.StatusCode
		rec.Error = &logs.ErrorInfo{Type: e.Type, Code: e.Detail.Code, Message: e.Detail.Message}
	} else if res != nil && res.IsError {
		rec.Error = &logs.ErrorInfo{Type: "tool_error", Code: "tool_error", Message: truncate(resultText(res), 512)}
	}
	if s.o.Logs.CaptureContent() {
		rec.Input = string(args)
		if res != nil {
			rec.Output = resultText(res)
		}
	}
	s.o.Logs.Record(rec)
}

// resultText flattens a result for a chat "tool" message: text parts joined
// by newlines; other parts (images, resources) as their JSON; structured
// content when there is nothing else.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
			continue
		}
		if b, err := json.Marshal(c); err == nil {
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// toolCall is the body of POST /v1/mcp/tool/execute: an OpenAI tool_call.
type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// executeTool runs a tool call and answers a chat "tool" message.
func (s *Service) executeTool(c *fiber.Ctx) error {
	var in toolCall
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	if in.Type != "" && in.Type != "function" {
		return apierr.BadRequest("invalid_value", "type", `type must be "function"`)
	}
	client, tool, ok := strings.Cut(in.Function.Name, "-")
	if !ok || client == "" || tool == "" {
		return apierr.BadRequest("invalid_value", "function.name", `function.name must be "<client>-<tool>"`)
	}
	args := json.RawMessage(in.Function.Arguments)
	if strings.TrimSpace(in.Function.Arguments) == "" {
		args = nil
	}
	res, err := s.callTool(c.UserContext(), c.Path(), client, tool, args)
	if err != nil {
		return err
	}
	out := fiber.Map{"role": "tool", "tool_call_id": in.ID, "content": resultText(res)}
	if res.IsError {
		out["is_error"] = true
	}
	return c.JSON(out)
}

// listTools answers GET /v1/mcp/tools in the OpenAI tools shape, ready to
// be sent as a chat request's `tools`: the tools the caller's policy (its
// virtual key's mcp_configs) allows.
func (s *Service) listToolsHandler(c *fiber.Ctx) error {
	tools, err := s.Tools(c.UserContext())
	if err != nil {
		return err
	}
	if p := mcpaccess.FromContext(c.UserContext()); p != nil {
		tools = slices.DeleteFunc(tools, func(t Tool) bool { return !p.Allows(t.ClientID, t.Name) })
	}
	type fn struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	type item struct {
		Type      string `json:"type"`
		Function  fn     `json:"function"`
		MCPClient string `json:"mcp_client"`
		MCPTool   string `json:"mcp_tool"`
	}
	out := make([]item, 0, len(tools))
	for _, t := range tools {
		out = append(out, item{Type: "function", MCPClient: t.Client, MCPTool: t.Name,
			Function: fn{Name: t.Client + "-" + t.Name, Description: t.Description, Parameters: t.InputSchema}})
	}
	return c.JSON(fiber.Map{"object": "list", "data": out, "count": len(out)})
}
