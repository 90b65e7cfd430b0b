package governance

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/wasmgate/gateway/host/apierr"
)

// Budget caps spend in USD per reset period.
type Budget struct {
	// MaxLimit is the most that may be spent per period, in USD.
	MaxLimit float64 `json:"max_limit"`
	// ResetPeriod is minute, hour, day, week or month (calendar-aligned, UTC).
	ResetPeriod Period `json:"reset_period"`
}

// RateLimit caps requests and tokens per window; a zero limit is unlimited.
type RateLimit struct {
	RequestMaxLimit    int64  `json:"request_max_limit,omitempty"`
	RequestResetPeriod Period `json:"request_reset_period,omitempty"`
	TokenMaxLimit      int64  `json:"token_max_limit,omitempty"`
	TokenResetPeriod   Period `json:"token_reset_period,omitempty"`
}

// Customer is the top of the budget hierarchy.
type Customer struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Description string     `json:"description,omitempty"`
	Budget      *Budget    `json:"budget,omitempty"`
	RateLimit   *RateLimit `json:"rate_limit,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// Team sits under an optional budget-parent customer; it may also be
// associated with several customers (many-to-many, CustomerIDs), which does
// not affect budgets.
type Team struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// CustomerID is the budget-hierarchy parent.
	CustomerID  string     `json:"customer_id,omitempty"`
	Budget      *Budget    `json:"budget,omitempty"`
	RateLimit   *RateLimit `json:"rate_limit,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	CustomerIDs []string   `json:"customer_ids"`
}

// ProviderConfig allows one provider on a virtual key.
type ProviderConfig struct {
	Provider string `json:"provider"`
	// Weight is the provider's share of the requests for a bare model
	// (no "<provider>/") that several of the key's providers allow. It
	// defaults to 1; 0 makes the provider a fallback only.
	Weight float64 `json:"weight"`
	// AllowedModels restricts the models; empty allows every model.
	AllowedModels []string `json:"allowed_models,omitempty"`
	// KeyIDs restricts the provider keys used; empty allows every key.
	KeyIDs []string `json:"key_ids,omitempty"`
}

// MCPConfig allows a virtual key the tools of one MCP client.
type MCPConfig struct {
	// MCPClientID is the client's id (a name is accepted on input and
	// stored as the id, so renaming the client keeps the rule).
	MCPClientID string `json:"mcp_client_id"`
	// ToolsToExecute are tool names, or "*" for every tool the client
	// allows; omitted means "*", an empty list allows none.
	ToolsToExecute []string `json:"tools_to_execute"`
}

// VirtualKey is a gateway credential (sk-gw-...) with its own access rules,
// budget and rate limits. Only a keyed hash of the value is stored.
type VirtualKey struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Description string     `json:"description,omitempty"`
	IsActive    bool       `json:"is_active"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
	// TeamID or CustomerID (at most one) is the budget-hierarchy parent.
	TeamID          string           `json:"team_id,omitempty"`
	CustomerID      string           `json:"customer_id,omitempty"`
	ProviderConfigs []ProviderConfig `json:"provider_configs"`
	// MCPConfigs limit the MCP tools the key sees and calls, and are
	// injected into its chat requests; empty leaves every tool usable.
	MCPConfigs []MCPConfig `json:"mcp_configs"`
	Budget     *Budget     `json:"budget,omitempty"`
	RateLimit  *RateLimit  `json:"rate_limit,omitempty"`
	// KeyPrefix is the masked value shown in listings (sk-gw-abcd...).
	KeyPrefix string    `json:"key_prefix"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Hash      string    `json:"hash,omitempty"`
}

func (v VirtualKey) public() VirtualKey {
	v.Hash = ""
	if v.ProviderConfigs == nil {
		v.ProviderConfigs = []ProviderConfig{}
	}
	if v.MCPConfigs == nil {
		v.MCPConfigs = []MCPConfig{}
	}
	return v
}

// fieldErr is a 400 naming the offending field.
func fieldErr(field, format string, a ...any) *apierr.Error {
	return apierr.BadRequest("invalid_field", field, field+": "+fmt.Sprintf(format, a...))
}

func (b *Budget) validate(field string) *apierr.Error {
	if b == nil {
		return nil
	}
	if math.IsNaN(b.MaxLimit) || math.IsInf(b.MaxLimit, 0) || b.MaxLimit <= 0 || b.MaxLimit > 1e9 {
		return fieldErr(field+".max_limit", "must be a positive amount in USD up to 1e9 (got %v)", b.MaxLimit)
	}
	if b.ResetPeriod == "" {
		b.ResetPeriod = PeriodMonth
	}
	if !b.ResetPeriod.valid() {
		return fieldErr(field+".reset_period", "must be one of %s (got %q)", periodNames, b.ResetPeriod)
	}
	return nil
}

func (r *RateLimit) validate(field string) *apierr.Error {
	if r == nil {
		return nil
	}
	if r.RequestMaxLimit < 0 {
		return fieldErr(field+".request_max_limit", "must not be negative")
	}
	if r.TokenMaxLimit < 0 {
		return fieldErr(field+".token_max_limit", "must not be negative")
	}
	if r.RequestMaxLimit > 0 && r.RequestResetPeriod == "" {
		r.RequestResetPeriod = PeriodMinute
	}
	if r.TokenMaxLimit > 0 && r.TokenResetPeriod == "" {
		r.TokenResetPeriod = PeriodMinute
	}
	if r.RequestResetPeriod != "" && !r.RequestResetPeriod.valid() {
		return fieldErr(field+".request_reset_period", "must be one of %s (got %q)", periodNames, r.RequestResetPeriod)
	}
	if r.TokenResetPeriod != "" && !r.TokenResetPeriod.valid() {
		return fieldErr(field+".token_reset_period", "must be one of %s (got %q)", periodNames, r.TokenResetPeriod)
	}
	return nil
}

func validName(field, name string) *apierr.Error {
	if strings.TrimSpace(name) == "" {
		return fieldErr(field, "is required")
	}
	if len(name) > 256 {
		return fieldErr(field, "must be at most 256 characters")
	}
	return nil
}

func validateProviderConfigs(pcs []ProviderConfig) *apierr.Error {
	seen := map[string]bool{}
	for i, pc := range pcs {
		f := fmt.Sprintf("provider_configs[%d]", i)
		if strings.TrimSpace(pc.Provider) == "" || strings.Contains(pc.Provider, "/") {
			return fieldErr(f+".provider", "must name a provider (got %q)", pc.Provider)
		}
		if seen[pc.Provider] {
			return fieldErr(f+".provider", "provider %q is listed twice", pc.Provider)
		}
		seen[pc.Provider] = true
		if pc.Weight < 0 || math.IsNaN(pc.Weight) || math.IsInf(pc.Weight, 0) {
			return fieldErr(f+".weight", "must not be negative")
		}
		for j, m := range pc.AllowedModels {
			if strings.TrimSpace(m) == "" {
				return fieldErr(fmt.Sprintf("%s.allowed_models[%d]", f, j), "must not be empty")
			}
		}
		for j, k := range pc.KeyIDs {
			if strings.TrimSpace(k) == "" {
				return fieldErr(fmt.Sprintf("%s.key_ids[%d]", f, j), "must not be empty")
			}
		}
	}
	return nil
}
