// Package wasm runs plugins as WebAssembly modules under wazero (compiler
// engine): one compiled module per plugin version, a pool of instances
// grown on demand and unloaded when idle, a memory limit and an input cap per module, and a deadline per
// call for every module not marked trusted. A trap, panic, out-of-memory or
// timeout kills only the instance it happened in; it is replaced in the
// background and the caller gets a *plugins.Error naming the plugin.
package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/wasmgate/gateway/host/plugins"
)

// Defaults applied when a spec leaves a limit at zero.
const (
	DefaultMemoryMB      = 64
	DefaultTimeout       = 250 * time.Millisecond
	DefaultMaxInputBytes = 8 << 20
	DefaultStderrLimit   = 64 << 10
)

// Options configures an Engine.
type Options struct {
	// CacheDir holds compiled machine code across restarts (cold compile
	// ~1 s, warm ~40 ms). It is created private (0700) because it is code
	// the host will execute. Empty disables the on-disk cache.
	CacheDir string
	// ModuleDir is where first-party modules live: a spec source without a
	// path separator or .wasm suffix (e.g. "pii") loads ModuleDir/pii.wasm.
	ModuleDir string
	Logger    *slog.Logger
	// IdleUnload, when positive, unloads the runtime of a plugin loaded
	// from a file (its compiled code, instances and their memory) after
	// that long without a call; the next call starts it again from the
	// same verified file, which the compilation cache makes a matter of
	// tens of milliseconds. An adapter a deployment only needs for its
	// manifest (the OpenAI family on a passthrough-only gateway) or rarely
	// then costs no memory.
	IdleUnload time.Duration
	// UnusedUnload is the idle period of a plugin never called since it
	// was loaded, when shorter than IdleUnload (zero: DefaultUnusedUnload).
	UnusedUnload time.Duration
	// StderrLimit caps how many bytes of guest stdout/stderr each instance
	// may forward to the logger; the rest is dropped (a chatty or hostile
	// guest must not flood the logs).
	StderrLimit int
}

// Engine loads wasm plugins; it implements plugins.Loader. One Engine is
// shared by all wasm plugins: they share the on-disk compilation cache
// and compile one at a time.
type Engine struct {
	opts Options
	log  *slog.Logger
	// compiling serializes compiles; see compile.
	compiling sync.Mutex
}

// compileGCPercent is the GOGC the process runs with while a module
// compiles (see Engine.compile).
const compileGCPercent = 25

// compile compiles bin in rt: one module at a time per engine, with the
// collector kept tight, and the freed pages handed back afterwards.
//
// wazero's compiler keeps every function's machine code in the Go heap
// until the whole module is done: compiling the Anthropic adapter peaks at
// ~45 MiB of live heap, most of it code that ends up in an executable
// mapping. At the default GOGC the heap grows to twice that, and the pages
// freed afterwards stay resident until the scavenger reaches them,
// minutes later: a gateway that had just compiled two adapters sat at
// 145 MiB RSS before serving anything (2026-11-25). Serializing bounds the
// peak to one compile when several plugins start together (at startup,
// or restarting after idle unloading); GOGC 25 bounds the overshoot to a
// quarter; FreeOSMemory returns what the compile freed. A compile served
// from the cache is ~40 ms, so the full collection it ends with is noise
// next to it.
func (e *Engine) compile(ctx context.Context, rt wazero.Runtime, bin []byte) (wazero.CompiledModule, error) {
	e.compiling.Lock()
	defer e.compiling.Unlock()
	if prev := debug.SetGCPercent(compileGCPercent); prev < compileGCPercent {
		debug.SetGCPercent(prev) // collection off (-1) or already tighter: leave it
	} else {
		defer debug.SetGCPercent(prev)
	}
	defer debug.FreeOSMemory()
	return rt.CompileModule(ctx, bin)
}

// NewEngine prepares the compilation cache directory.
func NewEngine(opts Options) (*Engine, error) {
	e := &Engine{opts: opts, log: opts.Logger}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.opts.StderrLimit <= 0 {
		e.opts.StderrLimit = DefaultStderrLimit
	}
	if opts.CacheDir != "" {
		if err := os.MkdirAll(opts.CacheDir, 0o700); err != nil {
			return nil, fmt.Errorf("wasm: create compilation cache dir: %w", err)
		}
		// MkdirAll keeps the mode of an existing dir; tighten it because
		// anyone able to write there could plant machine code.
		if err := os.Chmod(opts.CacheDir, 0o700); err != nil {
			return nil, fmt.Errorf("wasm: restrict compilation cache dir: %w", err)
		}
	}
	return e, nil
}

// newCache is the compilation cache of one plugin run: on disk when the
// engine has a cache dir, in memory otherwise.
//
// Each run gets its own, closed when the run stops, rather than one cache
// shared by every plugin: wazero keeps compiled modules in the engine a
// cache carries, and its sorted list of them leaves a stale pointer to a
// deleted module in its backing array (wazero v1.12.0
// deleteCompiledModuleFromSortedList), so with a shared cache an unloaded
// plugin's machine code (12-17 MiB for a Go guest) stayed mapped until
// another module happened to overwrite that slot. Closing a run's own
// cache drops its engine whole. Sharing bought nothing the disk cache does
// not: the same bytes compiled twice are read back from it in ~40 ms.
func (e *Engine) newCache() (wazero.CompilationCache, error) {
	if e.opts.CacheDir == "" {
		return wazero.NewCompilationCache(), nil
	}
	c, err := wazero.NewCompilationCacheWithDir(e.opts.CacheDir)
	if err != nil {
		return nil, fmt.Errorf("wasm: open compilation cache: %w", err)
	}
	return c, nil
}

// Close releases the engine; loaded plugins must be closed first (each
// closes its own compilation cache).
func (e *Engine) Close(ctx context.Context) error {
	return nil
}

// ResolveSource maps a spec source to a file path.
func (e *Engine) ResolveSource(source string) string {
	if !strings.ContainsAny(source, `/\`) && !strings.HasSuffix(source, ".wasm") && e.opts.ModuleDir != "" {
		return filepath.Join(e.opts.ModuleDir, source+".wasm")
	}
	return source
}

// Load reads the spec's module and starts it (plugins.Loader).
func (e *Engine) Load(ctx context.Context, spec plugins.Spec) (plugins.Plugin, error) {
	path := e.ResolveSource(spec.Source)
	bin, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("wasm: read module: %w", err)
	}
	return e.load(ctx, spec, bin, path)
}

// LoadBytes starts a plugin from module bytes: verify the pin, compile
// (cached), check the ABI before anything runs, then start one instance.
// Such a plugin is never unloaded when idle: it has no file to restart from.
func (e *Engine) LoadBytes(ctx context.Context, spec plugins.Spec, bin []byte) (*Plugin, error) {
	return e.load(ctx, spec, bin, "")
}

func (e *Engine) load(ctx context.Context, spec plugins.Spec, bin []byte, path string) (*Plugin, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(bin)
	got := hex.EncodeToString(sum[:])
	if spec.SHA256 != "" && !strings.EqualFold(spec.SHA256, got) {
		return nil, fmt.Errorf("wasm: module sha256 mismatch: spec pins %s, file is %s", spec.SHA256, got)
	}
	trusted := spec.Trusted && spec.SHA256 != ""
	var src *moduleFile
	if path != "" {
		src = &moduleFile{path: path, sum: sum}
	}
	return newPlugin(ctx, e, spec, bin, trusted, src)
}

func poolSize(spec plugins.Spec) int {
	if spec.Limits.PoolSize > 0 {
		return spec.Limits.PoolSize
	}
	return runtime.GOMAXPROCS(0)
}
