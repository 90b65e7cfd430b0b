package mcpgw

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/gateway/host/apierr"
)

// Sessions is a ToolSource over MCP client sessions already connected with
// the official SDK, one per client name. It is what embedding code and
// tests use to back the gateway with real MCP servers; the gateway binary
// uses host/mcp's managed clients instead.
type Sessions struct {
	mu       sync.RWMutex
	sessions map[string]*mcp.ClientSession
	allowed  map[string][]string // client -> tools_to_execute ("*" = all)
}

// NewSessions returns an empty Sessions.
func NewSessions() *Sessions {
	return &Sessions{sessions: map[string]*mcp.ClientSession{}, allowed: map[string][]string{}}
}

// Add registers a connected session as client; allowed filters its tools
// like tools_to_execute ("*" or nil for all).
func (s *Sessions) Add(client string, cs *mcp.ClientSession, allowed ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[client] = cs
	s.allowed[client] = allowed
}

func (s *Sessions) allows(client, tool string) bool {
	a := s.allowed[client]
	return len(a) == 0 || slices.Contains(a, "*") || slices.Contains(a, tool)
}

// Tools implements ToolSource: every allowed tool of every session.
func (s *Sessions) Tools(ctx context.Context) ([]Tool, error) {
	s.mu.RLock()
	names := make([]string, 0, len(s.sessions))
	for n := range s.sessions {
		names = append(names, n)
	}
	s.mu.RUnlock()
	slices.Sort(names)
	var out []Tool
	for _, client := range names {
		s.mu.RLock()
		cs := s.sessions[client]
		s.mu.RUnlock()
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return nil, fmt.Errorf("list tools of MCP client %q: %w", client, err)
			}
			s.mu.RLock()
			ok := s.allows(client, t.Name)
			s.mu.RUnlock()
			if !ok {
				continue
			}
			schema, err := json.Marshal(t.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("input schema of %s-%s: %w", client, t.Name, err)
			}
			out = append(out, Tool{Client: client, Name: t.Name, Description: t.Description, InputSchema: schema})
		}
	}
	return out, nil
}

// CallTool implements ToolSource.
func (s *Sessions) CallTool(ctx context.Context, client, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	s.mu.RLock()
	cs, ok := s.sessions[client]
	allowed := ok && s.allows(client, tool)
	s.mu.RUnlock()
	if !allowed {
		return nil, toolNotFound(client + "-" + tool)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "mcp_call_failed",
			fmt.Sprintf("MCP client %q: tools/call %s failed: %v", client, tool, err))
	}
	return res, nil
}
