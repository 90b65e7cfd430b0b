package server

import (
	"context"

	"github.com/wasmgate/gateway/host/auth"
	"github.com/wasmgate/gateway/host/governance"
	"github.com/wasmgate/gateway/store/counters"
)

// provisionGovernance opens the usage counters (in memory, persisted to the
// main store by a background flusher) and the governance capability, which
// inference then consults as its admission gate.
func (s *Server) provisionGovernance(ctx context.Context, api *auth.Router) error {
	gc := s.cfg.Governance
	ctrs, err := counters.OpenMemory(ctx, counters.MemoryOptions{Store: s.store, Log: s.log,
		FlushInterval: gc.CounterFlushInterval.D()})
	if err != nil {
		return err
	}
	// Closers run in reverse: the counters flush before the store closes.
	s.closers = append(s.closers, ctrs.Close)
	var pricer governance.Pricer = s.pricing
	if s.govPricer != nil {
		pricer = s.govPricer
	}
	s.governance, err = governance.New(ctx, governance.Options{
		Store: s.store, Counters: ctrs, Pricer: pricer, Log: s.log, Now: s.now, Rand: s.govRand,
		MCPClients: mcpDirectory{s}, References: s.users,
		RequireVirtualKey: gc.RequireVirtualKey, DefaultCompletionTokens: int64(gc.DefaultCompletionTokens),
	})
	if err != nil {
		return err
	}
	s.governance.Routes(api)
	return nil
}

// Governance is the governance capability (virtual keys, teams, customers).
func (s *Server) Governance() *governance.Service { return s.governance }

// governanceDirectory answers host/users' questions about teams and virtual
// keys from governance. Users are provisioned first (sessions authenticate
// through them), so it reaches governance through the server once that is
// provisioned; before that every team and key is unknown.
type governanceDirectory struct{ s *Server }

// TeamName implements users.Directory.
func (d governanceDirectory) TeamName(ctx context.Context, id string) (string, bool, error) {
	if d.s.governance == nil {
		return "", false, nil
	}
	return d.s.governance.TeamName(ctx, id)
}

// VirtualKeyExists implements users.Directory.
func (d governanceDirectory) VirtualKeyExists(ctx context.Context, id string) (bool, error) {
	if d.s.governance == nil {
		return false, nil
	}
	return d.s.governance.VirtualKeyExists(ctx, id)
}
