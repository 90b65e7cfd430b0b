package server

import (
	"context"

	"fmt"
	"github.com/gofiber/fiber/v2"
	"path/filepath"
	"time"

	"github.com/wasmgate/gateway/host/asyncjobs"
	"github.com/wasmgate/gateway/host/auth"
	"github.com/wasmgate/gateway/host/inference"
	"github.com/wasmgate/gateway/host/logs"
	"github.com/wasmgate/gateway/host/mcp"
	"github.com/wasmgate/gateway/host/plugins/registry"
	"github.com/wasmgate/gateway/host/pricing"
	"github.com/wasmgate/gateway/host/promptrepo"
	"github.com/wasmgate/gateway/host/providers"
	"github.com/wasmgate/gateway/host/users"
	"github.com/wasmgate/gateway/host/webhooks"
	"github.com/wasmgate/gateway/store"
	"github.com/wasmgate/gateway/store/badgerstore"
)

// provisionCapabilities builds each capability (providers, plugins, ...) in
// dependency order, registers its routes and its clean-up. Each capability
// owns its handlers, logic and store access in its own package under host/.
func (s *Server) provisionCapabilities(ctx context.Context, api *auth.Router) error {
	// Users first: user sessions authenticate through it.
	// Teams and virtual keys belong to governance, provisioned later.
	dir := s.directory
	if dir == nil {
		dir = governanceDirectory{s}
	}
	us, err := users.New(users.Options{Store: s.store, Routes: s.routes, Directory: dir, Log: s.log, Now: s.now})
	if err != nil {
		return err
	}
	s.auth.SetAccounts(us)
	us.Routes(api)
	s.users = us

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
	// Only the adapters of configured providers load now; the others on
	// first use, which keeps memory proportional to what is served.
	families := []string{}
	for _, p := range prov.Providers() {
		if info, ok := providers.Lookup(p.Name); ok {
			families = append(families, inference.ModuleFamily(string(info.Family)))
		}
	}
	pl, err := registry.New(ctx, registry.Options{
		Store: s.store, Log: s.log, DataDir: s.cfg.DataDir, PluginsDir: s.cfg.PluginsDir,
		ConfigEntries: s.cfg.Entities["plugins"], PreloadFamilies: families, CacheDir: s.cfg.PluginCacheDir,
		IdleUnload:       s.cfg.PluginIdleUnload.D(),
		UntrustedBundled: s.cfg.UntrustedBundledAdapters,
	})
	if err != nil {
		return err
	}
	s.closers = append(s.closers, pl.Close)
	s.plugins = pl
	s.metrics.Registry.MustRegister(registry.NewCollector(pl.Manager()))
	pl.Routes(api)
	s.pluginAdapters = inference.AdapterFunc(func(family string) (inference.Adapter, bool) {
		e, ok := pl.Adapter(family)
		if !ok {
			return nil, false
		}
		return inference.NewPluginAdapter(e), true
	})

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

	if err := s.provisionLogs(ctx); err != nil {
		return err
	}
	s.logs.Routes(api)

	// Pricing before inference: every finished request is priced.
	s.pricing, err = pricing.New(ctx, pricing.Options{Store: s.store, Now: s.now})
	if err != nil {
		return err
	}
	s.pricing.Routes(api)

	if err := s.provisionGovernance(ctx, api); err != nil {
		return err
	}

	prompts, err := promptrepo.New(promptrepo.Options{Store: s.store, Now: s.now})
	if err != nil {
		return err
	}
	prompts.Routes(api)

	if err := s.provisionMCP(ctx, api); err != nil {
		return err
	}

	if err := s.provisionMCPGateway(); err != nil {
		return err
	}
	s.inference = inference.New(inference.Options{
		Providers: s.providers, Adapters: inference.AdapterFunc(s.adapter), Log: s.log,
		MaxResponseBytes: s.cfg.Server.MaxBodyBytes, Plugins: pl.Chain, Pricer: s.pricing,
		Gate:      s.governance,
		Recorder:  inference.Recorders{inference.NewMetrics(s.metrics.Registry), logRecorder{s.logs}},
		ChatTools: s.mcpgw,
	})
	s.inference.Routes(s.app)
	s.mcpgw.Routes(s.app)
	s.closers = append(s.closers, s.inference.Close)

	// Async jobs go in the main store (fsync'd, and where webhook deliveries
	// live, so a job's outcome and its delivery commit together). Closers
	// run in reverse: workers stop before inference, webhooks and the store.
	ac := s.cfg.Async
	s.async, err = asyncjobs.New(asyncjobs.Options{
		Store: s.store, Webhooks: wh, Log: s.log, Now: s.now,
		Workers: ac.Workers, ResultTTL: ac.ResultTTL.D(), JobTimeout: ac.JobTimeout.D(),
		MaxAttempts: ac.MaxAttempts, PruneInterval: ac.PruneInterval.D(),
		PruneGrace: ac.PruneGrace.D(), TombstoneTTL: ac.TombstoneTTL.D(), MaxBacklog: ac.MaxBacklog,
		MaxBacklogPerCredential: ac.MaxBacklogPerCredential,
		Registry:                s.metrics.Registry, CheckCaller: s.governance.CheckCaller,
	})
	if err != nil {
		return err
	}
	s.async.Routes(s.app)
	s.closers = append(s.closers, s.async.Close)
	return nil
}

// provisionMCP opens the MCP client capability: clients, their tools and
// server-level OAuth (/api/mcp, /api/oauth, /v1/mcp). It needs the request
// logger for tool-call records.
func (s *Server) provisionMCP(ctx context.Context, api *auth.Router) error {
	mc := s.cfg.MCPClientConfig
	svc, err := mcp.New(ctx, mcp.Options{
		Store: s.store, Log: s.log, Secrets: s.secrets, Logs: s.logs,
		ConfigEntries: s.cfg.Entities["mcp_clients"], ExternalURL: s.cfg.MCPExternalClientURL,
		AllowPrivateNetwork: mc.AllowPrivateNetwork, AllowStdio: mc.AllowStdio,
		ConnectTimeout: mc.ConnectTimeout.D(), ToolTimeout: mc.ToolTimeout.D(), FlowTTL: mc.OAuthFlowTTL.D(),
		RefreshInterval: mc.RefreshInterval.D(), RefreshBefore: mc.RefreshBefore.D(), Now: s.now,
	})
	if err != nil {
		return err
	}
	s.mcp = svc
	s.closers = append(s.closers, svc.Close)
	svc.Routes(api)
	s.app.Use("/v1/mcp", func(c *fiber.Ctx) error {
		if err := s.checkToolCaller(c); err != nil {
			return err
		}
		return c.Next()
	})
	svc.InferenceRoutes(s.app)
	return nil
}

// MCP is the MCP client capability (tools of connected MCP servers).
func (s *Server) MCP() *mcp.Service { return s.mcp }

// Pricing is the pricing capability: Cost prices a provider's model for a
// usage (governance reserves and settles budgets with it).
func (s *Server) Pricing() *pricing.Service { return s.pricing }

// Async is the async-jobs capability (/v1/async/*).
func (s *Server) Async() *asyncjobs.Service { return s.async }

// Webhooks is the webhook capability (async jobs enqueue deliveries on it).
func (s *Server) Webhooks() *webhooks.Service { return s.webhooks }

// provisionLogs opens the request-log store: its own Badger instance so log
// write volume never competes with the config store's fsync'd commits, and
// without SyncWrites because logs are batched group commits whose loss on a
// power cut is an accepted trade for throughput (see logs.Logger).
func (s *Server) provisionLogs(ctx context.Context) error {
	cfg := s.cfg.Logs
	if !cfg.Enabled {
		s.log.Info("request logs are disabled (logs.enabled=false)")
		return nil
	}
	db, err := badgerstore.Open(logs.StoreOptions(filepath.Join(s.cfg.DataDir, "logs"), s.log))
	if err != nil {
		return fmt.Errorf("logs store: %w", err)
	}
	s.closers = append(s.closers, db.Close)
	sealed, err := store.OpenSealed(ctx, db, s.cfg.EncryptionKey, s.log)
	if err != nil {
		return fmt.Errorf("logs store: %w", err)
	}
	s.logs, err = logs.New(logs.Options{
		Store: sealed, Log: s.log, Registry: s.metrics.Registry,
		QueueSize: cfg.QueueSize, BatchSize: cfg.BatchSize, FlushInterval: cfg.FlushInterval.D(),
		EnqueueTimeout: cfg.EnqueueTimeout.D(), CaptureContent: cfg.CaptureContent,
		MaxContentBytes: cfg.MaxContentBytes, MaxScanRecords: cfg.MaxScanRecords,
		Retention: time.Duration(cfg.RetentionDays) * 24 * time.Hour,
	})
	if err != nil {
		return err
	}
	// Closers run in reverse: the logger flushes before its store closes.
	s.closers = append(s.closers, s.logs.Close)
	return nil
}

// Logs is the request logger the inference pipeline hands records to; nil
// (a valid no-op logger) when logs.enabled is false.
func (s *Server) Logs() *logs.Logger { return s.logs }
