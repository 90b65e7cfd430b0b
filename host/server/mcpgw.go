package server

import (
	"github.com/wasmgate/gateway/host/mcpgw"
)

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
	gw, err := mcpgw.New(mcpgw.Options{
		Tools: s.mcpTools, Log: s.log, ServerEnabled: mc.ServerEnabled,
		DefaultMaxSteps: mc.DefaultMaxSteps, StepsLimit: mc.MaxSteps, ToolTimeout: mc.ToolTimeout.D(),
		Version: Version, DisableLocalhostProtection: mc.DisableLocalhostProtection,
		// Authenticate stays nil: /v1 has no caller auth yet; the virtual
		// key check goes here when governance lands (docs/mcp-server.md).
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
