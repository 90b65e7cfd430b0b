// Package mcpaccess carries the MCP tools one caller may use (a virtual
// key's mcp_configs) from governance, which knows callers, to the packages
// that list and run tools (host/mcp's /v1/mcp routes, host/mcpgw's /mcp
// server and chat tool injection), without any of them importing another.
//
// A Policy travels in the request context. No policy (a caller without a
// virtual key, or whose key has no mcp_configs) allows every tool, as
// before policies existed.
package mcpaccess

import (
	"context"
	"fmt"

	"github.com/wasmgate/gateway/host/apierr"
)

// Rule allows tools of one MCP client.
type Rule struct {
	// ClientID is the MCP client's id (stable across renames).
	ClientID string
	// Tools are tool names, or "*" for every tool the client allows.
	Tools []string
}

// Policy is the set of MCP tools a caller may see and call. It is
// immutable once built and safe to share.
type Policy struct {
	owner string
	rules map[string]rule // by client id
}

type rule struct {
	all   bool
	tools map[string]bool
}

// New builds the policy of owner (used in messages, e.g. `virtual key "ci"`)
// from its rules.
func New(owner string, rules []Rule) *Policy {
	p := &Policy{owner: owner, rules: make(map[string]rule, len(rules))}
	for _, r := range rules {
		ru := rule{tools: map[string]bool{}}
		for _, t := range r.Tools {
			if t == "*" {
				ru.all = true
			}
			ru.tools[t] = true
		}
		p.rules[r.ClientID] = ru
	}
	return p
}

// Allows reports whether tool of the client with id clientID is allowed.
// A nil policy allows everything.
func (p *Policy) Allows(clientID, tool string) bool {
	if p == nil {
		return true
	}
	r, ok := p.rules[clientID]
	return ok && (r.all || r.tools[tool])
}

// Forbidden is the 403 for a call of tool (its exposed name) outside the
// policy.
func (p *Policy) Forbidden(tool string) *apierr.Error {
	return apierr.Forbidden("tool_not_allowed",
		fmt.Sprintf("%s does not allow MCP tool %q (see its mcp_configs)", p.owner, tool))
}

type ctxKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p *Policy) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext is the policy in ctx, or nil (everything allowed).
func FromContext(ctx context.Context) *Policy {
	p, _ := ctx.Value(ctxKey{}).(*Policy)
	return p
}
