package server

import (
	"context"
	"fmt"

	"github.com/wasmgate/gateway/host/auth"
	"github.com/wasmgate/gateway/host/plugins/registry"
	"github.com/wasmgate/gateway/host/providers"
	"github.com/wasmgate/gateway/host/webhooks"
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

	// Plugins load after providers: an adapter plugin serves a provider's
	// wire family, and a failing plugin must not stop the gateway (it is
	// listed with status error), only invalid plugins config does.
	pl, err := registry.New(ctx, registry.Options{
		Store: s.store, Log: s.log, DataDir: s.cfg.DataDir, PluginsDir: s.cfg.PluginsDir,
		ConfigEntries: s.cfg.Entities["plugins"],
	})
	if err != nil {
		return err
	}
	s.closers = append(s.closers, pl.Close)
	s.plugins = pl
	pl.Routes(api)

	wh, err := webhooks.New(ctx, webhooks.Options{
		Store: s.store, Log: s.log, Secrets: s.secrets,
		ConfigEntries: s.cfg.Entities["webhooks"],
		RetentionDays: s.cfg.Client.WebhookConfig.DeliveryHistoryRetentionDays,
	})
	if err != nil {
		return err
	}
	s.closers = append(s.closers, wh.Close)
	s.webhooks = wh
	wh.Routes(api)
	return nil
}

// Webhooks is the webhook capability (async jobs enqueue deliveries on it).
func (s *Server) Webhooks() *webhooks.Service { return s.webhooks }
