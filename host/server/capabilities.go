package server

import (
	"context"
	"fmt"

	"github.com/wasmgate/gateway/host/auth"
	"github.com/wasmgate/gateway/host/inference"
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

	s.inference = inference.New(inference.Options{
		Providers: s.providers, Adapters: inference.AdapterFunc(s.adapter), Log: s.log,
		MaxResponseBytes: s.cfg.Server.MaxBodyBytes,
	})
	s.inference.Routes(s.app)
	s.closers = append(s.closers, s.inference.Close)
	return nil
}

// Webhooks is the webhook capability (async jobs enqueue deliveries on it).
func (s *Server) Webhooks() *webhooks.Service { return s.webhooks }
