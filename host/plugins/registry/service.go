// Package registry is the plugins capability: the installed plugins as the
// operator sees them. It persists plugin settings in the store, reconciles
// the config file's `plugins` section at start-up, auto-loads the
// first-party provider adapters found in plugins_dir, serves /api/plugins,
// and hands the request pipeline and the inference engine the loaded
// plugins (Chain, Adapter). Running them is host/plugins' job: every change
// goes through plugins.Manager.Apply, which swaps atomically, so nothing
// needs a restart.
package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/host/plugins/process"
	"github.com/wasmgate/gateway/host/plugins/wasm"
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/store"
)

// nsPlugins holds one Record per plugin, keyed by name.
const nsPlugins = "plugins"

// Options configures a Service.
type Options struct {
	Store store.Store
	Log   *slog.Logger
	// DataDir holds the compilation cache (DataDir/wasm-cache) and
	// uploaded modules (DataDir/plugins).
	DataDir string
	// PluginsDir holds first-party modules and provider adapters.
	PluginsDir string
	// CacheDir is the compilation cache (default DataDir/wasm-cache).
	CacheDir string
	// IdleUnload unloads an idle wasm plugin's runtime (see
	// wasm.Options.IdleUnload); 0 keeps every plugin loaded.
	IdleUnload time.Duration
	// ConfigEntries is the raw JSON of the config file's `plugins` array.
	ConfigEntries json.RawMessage
	// PreloadFamilies lists the wire families whose bundled adapters load
	// at start-up; the others load on first use, so a gateway serving two
	// families does not hold the compiled code and instances of all of
	// them. Nil preloads every bundled adapter.
	PreloadFamilies []string
	// UntrustedBundled runs bundled adapters with termination checks and a
	// per-call deadline, like third-party modules.
	UntrustedBundled bool
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
}

// Service owns the installed plugins.
type Service struct {
	untrustedBundled bool
	preload          map[string]bool // nil: every bundled adapter
	lazyMu           sync.Mutex
	st               store.Store
	log              *slog.Logger
	now              func() time.Time
	pluginsDir       string
	uploadDir        string
	engine           *wasm.Engine
	mgr              *plugins.Manager

	// mu serialises mutations, so the store and the Manager never disagree
	// about a plugin two requests changed at once. Calls never take it.
	mu sync.Mutex
	// internal maps each auto-loaded adapter's name to its module path.
	// Copy-on-write so listings read it without waiting for a slow load.
	internal atomic.Pointer[map[string]string]
}

// New builds the runtimes and the Manager, syncs the config file into the
// store, then loads every stored plugin and the adapters found in
// PluginsDir. Invalid config entries fail New; a plugin that fails to load
// does not: it is listed with status error.
func New(ctx context.Context, o Options) (*Service, error) {
	if o.Store == nil {
		return nil, errors.New("plugins: a store is required")
	}
	s := &Service{st: o.Store, log: o.Log, now: o.Now, untrustedBundled: o.UntrustedBundled}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	var err error
	if s.pluginsDir, err = filepath.Abs(o.PluginsDir); err != nil {
		return nil, fmt.Errorf("plugins: plugins_dir: %w", err)
	}
	if s.uploadDir, err = filepath.Abs(filepath.Join(o.DataDir, "plugins")); err != nil {
		return nil, fmt.Errorf("plugins: data_dir: %w", err)
	}
	s.internal.Store(&map[string]string{})
	if o.PreloadFamilies != nil {
		s.preload = map[string]bool{}
		for _, f := range o.PreloadFamilies {
			s.preload[f] = true
		}
	}

	// Validate the config before building anything that must be closed.
	plan, err := s.planConfig(o.ConfigEntries)
	if err != nil {
		return nil, err
	}
	s.engine, err = wasm.NewEngine(wasm.Options{
		CacheDir: cacheDir(o), ModuleDir: s.pluginsDir, Logger: s.log, IdleUnload: o.IdleUnload,
	})
	if err != nil {
		return nil, fmt.Errorf("plugins: %w", err)
	}
	s.mgr = plugins.NewManager(plugins.ManagerOptions{
		Loaders: map[plugins.Runtime]plugins.Loader{
			plugins.RuntimeWasm:    s.engine,
			plugins.RuntimeProcess: process.NewLoader(process.Options{Logger: s.log}),
		},
		Logger: s.log,
	})
	if err := s.syncConfig(ctx, plan); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.loadAll(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// loadAll applies every stored plugin, then auto-loads adapters no stored
// plugin overrides.
func (s *Service) loadAll(ctx context.Context) error {
	var recs []Record
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		recs, err = store.ListJSON[Record](tx, nsPlugins, store.ScanOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("plugins: load stored plugins: %w", err)
	}
	stored := map[string]bool{}
	for _, r := range recs {
		stored[r.Name] = true
		if err := s.mgr.Apply(ctx, s.spec(r)); err != nil {
			// Shown as status error in /api/plugins; the gateway still starts.
			s.log.Error("plugin failed to load", "plugin", r.Name, "err", err)
		}
	}
	adapters, err := filepath.Glob(filepath.Join(s.pluginsDir, AdapterPrefix+"*.wasm"))
	if err != nil {
		return fmt.Errorf("plugins: scan %s: %w", s.pluginsDir, err)
	}
	if _, err := os.Stat(s.pluginsDir); err != nil {
		s.log.Warn("plugins_dir not found: no first-party modules or provider adapters", "plugins_dir", s.pluginsDir)
	}
	internal := map[string]string{}
	for _, path := range adapters {
		name := strings.TrimSuffix(filepath.Base(path), ".wasm")
		if !namePattern.MatchString(name) || stored[name] {
			continue
		}
		internal[name] = path
		if s.preload != nil && !s.preload[strings.TrimPrefix(name, AdapterPrefix)] {
			continue // loads on first use, see Adapter
		}
		if err := s.mgr.Apply(ctx, s.internalSpec(name, path)); err != nil {
			s.log.Error("provider adapter failed to load", "plugin", name, "err", err)
		}
	}
	s.internal.Store(&internal)
	return nil
}

// internalSpec is the zero-configuration spec of an auto-loaded adapter.
// Bundled adapters come from the same build as the gateway binary, so they
// run trusted (no termination checks, several times faster guest code),
// pinned to the sha256 of the file read now: a file swapped later fails its
// pin instead of running trusted. Options.UntrustedBundled turns this off.
func (s *Service) internalSpec(name, path string) plugins.Spec {
	spec := plugins.Spec{Name: name, Runtime: plugins.RuntimeWasm, Source: path, Enabled: true}
	if s.untrustedBundled {
		return spec
	}
	if raw, err := os.ReadFile(path); err == nil {
		sum := sha256.Sum256(raw)
		spec.SHA256, spec.Trusted = hex.EncodeToString(sum[:]), true
		// The host only ever hands adapters JSON it produced or
		// validated, so their own up-front validation (most of their
		// guest time) is skipped; adapters without the option ignore it.
		spec.Config = json.RawMessage(`{"validate_input":false}`)
	}
	return spec
}

// internalRecord presents an auto-loaded adapter like a stored plugin.
func internalRecord(name, path string) Record {
	return Record{Name: name, Runtime: plugins.RuntimeWasm, Source: path, Enabled: true}
}

func (s *Service) internalPath(name string) (string, bool) {
	p, ok := (*s.internal.Load())[name]
	return p, ok
}

// setInternal adds (path != "") or removes an auto-loaded adapter; called
// with s.mu held.
func (s *Service) setInternal(name, path string) {
	next := map[string]string{}
	for k, v := range *s.internal.Load() {
		next[k] = v
	}
	if path == "" {
		delete(next, name)
	} else {
		next[name] = path
	}
	s.internal.Store(&next)
}

// Chain returns the loaded plugins implementing hook, ordered by order
// then name. The slice is shared and must not be modified; calling it per
// request costs an atomic load.
func (s *Service) Chain(hook pluginsdk.Hook) []*plugins.Entry { return s.mgr.Chain(hook) }

// Adapter returns the provider adapter of a wire family: the plugin named
// "adapter-<family>" when it is enabled, serving and of kind provider. The
// entry survives reloads, so callers may keep it.
func (s *Service) Adapter(family string) (*plugins.Entry, bool) {
	name := AdapterPrefix + family
	e, ok := s.mgr.Entry(name)
	if !ok {
		e, ok = s.loadLazy(name)
	}
	if !ok || !e.Serving() || e.Manifest().Kind != pluginsdk.KindProvider {
		return nil, false
	}
	return e, true
}

// loadLazy loads a bundled adapter that was not preloaded, once: the
// first request for its family pays the load (tens of milliseconds with a
// warm compilation cache).
func (s *Service) loadLazy(name string) (*plugins.Entry, bool) {
	path, ok := s.internalPath(name)
	if !ok {
		return nil, false
	}
	s.lazyMu.Lock()
	defer s.lazyMu.Unlock()
	if e, ok := s.mgr.Entry(name); ok {
		return e, true
	}
	s.log.Info("loading provider adapter on first use", "plugin", name)
	if err := s.mgr.Apply(context.Background(), s.internalSpec(name, path)); err != nil {
		s.log.Error("provider adapter failed to load", "plugin", name, "err", err)
	}
	return s.mgr.Entry(name)
}

// Manager exposes the plugin Manager (status, direct calls by name).
func (s *Service) Manager() *plugins.Manager { return s.mgr }

// Close unloads every plugin (calls in flight finish first) and releases
// the compilation cache.
func (s *Service) Close() error {
	var errs []error
	if s.mgr != nil {
		errs = append(errs, s.mgr.Close())
	}
	if s.engine != nil {
		errs = append(errs, s.engine.Close(context.Background()))
	}
	return errors.Join(errs...)
}

// record reads the stored record of name.
func (s *Service) record(ctx context.Context, name string) (Record, error) {
	var r Record
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		r, err = store.GetJSON[Record](tx, nsPlugins, name)
		return err
	})
	return r, err
}

// lookup returns the record of name, stored or auto-loaded (internal true).
func (s *Service) lookup(ctx context.Context, name string) (Record, bool, *apierr.Error) {
	r, err := s.record(ctx, name)
	switch {
	case err == nil:
		return r, false, nil
	case !errors.Is(err, store.ErrNotFound):
		return r, false, apierr.Internal(fmt.Errorf("plugins: read %s: %w", name, err))
	}
	if p, ok := s.internalPath(name); ok {
		return internalRecord(name, p), true, nil
	}
	return r, false, apierr.NotFound("plugin", name)
}

// install loads a new plugin and stores it. A load failure stores nothing
// and leaves an adapter it would have overridden serving.
func (s *Service) install(ctx context.Context, r Record) *apierr.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.record(ctx, r.Name); err == nil {
		return apierr.Conflict("duplicate_name", fmt.Sprintf("a plugin named %q already exists", r.Name)).WithParam("name")
	} else if !errors.Is(err, store.ErrNotFound) {
		return apierr.Internal(fmt.Errorf("plugins: read %s: %w", r.Name, err))
	}
	if err := s.mgr.Apply(ctx, s.spec(r)); err != nil {
		s.restoreAfterFailedInstall(ctx, r.Name)
		return loadError(err)
	}
	now := s.now().UTC()
	r.CreatedAt, r.UpdatedAt = now, now
	if err := s.put(ctx, r); err != nil {
		s.restoreAfterFailedInstall(ctx, r.Name)
		return apierr.Internal(err)
	}
	s.setInternal(r.Name, "")
	return nil
}

// restoreAfterFailedInstall puts back what the name meant before a failed
// install: the auto-loaded adapter, or nothing.
func (s *Service) restoreAfterFailedInstall(ctx context.Context, name string) {
	if p, ok := s.internalPath(name); ok {
		if err := s.mgr.Apply(ctx, s.internalSpec(name, p)); err != nil {
			s.log.Error("provider adapter failed to reload", "plugin", name, "err", err)
		}
		return
	}
	_ = s.mgr.Remove(name)
}

// change applies edit to the plugin name (an auto-loaded adapter becomes a
// stored plugin: that is how an operator overrides one) and reloads it. On
// a load failure nothing is stored and the previous version keeps serving.
func (s *Service) change(ctx context.Context, name string, edit func(*Record) *apierr.Error) (Record, *apierr.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, internal, e := s.lookup(ctx, name)
	if e != nil {
		return r, e
	}
	if e := edit(&r); e != nil {
		return r, e
	}
	if err := s.mgr.Apply(ctx, s.spec(r)); err != nil {
		return r, loadError(err)
	}
	now := s.now().UTC()
	if internal {
		r.CreatedAt = now
	}
	r.UpdatedAt = now
	if err := s.put(ctx, r); err != nil {
		return r, apierr.Internal(err)
	}
	if internal {
		s.setInternal(name, "")
	}
	return r, nil
}

// reload builds a new generation of name from its current settings.
func (s *Service) reload(ctx context.Context, name string) *apierr.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, _, e := s.lookup(ctx, name)
	if e != nil {
		return e
	}
	if err := s.mgr.Apply(ctx, s.spec(r)); err != nil {
		return loadError(err)
	}
	return nil
}

// remove deletes a stored plugin; an adapter module of the same name in
// plugins_dir then loads again.
func (s *Service) remove(ctx context.Context, name string) *apierr.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, internal, e := s.lookup(ctx, name)
	if e != nil {
		return e
	}
	if internal {
		return apierr.Conflict("internal_plugin", fmt.Sprintf(
			"plugin %q is a provider adapter auto-loaded from plugins_dir; disable it, or install a plugin of the same name to override it", name))
	}
	if err := s.st.Update(ctx, func(tx store.Tx) error { return tx.Delete(nsPlugins, name) }); err != nil {
		return apierr.Internal(fmt.Errorf("plugins: delete %s: %w", name, err))
	}
	_ = s.mgr.Remove(name)
	if r.Uploaded {
		if p, e := s.resolve(r.Runtime, r.Source); e == nil && filepath.Dir(p) == s.uploadDir {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				s.log.Warn("removing uploaded plugin module", "plugin", name, "path", p, "err", err)
			}
		}
	}
	adapter := filepath.Join(s.pluginsDir, name+".wasm")
	if strings.HasPrefix(name, AdapterPrefix) {
		if _, err := os.Stat(adapter); err == nil {
			s.setInternal(name, adapter)
			if err := s.mgr.Apply(ctx, s.internalSpec(name, adapter)); err != nil {
				s.log.Error("provider adapter failed to load", "plugin", name, "err", err)
			}
		}
	}
	return nil
}

func (s *Service) put(ctx context.Context, r Record) error {
	if err := s.st.Update(ctx, func(tx store.Tx) error { return store.PutJSON(tx, nsPlugins, r.Name, r) }); err != nil {
		return fmt.Errorf("plugins: store %s: %w", r.Name, err)
	}
	return nil
}

// loadError turns a Manager load failure into a 400 carrying the loader's
// message (wrong ABI, configure rejected, sha256 mismatch, ...).
func loadError(err error) *apierr.Error {
	msg := err.Error()
	param := "source"
	if strings.Contains(msg, "configure") {
		param = "config"
	}
	return apierr.BadRequest("plugin_load_failed", param, msg).WithCause(err)
}

func cacheDir(o Options) string {
	if o.CacheDir != "" {
		return o.CacheDir
	}
	return filepath.Join(o.DataDir, "wasm-cache")
}
