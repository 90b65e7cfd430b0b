package server

import (
	"context"
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/gateway/host/mcp"
	"github.com/wasmgate/gateway/host/mcpgw"
)

// mcpClientTools exposes the tools of the gateway's MCP clients (host/mcp)
// to the MCP gateway (/mcp and the chat tool loop).
type mcpClientTools struct{ svc *mcp.Service }

func (m mcpClientTools) Tools(ctx context.Context) ([]mcpgw.Tool, error) {
	ts, err := m.svc.Tools(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]mcpgw.Tool, len(ts))
	for i, t := range ts {
		out[i] = mcpgw.Tool{Client: t.Client, ClientID: t.ClientID, Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	}
	return out, nil
}

func (m mcpClientTools) CallTool(ctx context.Context, client, tool string, args json.RawMessage) (*sdk.CallToolResult, error) {
	if mcpgw.RecordedByLoop(ctx) {
		return m.svc.CallToolUnrecorded(ctx, client, tool, args)
	}
	return m.svc.CallTool(ctx, client, tool, args)
}

// WithMCPTools sets the tools the MCP gateway (/mcp and the chat tool
// loop) exposes; embedding hosts and tests use it. Without it the gateway
// has no MCP tools until host/mcp's clients are wired in.
func WithMCPTools(src mcpgw.ToolSource) Option {
	return func(s *Server) { s.mcpTools = src }
}

// provisionMCPGateway builds the MCP gateway capability. Its chat hook must
// exist before inference is built; /mcp is mounted on the app next to /v1
// because its callers authenticate like inference callers.
func (s *Server) provisionMCPGateway() error {
	mc := s.cfg.MCPGateway
	if s.mcpTools == nil && s.mcp != nil {
		s.mcpTools = mcpClientTools{s.mcp}
	}
	gw, err := mcpgw.New(mcpgw.Options{
		Tools: s.mcpTools, Log: s.log, ServerEnabled: mc.ServerEnabled,
		DefaultMaxSteps: mc.DefaultMaxSteps, StepsLimit: mc.MaxSteps, ToolTimeout: mc.ToolTimeout.D(),
		Version: Version, DisableLocalhostProtection: mc.DisableLocalhostProtection,
		// /mcp callers authenticate like inference callers.
		Authenticate: s.checkToolCaller,
	})
	if err != nil {
		return err
	}
	s.mcpgw = gw
	s.closers = append(s.closers, gw.Close)
	return nil
}

// MCPGateway is the MCP gateway capability (/mcp, chat tool loop).
func (s *Server) MCPGateway() *mcpgw.Service { return s.mcpgw }

// checkToolCaller applies governance's caller check (a virtual key that is
// unknown, disabled or expired, or missing when governance requires one, is
// refused) to routes that call tools rather than models: /mcp and
// /v1/mcp/*. A key with mcp_configs leaves its MCP tool policy in the
// request's user context, which those routes apply. Model calls are
// admitted by the inference gate itself.
func (s *Server) checkToolCaller(c *fiber.Ctx) error {
	if s.governance == nil {
		return nil
	}
	if aerr := s.governance.CheckToolCaller(c); aerr != nil {
		return aerr
	}
	return nil
}

// mcpDirectory answers governance's questions about MCP clients (the
// mcp_configs of virtual keys) from host/mcp. Governance is provisioned
// first, so it reaches host/mcp through the server once that is; before
// that every client is unknown.
type mcpDirectory struct{ s *Server }

// ClientID implements governance.MCPClients.
func (d mcpDirectory) ClientID(ctx context.Context, ref string) (string, bool, error) {
	if d.s.mcp == nil {
		return "", false, nil
	}
	return d.s.mcp.ClientID(ctx, ref)
}
