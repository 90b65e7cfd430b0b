package server

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/wasmgate/gateway/host/auth"
	"github.com/wasmgate/gateway/host/logs"
	"github.com/wasmgate/gateway/store"
	"github.com/wasmgate/gateway/store/badgerstore"
)

// provisionCapabilities builds each capability (providers, plugins, ...) in
// dependency order, registers its routes and its clean-up. Each capability
// owns its handlers, logic and store access in its own package under host/.
func (s *Server) provisionCapabilities(ctx context.Context, api *auth.Router) error {
	if err := s.provisionLogs(ctx); err != nil {
		return err
	}
	s.logs.Routes(api)
	return nil
}

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
