// Package server assembles the gateway: it opens the store, provisions each
// capability, mounts their routes on one Fiber app and tears them down in
// reverse order on shutdown.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"runtime"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/asyncjobs"
	"github.com/wasmgate/gateway/host/audit"
	"github.com/wasmgate/gateway/host/auth"
	"github.com/wasmgate/gateway/host/clientip"
	"github.com/wasmgate/gateway/host/config"
	"github.com/wasmgate/gateway/host/governance"
	"github.com/wasmgate/gateway/host/inference"
	"github.com/wasmgate/gateway/host/logs"
	"github.com/wasmgate/gateway/host/mcp"
	"github.com/wasmgate/gateway/host/mcpgw"
	"github.com/wasmgate/gateway/host/metrics"
	"github.com/wasmgate/gateway/host/notify"
	"github.com/wasmgate/gateway/host/plugins/registry"
	"github.com/wasmgate/gateway/host/pricing"
	"github.com/wasmgate/gateway/host/providers"
	"github.com/wasmgate/gateway/host/secret"
	"github.com/wasmgate/gateway/host/users"
	"github.com/wasmgate/gateway/host/webhooks"
	"github.com/wasmgate/gateway/store"
	"github.com/wasmgate/gateway/store/badgerstore"
)

// Version is the gateway version, set at build time with -ldflags.
var Version = "dev"

// Server is a provisioned gateway.
type Server struct {
	cfg     *config.Config
	log     *slog.Logger
	app     *fiber.App
	store   store.Store
	auth    *auth.Service
	routes  *auth.Table
	secrets *secret.Resolver
	metrics *metrics.Metrics
	audit   *audit.Log
	notify  *notify.Hub
	logs    *logs.Logger
	// webhooks is set by provisionCapabilities.
	webhooks *webhooks.Service
	started  time.Time

	providers *providers.Service
	inference *inference.Service
	// extraAdapters come from WithAdapters; pluginAdapters from loaded plugins.
	extraAdapters  inference.AdapterSource
	pluginAdapters inference.AdapterSource
	// plugins is set by provisionCapabilities.
	plugins *registry.Service
	// async is set by provisionCapabilities and started once every route is mounted.
	async *asyncjobs.Service
	// users is the users capability; governance tells it of deleted teams
	// and virtual keys so memberships go with them.
	users *users.Service
	// mcp is the MCP client capability, set by provisionCapabilities.
	mcp *mcp.Service
	// pricing is set by provisionCapabilities.
	pricing *pricing.Service
	// governance is set by provisionGovernance; govPricer overrides its
	// pricer (WithGovernancePricer), govRand its routing randomness
	// (WithGovernanceRand).
	governance *governance.Service
	govPricer  governance.Pricer
	govRand    func() float64
	// now is the clock handed to capabilities that take one (WithClock).
	now func() time.Time
	// directory answers users' questions about teams and virtual keys
	// (WithDirectory); governance provides it.
	directory users.Directory
	// mcpTools (WithMCPTools) backs mcpgw, set by provisionMCPGateway.
	mcpTools mcpgw.ToolSource
	mcpgw    *mcpgw.Service

	stopBg  context.CancelFunc
	bgDone  chan struct{}
	closers []func() error
}

// Option adjusts a server before it is provisioned.
type Option func(*Server)

// WithAdapters adds provider adapters that take precedence over loaded
// adapter plugins (embedding hosts and tests use it).
func WithAdapters(src inference.AdapterSource) Option {
	return func(s *Server) { s.extraAdapters = src }
}

// WithClock sets the clock of capabilities whose behaviour depends on time
// (async job expiry); tests use it to move time without sleeping.
func WithClock(now func() time.Time) Option {
	return func(s *Server) { s.now = now }
}

// WithGovernancePricer prices governance budgets with p instead of the
// bundled catalog (tests use fixed prices).
func WithGovernancePricer(p governance.Pricer) Option {
	return func(s *Server) { s.govPricer = p }
}

// WithGovernanceRand sets the random source of governance's weighted
// provider routing (a number in [0, 1), safe for concurrent use); tests make
// it deterministic.
func WithGovernanceRand(rnd func() float64) Option {
	return func(s *Server) { s.govRand = rnd }
}

// WithDirectory sets what host/users asks about teams and virtual keys
// (membership listings and assignments); without one every team and virtual
// key is unknown to it.
func WithDirectory(d users.Directory) Option {
	return func(s *Server) { s.directory = d }
}

// New provisions every capability from cfg. On error nothing is left running.
func New(ctx context.Context, cfg *config.Config, log *slog.Logger, opts ...Option) (*Server, error) {
	s := &Server{cfg: cfg, log: log, routes: &auth.Table{}, started: time.Now()}
	for _, o := range opts {
		o(s)
	}
	if err := s.provision(ctx); err != nil {
		_ = s.closeAll()
		return nil, err
	}
	return s, nil
}

func (s *Server) provision(ctx context.Context) error {
	cfg, log := s.cfg, s.log

	// The config store sees few, small writes: small memtables keep its
	// resident memory low.
	db, err := badgerstore.Open(badgerstore.Options{Dir: filepath.Join(cfg.DataDir, "store"), SyncWrites: true, Logger: log,
		MemTableSize: 4 << 20, NumMemtables: 2})
	if err != nil {
		return err
	}
	s.closers = append(s.closers, db.Close)
	sealed, err := store.OpenSealed(ctx, db, cfg.EncryptionKey, log)
	if err != nil {
		return err
	}
	s.store = sealed
	if !sealed.Encrypted() {
		log.Warn("GATEWAY_ENCRYPTION_KEY is not set: secrets are stored unencrypted at rest")
	}

	s.secrets = &secret.Resolver{}
	if cfg.Vault.Address != "" {
		tok, err := s.secrets.Resolve(ctx, mustParseSecret(cfg.Vault.Token))
		if err != nil {
			return fmt.Errorf("config: vault.token: %w", err)
		}
		s.secrets.Vault = &secret.VaultClient{Address: cfg.Vault.Address, Token: tok, Mount: cfg.Vault.Mount,
			Namespace: cfg.Vault.Namespace, TTL: cfg.Vault.CacheTTL.D()}
	}

	s.auth, err = auth.New(ctx, auth.Options{
		Store: s.store, Log: log, SetupToken: cfg.SetupToken,
		SetupTokenFile:         filepath.Join(cfg.DataDir, "setup-token"),
		SessionTTL:             cfg.AuthConfig.SessionTTL.D(),
		LoginAttemptsPerMinute: cfg.AuthConfig.LoginAttemptsPerMinute,
	})
	if err != nil {
		return err
	}
	if err := s.auth.SyncConfig(ctx, cfg.AuthConfig.Enabled, cfg.AuthConfig.AdminUsername, cfg.AuthConfig.AdminPassword); err != nil {
		return fmt.Errorf("config: auth_config: %w", err)
	}

	s.app = fiber.New(fiber.Config{
		AppName:                 "wasmgate",
		DisableStartupMessage:   true,
		BodyLimit:               max(cfg.Server.MaxBodyBytes, cfg.Server.PluginUploadMaxBytes),
		ReadTimeout:             cfg.Server.ReadTimeout.D(),
		WriteTimeout:            cfg.Server.WriteTimeout.D(),
		IdleTimeout:             cfg.Server.IdleTimeout.D(),
		ErrorHandler:            errorHandler(log),
		EnableTrustedProxyCheck: len(cfg.Server.TrustedProxies) > 0,
		TrustedProxies:          cfg.Server.TrustedProxies,
		ProxyHeader:             proxyHeader(cfg),
		ReduceMemoryUsage:       false,
	})
	s.metrics = metrics.New()
	s.notify = notify.NewHub()
	// asyncjobs.ContextMiddleware lets an async job's in-process request
	// carry the job's context (cancellation) into the inference pipeline.
	s.app.Use(recoverer(log), asyncjobs.ContextMiddleware, s.metrics.Middleware())
	if len(cfg.Server.TrustedProxies) > 0 {
		// Who a request came from, for the login throttle, audit records
		// and async jobs: the right-most X-Forwarded-For address that is
		// not a trusted proxy (see clientip).
		r, err := clientip.New(cfg.Server.TrustedProxies)
		if err != nil {
			return fmt.Errorf("server.trusted_proxies: %w", err)
		}
		s.app.Use(r.Middleware())
	}
	if err := s.mount(ctx); err != nil {
		return err
	}
	// Jobs run through the finished app, so they start after every route is mounted.
	if err := s.async.Start(s.app.Handler()); err != nil {
		return err
	}
	// Unknown routes fall through to Fiber's 404, which errorHandler wraps.

	bg, cancel := context.WithCancel(context.Background())
	s.stopBg, s.bgDone = cancel, make(chan struct{})
	go s.background(bg)
	return nil
}

func proxyHeader(cfg *config.Config) string {
	if len(cfg.Server.TrustedProxies) > 0 {
		return fiber.HeaderXForwardedFor
	}
	return ""
}

func mustParseSecret(s string) secret.Value {
	v, err := secret.Parse(s)
	if err != nil {
		return secret.MustPlain(s)
	}
	return v
}

// mount registers every capability's routes.
func (s *Server) mount(ctx context.Context) error {
	s.app.Get("/health", s.health)
	root := auth.NewRouter(s.app, "", s.auth, s.routes)
	root.Get("/metrics", auth.Perm("Metrics", "View"), s.metrics.Handler())
	root.Get("/ws", auth.Perm("Dashboard", "View"), s.notify.Handler(func(c *fiber.Ctx) ([]string, bool) {
		p := auth.FromCtx(c)
		return nil, p != nil && p.Bypass
	}))
	s.audit = audit.New(s.store, s.log, func(c *fiber.Ctx) (string, string) {
		if p := auth.FromCtx(c); p != nil {
			return string(p.Kind), p.Subject
		}
		return "anonymous", ""
	})
	api := auth.NewRouter(s.app, "/api", s.auth, s.routes).WithAudit(s.audit.Middleware)
	s.app.Use("/api", s.managementBodyLimit)
	api.Get("/governance/access-profiles/audit-logs", auth.Perm("AuditLogs", "View"), s.audit.Handler)
	// Deprecated alias kept until the next major version.
	api.Get("/audit-logs", auth.Perm("AuditLogs", "View"), deprecated("/api/governance/access-profiles/audit-logs"), s.audit.Handler)
	api.Get("/version", auth.Public, s.version)
	api.Get("/routes", auth.Perm("Settings", "View"), s.routeTable)
	api.Get("/config", auth.Perm("Settings", "View"), s.configView)
	s.auth.Routes(api)
	return s.provisionCapabilities(ctx, api)
}

// managementBodyLimit applies the smaller management body cap to /api; the
// global Fiber limit is sized for inference and plugin uploads.
func (s *Server) managementBodyLimit(c *fiber.Ctx) error {
	limit, key := s.cfg.Server.ManagementMaxBodyBytes, "server.management_max_body_bytes"
	// Only the upload route carries module bytes; POST /api/plugins is a
	// small JSON document like every other management body.
	if c.Path() == "/api/plugins/upload" {
		limit, key = s.cfg.Server.PluginUploadMaxBytes, "server.plugin_upload_max_bytes"
	}
	if n := c.Request().Header.ContentLength(); n > limit || len(c.Body()) > limit {
		return apierr.New(fiber.StatusRequestEntityTooLarge, apierr.TypeInvalidRequest, "body_too_large",
			fmt.Sprintf("request body exceeds the limit of %d bytes (%s)", limit, key))
	}
	return c.Next()
}

// App exposes the Fiber app (tests drive it directly).
func (s *Server) App() *fiber.App { return s.app }

// Auth exposes the auth service.
func (s *Server) Auth() *auth.Service { return s.auth }

// Notify is the dashboard notification hub.
func (s *Server) Notify() *notify.Hub { return s.notify }

// Metrics is the Prometheus registry holder.
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// Inference exposes the unified inference service.
func (s *Server) Inference() *inference.Service { return s.inference }

// adapter finds the adapter for a wire family: an injected one first, then
// a loaded adapter plugin.
func (s *Server) adapter(family string) (inference.Adapter, bool) {
	module := inference.ModuleFamily(family)
	if s.extraAdapters != nil {
		if a, ok := s.extraAdapters.Adapter(module); ok {
			return a, true
		}
	}
	if s.pluginAdapters != nil {
		return s.pluginAdapters.Adapter(module)
	}
	return nil, false
}

// Providers exposes the providers capability (inference picks keys through it).
func (s *Server) Providers() *providers.Service { return s.providers }

// Plugins is the plugin capability: request plugins come from
// Plugins().Chain(hook) and inference finds adapters with Plugins().Adapter.
func (s *Server) Plugins() *registry.Service { return s.plugins }

// Routes is the management route table.
func (s *Server) Routes() []auth.RouteInfo { return s.routes.Rows() }

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if !s.auth.AuthEnabled() {
		s.log.Warn("dashboard auth is not enabled: the management API is under the setup lock",
			"header", auth.SetupTokenHeader, "token_file", filepath.Join(s.cfg.DataDir, "setup-token"))
	}
	s.log.Info("gateway listening", "addr", ln.Addr().String(), "version", Version, "data_dir", s.cfg.DataDir)
	return s.app.Listener(ln)
}

// Shutdown stops accepting connections, waits for in-flight requests up to
// the configured timeout, then closes every capability and the store.
func (s *Server) Shutdown(ctx context.Context) error {
	var errs []error
	if s.app != nil {
		if err := s.app.ShutdownWithContext(ctx); err != nil {
			errs = append(errs, fmt.Errorf("drain: %w", err))
		}
	}
	errs = append(errs, s.closeAll())
	return errors.Join(errs...)
}

func (s *Server) closeAll() error {
	if s.stopBg != nil {
		s.stopBg()
		<-s.bgDone
		s.stopBg = nil
	}
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		if err := s.closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	s.closers = nil
	return errors.Join(errs...)
}

// background runs periodic housekeeping off the request path.
func (s *Server) background(ctx context.Context) {
	defer close(s.bgDone)
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.auth.PruneSessions(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("prune sessions", "error", err)
			}
		}
	}
}

func (s *Server) health(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	storeState := "ok"
	status := fiber.StatusOK
	if err := s.store.Ping(ctx); err != nil {
		storeState = "error: " + err.Error()
		status = fiber.StatusServiceUnavailable
	}
	overall := "ok"
	if status != fiber.StatusOK {
		overall = "degraded"
	}
	return c.Status(status).JSON(fiber.Map{
		"status":         overall,
		"components":     fiber.Map{"store": storeState},
		"version":        Version,
		"uptime_seconds": int64(time.Since(s.started).Seconds()),
	})
}

func (s *Server) version(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"version": Version, "go_version": runtime.Version(), "plugin_abi": "v1", "api_version": "1.0.0"})
}

func (s *Server) routeTable(c *fiber.Ctx) error {
	rows := s.routes.Rows()
	return c.JSON(fiber.Map{"routes": rows, "count": len(rows)})
}

func (s *Server) configView(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"config": s.cfg, "is_auth_enabled": s.auth.AuthEnabled(),
		"encryption_at_rest": s.cfg.EncryptionKey != ""})
}

// deprecated marks an alias route with the standard Deprecation and Link
// headers so clients learn the replacement path.
func deprecated(replacement string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		c.Set("Deprecation", "true")
		c.Set("Link", "<"+replacement+`>; rel="successor-version"`)
		return c.Next()
	}
}
