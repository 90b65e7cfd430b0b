package governance

import (
	"context"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/inference"
	"github.com/wasmgate/gateway/host/mcpaccess"
)

// MCPClients resolves the MCP clients that virtual keys' mcp_configs name
// (host/mcp answers, through the server). Without one every client is
// unknown, so no key can be given MCP tools.
type MCPClients interface {
	// ClientID returns the id of the client whose id or name is ref; ok is
	// false when there is none.
	ClientID(ctx context.Context, ref string) (id string, ok bool, err error)
}

// resolveMCPConfigs validates mcp_configs in place: each client must exist
// (stored by id, whatever the input named) and appear once; an omitted
// tools_to_execute becomes ["*"].
func (s *Service) resolveMCPConfigs(ctx context.Context, mcs []MCPConfig) *apierr.Error {
	seen := make(map[string]bool, len(mcs))
	for i := range mcs {
		mc := &mcs[i]
		f := fmt.Sprintf("mcp_configs[%d]", i)
		ref := strings.TrimSpace(mc.MCPClientID)
		if ref == "" {
			return fieldErr(f+".mcp_client_id", "must name an MCP client (its id or name)")
		}
		id, ok := "", false
		if s.mcpClients != nil {
			var err error
			if id, ok, err = s.mcpClients.ClientID(ctx, ref); err != nil {
				return apierr.Internal(fmt.Errorf("governance: %w", err))
			}
		}
		if !ok {
			return apierr.BadRequest("unknown_mcp_client", f+".mcp_client_id",
				fmt.Sprintf("%s.mcp_client_id: MCP client %q does not exist (see GET /api/mcp/clients)", f, ref))
		}
		if seen[id] {
			return fieldErr(f+".mcp_client_id", "MCP client %q is listed twice", ref)
		}
		seen[id] = true
		mc.MCPClientID = id
		if mc.ToolsToExecute == nil {
			mc.ToolsToExecute = []string{"*"}
		}
		for j, t := range mc.ToolsToExecute {
			if strings.TrimSpace(t) == "" {
				return fieldErr(fmt.Sprintf("%s.tools_to_execute[%d]", f, j), "must not be empty")
			}
		}
	}
	return nil
}

// mcpPolicy is the key's MCP tool policy, nil when it has no mcp_configs.
func mcpPolicy(vk *VirtualKey) *mcpaccess.Policy {
	if len(vk.MCPConfigs) == 0 {
		return nil
	}
	rules := make([]mcpaccess.Rule, len(vk.MCPConfigs))
	for i, mc := range vk.MCPConfigs {
		rules[i] = mcpaccess.Rule{ClientID: mc.MCPClientID, Tools: mc.ToolsToExecute}
	}
	return mcpaccess.New(fmt.Sprintf("virtual key %q", vk.Name), rules)
}

var _ inference.ChatScope = (*Service)(nil)

// ChatScoped implements inference.ChatScope: whether some virtual key has
// mcp_configs (one atomic load).
func (s *Service) ChatScoped() bool { return s.snap.Load().mcpScoped }

// ChatScope implements inference.ChatScope: a chat request whose virtual
// key has mcp_configs runs the chat tools hook with the key's MCP tool
// policy, so its tools are injected even without an "mcp" field. A bad key
// is left for Admit to refuse.
func (s *Service) ChatScope(ctx context.Context, vkHeader, apiKey, bearer string) (context.Context, bool) {
	e, aerr := s.caller(vkHeader, apiKey, bearer, s.now())
	if aerr != nil || e == nil || e.mcp == nil {
		return ctx, false
	}
	return mcpaccess.NewContext(ctx, e.mcp), true
}

// CheckToolCaller is CheckCaller for the routes that list and call MCP
// tools (/mcp, /v1/mcp/*): a bad virtual key is refused, and a key with
// mcp_configs puts its MCP tool policy in the request's user context.
func (s *Service) CheckToolCaller(c *fiber.Ctx) *apierr.Error {
	e, aerr := s.caller(c.Get(inference.HeaderVirtualKey), c.Get("x-api-key"), bearerOf(c), s.now())
	if aerr != nil {
		return aerr
	}
	if e != nil && e.mcp != nil {
		c.SetUserContext(mcpaccess.NewContext(c.UserContext(), e.mcp))
	}
	return nil
}
