package server

import (
	"context"
	"fmt"

	"github.com/wasmgate/gateway/host/auth"
	"github.com/wasmgate/gateway/host/providers"
)

// provisionCapabilities builds each capability (providers, plugins, ...) in
// dependency order, registers its routes and its clean-up. Each capability
// owns its handlers, logic and store access in its own package under host/.
func (s *Server) provisionCapabilities(ctx context.Context, api *auth.Router) error {
	prov, err := providers.New(ctx, providers.Options{Store: s.store, Secrets: s.secrets, Log: s.log})
	if err != nil {
		return err
	}
	if err := prov.SyncConfig(ctx, s.cfg.Entities["providers"]); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	prov.Routes(api)
	s.providers = prov
	return nil
}
