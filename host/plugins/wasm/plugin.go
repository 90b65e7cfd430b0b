package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/pluginsdk"
)

// Plugin is one loaded wasm module with its instance pool; it implements
// plugins.Plugin. Its own wazero runtime carries the module's memory limit
// and interruption setting.
type Plugin struct {
	plugins.Hooks
	name     string
	log      *slog.Logger
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	manifest pluginsdk.Manifest
	impl     [16]bool
	trusted  bool
	timeout  time.Duration
	maxInput int
	config   []byte
	stderrN  int

	pool chan *instance
	// size is the most instances the plugin may have; live counts those
	// created and not closed (idle or in a call). Only one is made at
	// load: a Go guest's linear memory is MiBs, so a plugin grows to the
	// concurrency it actually sees, not to the largest it could.
	size int
	live atomic.Int32
	seq  atomic.Uint64
	// recycleBytes: an instance whose linear memory grew past this is
	// replaced after its call. Guest memory never shrinks, so one huge
	// request would otherwise pin its peak for the instance's lifetime.
	recycleBytes uint32
	recycled     atomic.Uint64

	mu       sync.Mutex // guards closed with replacing.Add
	closed   atomic.Bool
	replacer sync.WaitGroup
	spawning atomic.Int32 // spawn goroutines still building an instance

	// Idle unloading (see lifecycle.go). rt, compiled, cache and the
	// instances exist only while running; calls hold state shared, starting and
	// unloading the runtime hold it exclusively.
	state     sync.RWMutex
	running   bool
	described bool // manifest and impl are set (at load, never again)
	memMB     int
	source    *moduleFile // nil: loaded from bytes, never unloaded
	idleAfter time.Duration
	// unusedAfter is idleAfter for a plugin never called since its load.
	unusedAfter time.Duration
	lastCall    atomic.Int64 // Unix nanoseconds of the latest call; 0: none yet
	loadedAt    int64        // Unix nanoseconds
	idleStop    chan struct{}
	idleDone    chan struct{}
	cache       wazero.CompilationCache // this run's own (see Engine.newCache)
	engine      *Engine                 // compiles
}

// instance is one module instance; used by one call at a time because
// api.Function is not goroutine-safe.
type instance struct {
	mod    api.Module
	input  api.Function
	call   api.Function
	mem    api.Memory
	bufPtr uint32
	bufCap uint32
	stack  [2]uint64
	stderr *stderrWriter

	// Filled by the host imports during a call.
	out     pluginsdk.Output
	headers []byte
	errSet  bool
	errCode uint32
	errMsg  string
}

type instanceKey struct{}

// guestGOGC is the GOGC a Go guest runs with (other languages ignore it).
// A guest's heap lives in its linear memory, which never shrinks: at Go's
// default of 100 an adapter instance under load held 10 MiB, at 25 it
// holds 7 MiB (anthropic adapter at concurrency 64, 2026-11-25). The price
// is guest CPU: 6.6 vs 5.9 us per Anthropic stream event and 25.4 vs
// 24.4 us per request/response pair (BenchmarkStreamEventWasm*, same run),
// ~1-2% of the request's total CPU.
const guestGOGC = "25"

func (p *Plugin) instantiateHostModule(ctx context.Context) error {
	i32 := api.ValueTypeI32
	b := p.rt.NewHostModuleBuilder(pluginsdk.ImportModule)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(p.hostOutput), []api.ValueType{i32, i32, i32}, nil).
		WithParameterNames("kind", "ptr", "len").Export(pluginsdk.ImportOutput)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(p.hostError), []api.ValueType{i32, i32, i32}, nil).
		WithParameterNames("code", "ptr", "len").Export(pluginsdk.ImportError)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(p.hostLog), []api.ValueType{i32, i32, i32}, nil).
		WithParameterNames("level", "ptr", "len").Export(pluginsdk.ImportLog)
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("wasm: instantiate host module: %w", err)
	}
	return nil
}

// guestBytes copies len bytes at ptr out of the guest at once: the guest
// may reuse the buffer as soon as the import returns.
func guestBytes(mod api.Module, ptr, n uint32) ([]byte, bool) {
	if n == 0 {
		return []byte{}, true
	}
	view, ok := mod.Memory().Read(ptr, n)
	if !ok {
		return nil, false
	}
	return bytes.Clone(view), true
}

func current(ctx context.Context) *instance {
	inst, _ := ctx.Value(instanceKey{}).(*instance)
	return inst
}

func (p *Plugin) hostOutput(ctx context.Context, mod api.Module, stack []uint64) {
	inst := current(ctx)
	b, ok := guestBytes(mod, uint32(stack[1]), uint32(stack[2]))
	if inst == nil || !ok {
		panic(fmt.Errorf("output: out-of-range buffer"))
	}
	switch pluginsdk.OutputKind(uint32(stack[0])) {
	case pluginsdk.OutputBody:
		inst.out.Body = b
	case pluginsdk.OutputResponse:
		inst.out.Response = b
	case pluginsdk.OutputState:
		inst.out.State = b
	case pluginsdk.OutputHeaders:
		inst.headers = b
	}
}

func (p *Plugin) hostError(ctx context.Context, mod api.Module, stack []uint64) {
	inst := current(ctx)
	b, ok := guestBytes(mod, uint32(stack[1]), uint32(stack[2]))
	if inst == nil || !ok {
		panic(fmt.Errorf("error: out-of-range buffer"))
	}
	inst.errSet, inst.errCode, inst.errMsg = true, uint32(stack[0]), string(b)
}

func (p *Plugin) hostLog(ctx context.Context, mod api.Module, stack []uint64) {
	n := uint32(stack[2])
	if n > 4096 {
		n = 4096
	}
	b, ok := guestBytes(mod, uint32(stack[1]), n)
	if !ok {
		return
	}
	p.log.Log(ctx, slog.Level(int32(uint32(stack[0]))), string(b), "source", "guest")
}

func (p *Plugin) newInstance(ctx context.Context) (*instance, error) {
	inst := &instance{stderr: newStderrWriter(p.log, p.stderrN)}
	cfg := wazero.NewModuleConfig().
		WithName(fmt.Sprintf("%s#%d", p.name, p.seq.Add(1))).
		// _initialize is called below, after the ABI check already passed
		// at compile time and with the instance in the context.
		WithStartFunctions().
		WithSysWalltime().WithSysNanotime().WithEnv("GOGC", guestGOGC).
		WithRandSource(rand.Reader).
		WithStdout(inst.stderr).WithStderr(inst.stderr)
	// Guest memories are mapped outside the Go heap (memory_linux.go).
	actx := experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(newLinearMemory))
	mod, err := p.rt.InstantiateModule(actx, p.compiled, cfg)
	if err != nil {
		return nil, fmt.Errorf("wasm: instantiate: %w", err)
	}
	inst.mod, inst.mem = mod, mod.Memory()
	inst.input = mod.ExportedFunction(pluginsdk.ExportInput)
	inst.call = mod.ExportedFunction(pluginsdk.ExportCall)
	cctx, cancel := p.callContext(ctx, inst)
	defer cancel()
	if _, err := mod.ExportedFunction("_initialize").Call(cctx); err != nil {
		_ = mod.Close(ctx)
		return nil, fmt.Errorf("wasm: _initialize: %w%s", err, inst.stderr.tailSuffix())
	}
	return inst, nil
}

func (p *Plugin) newConfiguredInstance(ctx context.Context) (*instance, error) {
	inst, err := p.newInstance(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.configure(ctx, inst); err != nil {
		_ = inst.mod.Close(ctx)
		return nil, err
	}
	return inst, nil
}

func (p *Plugin) describe(ctx context.Context, inst *instance) error {
	out, err := p.run(ctx, inst, pluginsdk.HookDescribe, plugins.Input{})
	if err != nil {
		return fmt.Errorf("wasm: describe: %w", err)
	}
	var m pluginsdk.Manifest
	if err := json.Unmarshal(out.Body, &m); err != nil {
		return fmt.Errorf("wasm: describe: bad manifest: %w", err)
	}
	if m.ABI != pluginsdk.ABIVersion {
		return fmt.Errorf("wasm: describe: manifest says ABI %d, host speaks %d", m.ABI, pluginsdk.ABIVersion)
	}
	for _, h := range m.Hooks {
		hk, ok := pluginsdk.ParseHook(h)
		if !ok {
			return fmt.Errorf("wasm: describe: unknown hook %q", h)
		}
		p.impl[hk] = true
	}
	p.manifest = m
	return nil
}

func (p *Plugin) configure(ctx context.Context, inst *instance) error {
	if _, err := p.run(ctx, inst, pluginsdk.HookConfigure, plugins.Input{Body: p.config}); err != nil {
		return fmt.Errorf("wasm: configure: %w", err)
	}
	return nil
}

// Manifest is the describe result read at load.
func (p *Plugin) Manifest() pluginsdk.Manifest { return p.manifest }

// Trusted reports whether calls run without termination checks.
func (p *Plugin) Trusted() bool { return p.trusted }

// Invoke runs one hook on a pooled instance.
func (p *Plugin) Invoke(ctx context.Context, hook pluginsdk.Hook, in plugins.Input) (pluginsdk.Output, error) {
	if int(hook) >= len(p.impl) || !p.impl[hook] {
		return pluginsdk.Pass(), nil
	}
	if p.closed.Load() {
		return pluginsdk.Output{}, p.fail(hook, plugins.KindClosed, "plugin is closed", nil)
	}
	size := len(in.Body)
	if hook.IsStream() {
		size += 8 + len(in.State)
	}
	if size > p.maxInput {
		return pluginsdk.Output{}, p.fail(hook, plugins.KindInputTooLarge,
			fmt.Sprintf("input is %d bytes, limit is %d", size, p.maxInput), nil)
	}
	if p.source != nil {
		if err := p.enter(hook); err != nil {
			return pluginsdk.Output{}, err
		}
		defer p.state.RUnlock()
	}
	inst, err := p.acquire(ctx, hook)
	if err != nil {
		return pluginsdk.Output{}, err
	}
	out, err := p.run(ctx, inst, hook, in)
	if err != nil {
		var pe *plugins.Error
		if errors.As(err, &pe) && !pe.Failure() {
			p.pool <- inst
			return out, err
		}
		p.replace(inst)
		return out, err
	}
	if inst.mem.Size() > p.recycleBytes {
		p.recycled.Add(1)
		p.replace(inst)
		return out, nil
	}
	p.pool <- inst
	return out, nil
}

// Recycled counts instances replaced because their memory grew past 3/4
// of the limit.
func (p *Plugin) Recycled() uint64 { return p.recycled.Load() }

// acquire takes an idle instance. The wait is bounded even when the caller
// set no deadline: if every instance is dead and replacements keep failing,
// a request must get an error, never hang.
func (p *Plugin) acquire(ctx context.Context, hook pluginsdk.Hook) (*instance, error) {
	select {
	case inst := <-p.pool:
		return inst, nil
	default:
	}
	p.grow()
	wait := max(10*p.timeout, 2*time.Second)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case inst := <-p.pool:
		return inst, nil
	case <-ctx.Done():
		return nil, p.fail(hook, plugins.KindTimeout, "waiting for a free instance", ctx.Err())
	case <-t.C:
		return nil, p.fail(hook, plugins.KindUnavailable, fmt.Sprintf("no instance became free within %s", wait), nil)
	}
}

func (p *Plugin) callContext(ctx context.Context, inst *instance) (context.Context, context.CancelFunc) {
	ctx = context.WithValue(ctx, instanceKey{}, inst)
	if p.trusted {
		// No termination checks are compiled in, so a deadline would not
		// be enforced anyway; skip the timer.
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, p.timeout)
}

// run executes one hook; any error other than the guest's own error status
// means the instance is dead.
func (p *Plugin) run(ctx context.Context, inst *instance, hook pluginsdk.Hook, in plugins.Input) (pluginsdk.Output, error) {
	inst.out, inst.headers, inst.errSet, inst.errCode, inst.errMsg = pluginsdk.Output{}, nil, false, 0, ""
	size := len(in.Body)
	stream := hook.IsStream()
	if stream {
		size += 8 + len(in.State)
	}
	cctx, cancel := p.callContext(ctx, inst)
	defer cancel()
	inst.stderr.reset()

	if uint32(size) > inst.bufCap || inst.bufCap == 0 {
		inst.stack[0] = uint64(size)
		if err := inst.input.CallWithStack(cctx, inst.stack[:]); err != nil {
			return pluginsdk.Output{}, p.classify(cctx, hook, inst, err)
		}
		inst.bufPtr, inst.bufCap = uint32(inst.stack[0]), uint32(size)
	}
	off := inst.bufPtr
	if stream {
		h := pluginsdk.StreamHeader(len(in.State), in.End)
		if !inst.mem.Write(off, h[:]) || !inst.mem.Write(off+8, in.State) {
			return pluginsdk.Output{}, p.fail(hook, plugins.KindTrap, "input buffer out of range", nil)
		}
		off += 8 + uint32(len(in.State))
	}
	if !inst.mem.Write(off, in.Body) {
		return pluginsdk.Output{}, p.fail(hook, plugins.KindTrap, "input buffer out of range", nil)
	}
	inst.stack[0], inst.stack[1] = uint64(hook), uint64(size)
	if err := inst.call.CallWithStack(cctx, inst.stack[:]); err != nil {
		return pluginsdk.Output{}, p.classify(cctx, hook, inst, err)
	}
	status := pluginsdk.Status(uint32(inst.stack[0]))
	out := inst.out
	out.Status = status
	inst.out = pluginsdk.Output{}
	switch status {
	case pluginsdk.StatusError:
		code := int(inst.errCode)
		if !inst.errSet {
			code = 500
		}
		return pluginsdk.Output{Status: status}, plugins.GuestError(p.name, hook, code, inst.errMsg)
	case pluginsdk.StatusOK, pluginsdk.StatusNoOutput, pluginsdk.StatusPassThrough:
	default:
		return pluginsdk.Output{}, p.fail(hook, plugins.KindBadOutput, fmt.Sprintf("unknown status %d", status), nil)
	}
	if inst.headers != nil {
		if err := json.Unmarshal(inst.headers, &out.Headers); err != nil {
			return pluginsdk.Output{}, p.fail(hook, plugins.KindBadOutput, "headers are not a JSON object of strings", err)
		}
	}
	return out, nil
}

func (p *Plugin) fail(hook pluginsdk.Hook, kind plugins.ErrorKind, msg string, err error) *plugins.Error {
	return &plugins.Error{Plugin: p.name, Hook: hook.String(), Kind: kind, Message: msg, Err: err}
}

// classify names what killed the instance, using wazero's exit codes and
// what the Go runtime printed on stderr (a panic and an OOM both surface
// as trap "unreachable").
func (p *Plugin) classify(ctx context.Context, hook pluginsdk.Hook, inst *instance, err error) *plugins.Error {
	out := inst.stderr.output()
	kind := plugins.KindTrap
	var exit *sys.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeDeadlineExceeded:
		kind = plugins.KindTimeout
	case errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeContextCanceled:
		kind = plugins.KindTimeout
	case ctx.Err() != nil && !p.trusted:
		kind = plugins.KindTimeout
	case strings.Contains(out, "out of memory"):
		kind = plugins.KindOutOfMemory
	case strings.Contains(out, "panic:"):
		kind = plugins.KindPanic
	case errors.As(err, &exit):
		kind = plugins.KindCrash
	}
	msg := ""
	if kind == plugins.KindTimeout {
		msg = fmt.Sprintf("deadline %s exceeded", p.timeout)
	}
	if s := firstLines(out, 3); s != "" {
		if msg != "" {
			msg += "; "
		}
		msg += "guest stderr: " + s
	}
	return &plugins.Error{Plugin: p.name, Hook: hook.String(), Kind: kind, Message: msg, Err: firstLineErr{err}}
}

// firstLineErr keeps wazero's multi-line stack traces out of error text
// while preserving the original for errors.As.
type firstLineErr struct{ err error }

func (e firstLineErr) Error() string {
	s, _, _ := strings.Cut(e.err.Error(), "\n")
	return s
}
func (e firstLineErr) Unwrap() error { return e.err }

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	var keep []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "goroutine ") || strings.HasPrefix(l, "[") {
			continue
		}
		keep = append(keep, l)
		if len(keep) == n {
			break
		}
	}
	return strings.Join(keep, " | ")
}

// Instances reports how many instances the plugin has now, idle or busy.
func (p *Plugin) Instances() int { return int(p.live.Load()) }

// grow adds an instance in the background when a call found none idle and
// the plugin is below its pool size. The waiting call takes whichever
// instance is free first, the new one or one coming back from a call.
func (p *Plugin) grow() {
	for {
		n := p.live.Load()
		if n >= int32(p.size) {
			return
		}
		if p.live.CompareAndSwap(n, n+1) {
			break
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		p.live.Add(-1)
		return
	}
	p.spawn()
}

// replace closes a dead instance and builds a new one in the background, so
// the failing call returns at once and other calls keep using the rest of
// the pool meanwhile.
func (p *Plugin) replace(dead *instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = dead.mod.Close(context.Background())
	if p.closed.Load() {
		p.live.Add(-1)
		return
	}
	p.spawn()
}

// spawn builds one instance in the background and pools it, retrying with
// backoff until it succeeds or the plugin closes; called with p.mu held.
func (p *Plugin) spawn() {
	p.replacer.Add(1)
	p.spawning.Add(1)
	go func() {
		defer p.replacer.Done()
		defer p.spawning.Add(-1)
		backoff := 10 * time.Millisecond
		for !p.closed.Load() {
			inst, err := p.newConfiguredInstance(context.Background())
			if err == nil {
				p.pool <- inst
				return
			}
			p.log.Error("creating wasm instance failed; retrying", "err", err, "backoff", backoff)
			time.Sleep(backoff)
			backoff = min(backoff*2, 5*time.Second)
		}
	}()
}

// drain closes the pooled instances present now.
func (p *Plugin) drain(ctx context.Context) {
	for {
		select {
		case inst := <-p.pool:
			_ = inst.mod.Close(ctx)
		default:
			return
		}
	}
}

// Close stops the plugin. Callers must not race Close with calls (the
// Manager guarantees it by reference counting generations); a call
// arriving after Close fails with KindClosed.
func (p *Plugin) Close() error {
	p.mu.Lock()
	p.closed.Store(true)
	p.mu.Unlock()
	if p.idleStop != nil {
		close(p.idleStop)
		<-p.idleDone
	}
	p.replacer.Wait()
	p.state.Lock()
	defer p.state.Unlock()
	if !p.running {
		return nil
	}
	if err := p.stop(context.Background()); err != nil {
		return fmt.Errorf("wasm: close runtime of %q: %w", p.name, err)
	}
	return nil
}

// InstanceMemoryBytes reports the linear memory of one idle instance; used
// by benchmarks and status to show what an instance costs.
func (p *Plugin) InstanceMemoryBytes() uint64 {
	select {
	case inst := <-p.pool:
		n := uint64(inst.mem.Size())
		p.pool <- inst
		return n
	default:
		return 0
	}
}
