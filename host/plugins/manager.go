package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmgate/gateway/pluginsdk"
)

// Runtime names where a plugin runs.
type Runtime string

// Runtimes.
const (
	RuntimeWasm    Runtime = "wasm"
	RuntimeProcess Runtime = "process"
)

// Limits bound one plugin. Zero means the runtime's default.
type Limits struct {
	MemoryMB      int `json:"memory_mb,omitempty"`
	TimeoutMS     int `json:"timeout_ms,omitempty"`
	MaxInputBytes int `json:"max_input_bytes,omitempty"`
	PoolSize      int `json:"pool_size,omitempty"`
}

// Timeout is TimeoutMS as a duration, or def when unset.
func (l Limits) Timeout(def time.Duration) time.Duration {
	if l.TimeoutMS > 0 {
		return time.Duration(l.TimeoutMS) * time.Millisecond
	}
	return def
}

// Spec is one plugin's configuration, as stored and as sent to /api/plugins.
type Spec struct {
	Name    string  `json:"name"`
	Runtime Runtime `json:"runtime"`
	// Source is a file path, or for wasm the name of a first-party module
	// the wasm loader resolves in its module directory.
	Source string `json:"source"`
	// SHA256 pins the module or binary (hex); the load fails on mismatch.
	SHA256 string `json:"sha256,omitempty"`
	// Trusted lets a wasm module pinned by SHA256 run without termination
	// checks (6-11x faster, but a runaway guest then freezes the host).
	Trusted bool            `json:"trusted,omitempty"`
	Order   int             `json:"order"`
	Enabled bool            `json:"enabled"`
	Config  json.RawMessage `json:"config,omitempty"`
	Limits  Limits          `json:"limits"`
	// FailOpen makes a runtime failure skip the plugin (the call answers
	// pass-through) instead of failing the request.
	FailOpen bool `json:"fail_open,omitempty"`
}

// clone returns spec with its strings and config in memory of its own.
func (s Spec) clone() Spec {
	s.Name, s.Runtime = strings.Clone(s.Name), Runtime(strings.Clone(string(s.Runtime)))
	s.Source, s.SHA256 = strings.Clone(s.Source), strings.Clone(s.SHA256)
	if s.Config != nil {
		s.Config = bytes.Clone(s.Config)
	}
	return s
}

// Validate checks the fields every runtime needs.
func (s *Spec) Validate() error {
	switch {
	case s.Name == "":
		return errors.New("plugin spec: name is required")
	case s.Runtime != RuntimeWasm && s.Runtime != RuntimeProcess:
		return fmt.Errorf("plugin spec %q: runtime must be %q or %q, got %q", s.Name, RuntimeWasm, RuntimeProcess, s.Runtime)
	case s.Source == "":
		return fmt.Errorf("plugin spec %q: source is required", s.Name)
	case s.Trusted && s.SHA256 == "":
		return fmt.Errorf("plugin spec %q: trusted requires sha256", s.Name)
	}
	return nil
}

// Loader builds a running Plugin from a spec; one per runtime.
type Loader interface {
	Load(ctx context.Context, spec Spec) (Plugin, error)
}

// ManagerOptions configures a Manager.
type ManagerOptions struct {
	Loaders map[Runtime]Loader
	Logger  *slog.Logger
}

// Manager owns the loaded plugins. Calls go through Entry values, which
// survive reloads: a reload swaps the entry's generation atomically while
// calls in flight finish on the old one, which is closed afterwards.
type Manager struct {
	loaders map[Runtime]Loader
	log     *slog.Logger

	mu      sync.Mutex // serializes Apply/Remove/Close; calls never take it
	entries map[string]*Entry
	chains  atomic.Pointer[chains]
	closed  bool
}

// chains is an immutable snapshot of the call order per hook.
type chains struct {
	all    []*Entry
	byHook [16][]*Entry
}

// NewManager returns an empty Manager.
func NewManager(opts ManagerOptions) *Manager {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	m := &Manager{loaders: opts.Loaders, log: log, entries: map[string]*Entry{}}
	m.chains.Store(&chains{})
	return m
}

// Status states.
const (
	StateLoaded   = "loaded"
	StateError    = "error"
	StateDisabled = "disabled"
)

// Status is what List and Get report for one plugin.
type Status struct {
	Name     string   `json:"name"`
	Runtime  Runtime  `json:"runtime"`
	Source   string   `json:"source"`
	Kind     string   `json:"kind,omitempty"`
	Version  string   `json:"version,omitempty"`
	Hooks    []string `json:"hooks,omitempty"`
	Order    int      `json:"order"`
	Trusted  bool     `json:"trusted"`
	FailOpen bool     `json:"fail_open"`
	State    string   `json:"status"`
	Error    string   `json:"error,omitempty"`
	// Instances is how many instances a wasm plugin holds now: 0 while
	// unloaded for idleness, up to its pool_size under load. Absent for
	// runtimes without instances.
	Instances *int `json:"instances,omitempty"`
	StatsSnapshot
	LoadedAt time.Time `json:"loaded_at,omitzero"`
}

// Entry is one named plugin in the Manager; it implements Plugin, adding
// statistics and fail_open handling around the current generation.
type Entry struct {
	Hooks
	name  string
	log   *slog.Logger
	stats Stats

	gen atomic.Pointer[generation]

	mu       sync.Mutex // guards the fields below (status only)
	spec     Spec
	state    string
	errText  string
	loadedAt time.Time
}

// generation is one loaded version of a plugin. refs counts calls in
// flight; the last one out after retirement closes it.
type generation struct {
	plugin   Plugin
	spec     Spec
	manifest pluginsdk.Manifest
	refs     atomic.Int64
	retired  atomic.Bool
	once     sync.Once
}

func (g *generation) release(log *slog.Logger) {
	if g.refs.Add(-1) == 0 && g.retired.Load() {
		g.closeOnce(log)
	}
}

func (g *generation) retire(log *slog.Logger) {
	g.retired.Store(true)
	if g.refs.Load() == 0 {
		g.closeOnce(log)
	}
}

func (g *generation) closeOnce(log *slog.Logger) {
	g.once.Do(func() {
		// Closing a pool can take milliseconds; never on a caller's path.
		go func() {
			if err := g.plugin.Close(); err != nil {
				log.Warn("closing retired plugin generation", "plugin", g.spec.Name, "err", err)
			}
		}()
	})
}

func (e *Entry) acquire() *generation {
	for {
		g := e.gen.Load()
		if g == nil {
			return nil
		}
		g.refs.Add(1)
		if !g.retired.Load() {
			return g
		}
		// Lost a race with a swap: the new generation is already stored.
		g.release(e.log)
	}
}

// Name is the plugin's name.
func (e *Entry) Name() string { return e.name }

// Spec returns the spec of the current generation (or the last applied).
func (e *Entry) Spec() Spec {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.spec
}

// Serving reports whether a generation is loaded and answering calls. It
// can be true while the status says error: a failed reload keeps the
// previous generation serving.
func (e *Entry) Serving() bool { return e.gen.Load() != nil }

// Manifest returns the current generation's manifest.
func (e *Entry) Manifest() pluginsdk.Manifest {
	if g := e.gen.Load(); g != nil {
		return g.manifest
	}
	return pluginsdk.Manifest{}
}

// Invoke calls the current generation, records stats, and applies
// fail_open: a runtime failure of a fail_open plugin is logged, counted and
// answered with pass-through.
func (e *Entry) Invoke(ctx context.Context, hook pluginsdk.Hook, in Input) (pluginsdk.Output, error) {
	g := e.acquire()
	if g == nil {
		return pluginsdk.Output{}, &Error{Plugin: e.name, Hook: hook.String(), Kind: KindUnavailable, Message: "plugin is not loaded"}
	}
	start := time.Now()
	out, err := g.plugin.Invoke(ctx, hook, in)
	e.stats.Record(time.Since(start), err)
	failOpen := g.spec.FailOpen
	g.release(e.log)
	if err != nil && failOpen && IsFailure(err) {
		e.log.Warn("plugin failed; skipped (fail_open)", "plugin", e.name, "hook", hook.String(), "err", err)
		return pluginsdk.Pass(), nil
	}
	return out, err
}

// Close is a no-op: entries are closed by their Manager.
func (e *Entry) Close() error { return nil }

func (e *Entry) status() Status {
	e.mu.Lock()
	s := Status{
		Name: e.name, Runtime: e.spec.Runtime, Source: e.spec.Source, Order: e.spec.Order,
		Trusted: e.spec.Trusted, FailOpen: e.spec.FailOpen, State: e.state, Error: e.errText,
		LoadedAt: e.loadedAt,
	}
	e.mu.Unlock()
	if g := e.gen.Load(); g != nil {
		s.Kind, s.Version, s.Hooks = string(g.manifest.Kind), g.manifest.Version, g.manifest.Hooks
		if ic, ok := g.plugin.(interface{ Instances() int }); ok {
			n := ic.Instances()
			s.Instances = &n
		}
	}
	s.StatsSnapshot = e.stats.Snapshot()
	if s.State == StateLoaded && s.LastError != "" && time.Since(s.LastErrorAt) < time.Minute {
		// Loaded and serving, but recently failing: say so.
		s.Error = s.LastError
	}
	return s
}

// Apply loads spec, or reloads the plugin of that name: the new generation
// is built completely (pool pre-warmed, configured) before it replaces the
// old one atomically, so calls never see a half-loaded plugin. A disabled
// spec unloads the plugin and keeps it listed. When loading fails the
// previous generation, if any, keeps serving and the error is returned and
// shown in the status.
func (m *Manager) Apply(ctx context.Context, spec Spec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	// The manager keeps spec for the plugin's life (the entries map key,
	// the entry, its generations). Callers build it from request data —
	// PUT /api/plugins/:name, an upload's ?name= — whose strings alias
	// fasthttp's request buffers, reused by later requests: keep copies.
	spec = spec.clone()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("plugins: manager is closed")
	}
	e := m.entries[spec.Name]
	if e == nil {
		e = &Entry{name: spec.Name, log: m.log}
		e.Hooks = BindHooks(e)
		m.entries[spec.Name] = e
	}
	if !spec.Enabled {
		old := e.gen.Swap(nil)
		e.mu.Lock()
		e.spec, e.state, e.errText = spec, StateDisabled, ""
		e.mu.Unlock()
		if old != nil {
			old.retire(m.log)
		}
		m.rebuild()
		return nil
	}
	loader := m.loaders[spec.Runtime]
	if loader == nil {
		err := fmt.Errorf("plugin %q: no loader for runtime %q", spec.Name, spec.Runtime)
		m.setFailed(e, spec, err)
		return err
	}
	p, err := loader.Load(ctx, spec)
	if err != nil {
		err = fmt.Errorf("plugin %q: load: %w", spec.Name, err)
		m.setFailed(e, spec, err)
		return err
	}
	g := &generation{plugin: p, spec: spec, manifest: p.Manifest()}
	old := e.gen.Swap(g)
	e.mu.Lock()
	e.spec, e.state, e.errText, e.loadedAt = spec, StateLoaded, "", time.Now().UTC()
	e.mu.Unlock()
	if old != nil {
		old.retire(m.log)
	}
	m.rebuild()
	m.log.Info("plugin loaded", "plugin", spec.Name, "runtime", spec.Runtime, "kind", g.manifest.Kind, "version", g.manifest.Version)
	return nil
}

// setFailed records a failed load; called with m.mu held.
func (m *Manager) setFailed(e *Entry, spec Spec, err error) {
	e.mu.Lock()
	e.state, e.errText = StateError, err.Error()
	if e.gen.Load() != nil {
		e.errText += " (previous version still serving)"
	} else {
		e.spec = spec
	}
	e.mu.Unlock()
	m.rebuild()
}

// Configure reloads the named plugin with a new config (a new generation,
// swapped atomically like any reload).
func (m *Manager) Configure(ctx context.Context, name string, config json.RawMessage) error {
	e, ok := m.Entry(name)
	if !ok {
		return fmt.Errorf("plugin %q: not found", name)
	}
	spec := e.Spec()
	spec.Config = config
	return m.Apply(ctx, spec)
}

// Remove unloads and forgets the named plugin.
func (m *Manager) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[name]
	if e == nil {
		return fmt.Errorf("plugin %q: not found", name)
	}
	delete(m.entries, name)
	if old := e.gen.Swap(nil); old != nil {
		old.retire(m.log)
	}
	m.rebuild()
	return nil
}

// rebuild recomputes the per-hook call chains; called with m.mu held.
func (m *Manager) rebuild() {
	c := &chains{}
	for _, e := range m.entries {
		c.all = append(c.all, e)
	}
	slices.SortFunc(c.all, func(a, b *Entry) int {
		if a.spec.Order != b.spec.Order {
			return a.spec.Order - b.spec.Order
		}
		if a.name < b.name {
			return -1
		}
		return 1
	})
	for _, e := range c.all {
		g := e.gen.Load()
		if g == nil {
			continue
		}
		for _, name := range g.manifest.Hooks {
			if h, ok := pluginsdk.ParseHook(name); ok && int(h) < len(c.byHook) {
				c.byHook[h] = append(c.byHook[h], e)
			}
		}
	}
	m.chains.Store(c)
}

// Chain returns the loaded plugins implementing hook, in configured order.
// The slice is shared and must not be modified; it costs nothing per call.
func (m *Manager) Chain(hook pluginsdk.Hook) []*Entry {
	c := m.chains.Load()
	if int(hook) >= len(c.byHook) {
		return nil
	}
	return c.byHook[hook]
}

// Entry returns the named plugin for calling it directly.
func (m *Manager) Entry(name string) (*Entry, bool) {
	for _, e := range m.chains.Load().all {
		if e.name == name {
			return e, true
		}
	}
	return nil, false
}

// Get returns the status of the named plugin.
func (m *Manager) Get(name string) (Status, bool) {
	e, ok := m.Entry(name)
	if !ok {
		return Status{}, false
	}
	return e.status(), true
}

// List returns every plugin's status in call order.
func (m *Manager) List() []Status {
	all := m.chains.Load().all
	out := make([]Status, 0, len(all))
	for _, e := range all {
		out = append(out, e.status())
	}
	return out
}

// Close unloads every plugin; calls in flight finish first.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for _, e := range m.entries {
		if old := e.gen.Swap(nil); old != nil {
			old.retire(m.log)
		}
	}
	m.entries = map[string]*Entry{}
	m.rebuild()
	return nil
}
