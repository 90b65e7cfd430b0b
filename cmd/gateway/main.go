// Command gateway runs the wasmgate AI inference gateway.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/wasmgate/gateway/host/config"
	"github.com/wasmgate/gateway/host/server"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cfg, err := config.Load(args, os.Environ())
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, "wasmgate: invalid configuration:")
		fmt.Fprintln(os.Stderr, " ", err)
		return 2
	}
	log := newLogger(cfg)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	if cfg.MemoryLimitMB > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(int64(cfg.MemoryLimitMB) << 20)
		log.Info("Go soft memory limit set", "memory_limit_mb", cfg.MemoryLimitMB)
	}
	if cfg.PprofAddr != "" {
		go func() {
			// The default mux carries the pprof handlers registered by the
			// blank import; it is served only on this separate address.
			log.Warn("profiling endpoint enabled", "addr", cfg.PprofAddr)
			if err := http.ListenAndServe(cfg.PprofAddr, nil); err != nil {
				log.Error("pprof listener", "error", err)
			}
		}()
	}
	srv, err := server.New(ctx, cfg, log)
	if err != nil {
		log.Error("gateway failed to start", "error", err)
		return 1
	}
	ln, err := net.Listen("tcp", cfg.Addr())
	if err != nil {
		log.Error("gateway failed to listen", "addr", cfg.Addr(), "error", err)
		_ = srv.Shutdown(context.Background())
		return 1
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	select {
	case err := <-serveErr:
		if err != nil {
			log.Error("server stopped", "error", err)
			_ = srv.Shutdown(context.Background())
			return 1
		}
	case <-ctx.Done():
	}
	stop()
	log.Info("shutting down: draining in-flight requests", "timeout", cfg.Server.ShutdownTimeout.D().String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownTimeout.D())
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Error("shutdown", "error", err)
		return 1
	}
	log.Info("gateway stopped")
	return 0
}

func newLogger(cfg *config.Config) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}
