package wasm

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/pluginsdk"
)

// moduleFile is where a plugin's module came from, so an unloaded runtime
// can be started again from the same, verified, bytes.
type moduleFile struct {
	path string
	sum  [32]byte
}

// newPlugin loads a plugin: compile, check the ABI, instantiate the first
// instance, describe and configure it. A plugin with a source file and an
// idle period unloads its runtime after that long without a call.
func newPlugin(ctx context.Context, e *Engine, spec plugins.Spec, bin []byte, trusted bool, src *moduleFile) (*Plugin, error) {
	p := &Plugin{
		name: spec.Name, log: e.log.With("plugin", spec.Name),
		trusted: trusted, timeout: spec.Limits.Timeout(DefaultTimeout), maxInput: spec.Limits.MaxInputBytes,
		config: spec.Config, stderrN: e.opts.StderrLimit, size: poolSize(spec), memMB: spec.Limits.MemoryMB,
	}
	if p.maxInput <= 0 {
		p.maxInput = DefaultMaxInputBytes
	}
	if p.memMB <= 0 {
		p.memMB = DefaultMemoryMB
	}
	p.recycleBytes = uint32(p.memMB) << 20 / 4 * 3
	if len(p.config) == 0 {
		p.config = []byte("null")
	}
	p.Hooks = plugins.BindHooks(p)
	p.pool = make(chan *instance, p.size)
	p.engine = e
	if err := p.start(ctx, bin); err != nil {
		return nil, err
	}
	if src != nil && e.opts.IdleUnload > 0 {
		p.source, p.idleAfter = src, e.opts.IdleUnload
		p.unusedAfter = min(p.idleAfter, cmp.Or(e.opts.UnusedUnload, DefaultUnusedUnload))
		p.loadedAt = time.Now().UnixNano()
		p.idleStop, p.idleDone = make(chan struct{}), make(chan struct{})
		go p.idleLoop()
	}
	return p, nil
}

// start builds the runtime and the first instance; on error nothing is
// left open. Called at load, and with state held exclusively to restart an
// unloaded plugin.
func (p *Plugin) start(ctx context.Context, bin []byte) (err error) {
	cache, err := p.engine.newCache()
	if err != nil {
		return err
	}
	cfg := wazero.NewRuntimeConfigCompiler().
		WithCompilationCache(cache).
		WithMemoryLimitPages(uint32(p.memMB) * 16). // 64 KiB pages
		WithCloseOnContextDone(!p.trusted)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	var compiled wazero.CompiledModule
	defer func() {
		if err != nil {
			_ = rt.Close(ctx)
			if compiled != nil {
				_ = compiled.Close(ctx)
			}
			_ = cache.Close(ctx)
			p.rt, p.compiled, p.cache = nil, nil, nil
		}
	}()
	compiled, err = p.engine.compile(ctx, rt, bin)
	if err != nil {
		return fmt.Errorf("wasm: compile: %w", err)
	}
	if err := checkABI(compiled); err != nil {
		return fmt.Errorf("wasm: %w", err)
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return fmt.Errorf("wasm: instantiate wasi: %w", err)
	}
	p.rt, p.compiled, p.cache = rt, compiled, cache
	if err := p.instantiateHostModule(ctx); err != nil {
		return err
	}
	first, err := p.newInstance(ctx)
	if err != nil {
		return err
	}
	// The manifest is read once: a restart runs the same verified bytes,
	// and calls read manifest and impl without a lock.
	if !p.described {
		if err := p.describe(ctx, first); err != nil {
			_ = first.mod.Close(ctx)
			return err
		}
		p.described = true
	}
	if err := p.configure(ctx, first); err != nil {
		_ = first.mod.Close(ctx)
		return err
	}
	p.pool <- first
	p.live.Store(1)
	p.running = true
	return nil
}

// stop closes the instances, the runtime, the compiled module and the
// run's compilation cache, which releases every linear memory and the
// machine code; called with state held exclusively and no spawn running.
//
// Closing the runtime alone is not enough: with a compilation cache the
// compiled module lives in the cache's engine, not the runtime, so its
// machine code (12-17 MiB for a Go guest) and decoded module stayed mapped
// through every idle unload and after every hot reload (see
// Engine.newCache).
func (p *Plugin) stop(ctx context.Context) error {
	p.drain(ctx)
	p.live.Store(0)
	p.running = false
	rt, compiled, cache := p.rt, p.compiled, p.cache
	p.rt, p.compiled, p.cache = nil, nil, nil
	return errors.Join(rt.Close(ctx), compiled.Close(ctx), cache.Close(ctx))
}

// enter takes state shared for one call, first restarting the runtime if
// it was unloaded. The caller releases it with state.RUnlock.
func (p *Plugin) enter(hook pluginsdk.Hook) error {
	p.lastCall.Store(time.Now().UnixNano())
	p.state.RLock()
	if p.running {
		return nil
	}
	p.state.RUnlock()
	p.state.Lock()
	if !p.running && !p.closed.Load() {
		if err := p.restart(); err != nil {
			p.state.Unlock()
			return p.fail(hook, plugins.KindUnavailable, "restarting after idle unload", err)
		}
	}
	p.state.Unlock()
	p.state.RLock()
	if p.running {
		return nil
	}
	p.state.RUnlock()
	return p.fail(hook, plugins.KindClosed, "plugin is closed", nil)
}

// restart starts an unloaded plugin again from its file, which must still
// hold the bytes it was loaded from.
func (p *Plugin) restart() error {
	started := time.Now()
	bin, err := os.ReadFile(p.source.path)
	if err != nil {
		return fmt.Errorf("read module: %w", err)
	}
	if sum := sha256.Sum256(bin); !bytes.Equal(sum[:], p.source.sum[:]) {
		return fmt.Errorf("module file %s changed since the plugin was loaded; reload the plugin", p.source.path)
	}
	if err := p.start(context.Background(), bin); err != nil {
		return err
	}
	p.log.Info("plugin runtime restarted for a call", "took", time.Since(started).Round(time.Millisecond))
	return nil
}

// DefaultUnusedUnload is how long a plugin never called since it was
// loaded stays loaded, when shorter than the idle period. Loading reads
// every plugin's manifest, so a gateway starts with the machine code of
// all its adapters (12-17 MiB each for a Go guest), including those it
// needs only for their manifest (the OpenAI family on passthrough traffic)
// or not yet: they leave within seconds instead of a whole idle period.
// The first call restarts one in tens of milliseconds, as after any idle
// unload.
const DefaultUnusedUnload = 10 * time.Second

// idleLoop unloads the runtime once no call has started for idleAfter
// (unusedAfter if none ever did).
func (p *Plugin) idleLoop() {
	defer close(p.idleDone)
	t := time.NewTicker(max(p.unusedAfter/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-p.idleStop:
			return
		case <-t.C:
			p.unloadIfIdle()
		}
	}
}

// unloadIfIdle unloads the runtime when no call started for idleAfter and
// none is running (a call holds state shared, so TryLock fails).
func (p *Plugin) unloadIfIdle() {
	if !p.idle() {
		return
	}
	if !p.state.TryLock() {
		return
	}
	defer p.state.Unlock()
	if !p.running || p.closed.Load() || p.spawning.Load() > 0 || !p.idle() {
		return
	}
	if err := p.stop(context.Background()); err != nil {
		p.log.Warn("unloading idle plugin runtime", "err", err)
		return
	}
	p.log.Info("plugin idle: runtime unloaded until its next call", "idle_for", p.idleAfter)
}

// idle reports whether the plugin went without a call long enough to be
// unloaded.
func (p *Plugin) idle() bool {
	last, limit := p.lastCall.Load(), p.idleAfter
	if last == 0 {
		last, limit = p.loadedAt, p.unusedAfter
	}
	return time.Since(time.Unix(0, last)) >= limit
}
