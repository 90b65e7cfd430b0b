package server

import (
	"context"

	"github.com/wasmgate/gateway/host/auth"
)

// provisionCapabilities builds each capability (providers, plugins, ...) in
// dependency order, registers its routes and its clean-up. Each capability
// owns its handlers, logic and store access in its own package under host/.
func (s *Server) provisionCapabilities(ctx context.Context, api *auth.Router) error {
	_ = ctx
	_ = api
	return nil
}
