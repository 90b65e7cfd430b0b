// Package process runs plugins as go-plugin subprocesses speaking gRPC. A
// subprocess isolates crashes and hangs (not a sandbox: it runs with the
// gateway's user rights, minus the environment): a crash or a call past its
// deadline kills the process, and it is restarted with exponential backoff
// while callers wait up to their own deadline.
package process

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/grpcplugin"
)

// Defaults applied when a spec leaves a limit at zero.
const (
	DefaultTimeout       = 2 * time.Second
	DefaultMaxInputBytes = 8 << 20
	DefaultStartTimeout  = 10 * time.Second
	minBackoff           = 50 * time.Millisecond
	maxBackoff           = 30 * time.Second
	// healthyRun resets the backoff: a plugin that ran this long before
	// failing is not crash-looping.
	healthyRun = 30 * time.Second
)

// Options configures a Loader.
type Options struct {
	Logger       *slog.Logger
	StartTimeout time.Duration
}

// Loader starts process plugins; it implements plugins.Loader.
type Loader struct {
	opts Options
	log  *slog.Logger
}

// NewLoader returns a Loader.
func NewLoader(opts Options) *Loader {
	l := &Loader{opts: opts, log: opts.Logger}
	if l.log == nil {
		l.log = slog.Default()
	}
	if l.opts.StartTimeout <= 0 {
		l.opts.StartTimeout = DefaultStartTimeout
	}
	return l
}

// Plugin is one supervised subprocess; it implements plugins.Plugin.
type Plugin struct {
	plugins.Hooks
	name     string
	path     string
	checksum []byte
	config   []byte
	timeout  time.Duration
	maxInput int
	log      *slog.Logger
	loader   *Loader
	manifest pluginsdk.Manifest
	impl     [16]bool

	mu      sync.Mutex
	cur     *proc
	ready   chan struct{} // closed when a restart finished (or gave up)
	backoff time.Duration
	closed  bool
}

type proc struct {
	client  *plugin.Client
	rpc     *grpcplugin.Client
	started time.Time
}

// Load starts the spec's binary, reads its manifest and configures it.
func (l *Loader) Load(ctx context.Context, spec plugins.Spec) (plugins.Plugin, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	p := &Plugin{
		name: spec.Name, path: spec.Source, config: spec.Config, loader: l,
		timeout: spec.Limits.Timeout(DefaultTimeout), maxInput: spec.Limits.MaxInputBytes,
		log: l.log.With("plugin", spec.Name), backoff: minBackoff,
	}
	if p.maxInput <= 0 {
		p.maxInput = DefaultMaxInputBytes
	}
	if len(p.config) == 0 {
		p.config = []byte("null")
	}
	if spec.SHA256 != "" {
		sum, err := hex.DecodeString(spec.SHA256)
		if err != nil || len(sum) != sha256.Size {
			return nil, fmt.Errorf("process: sha256 must be 64 hex digits")
		}
		p.checksum = sum
	}
	p.Hooks = plugins.BindHooks(p)
	pr, err := p.start(ctx, true)
	if err != nil {
		return nil, err
	}
	p.cur = pr
	return p, nil
}

// start launches the subprocess, then describe and configure.
func (p *Plugin) start(ctx context.Context, first bool) (*proc, error) {
	cmd := exec.Command(p.path)
	cfg := &plugin.ClientConfig{
		HandshakeConfig:  grpcplugin.Handshake,
		Plugins:          plugin.PluginSet{grpcplugin.PluginName: &grpcplugin.GRPCPlugin{}},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		// The gateway's environment holds secrets (encryption key, provider
		// keys); a plugin gets none of it.
		SkipHostEnv:  true,
		StartTimeout: p.loader.opts.StartTimeout,
		Logger:       newHCLogger(p.log),
		Stderr:       &lineLogger{log: p.log, source: "plugin_stderr"},
		SyncStdout:   &lineLogger{log: p.log, source: "plugin_stdout"},
	}
	if p.checksum != nil {
		cfg.SecureConfig = &plugin.SecureConfig{Checksum: p.checksum, Hash: sha256.New()}
	}
	client := plugin.NewClient(cfg)
	rpcClient, err := client.Client()
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("process: start %s: %w", p.path, err)
	}
	raw, err := rpcClient.Dispense(grpcplugin.PluginName)
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("process: dispense: %w", err)
	}
	pr := &proc{client: client, rpc: raw.(*grpcplugin.Client), started: time.Now()}
	cctx, cancel := context.WithTimeout(ctx, p.loader.opts.StartTimeout)
	defer cancel()
	if first {
		out, err := pr.rpc.Call(cctx, pluginsdk.HookDescribe, nil)
		if err != nil {
			client.Kill()
			return nil, fmt.Errorf("process: describe: %w", err)
		}
		var m pluginsdk.Manifest
		if err := json.Unmarshal(out.Body, &m); err != nil {
			client.Kill()
			return nil, fmt.Errorf("process: describe: bad manifest: %w", err)
		}
		if m.ABI != pluginsdk.ABIVersion {
			client.Kill()
			return nil, fmt.Errorf("process: manifest says ABI %d, host speaks %d", m.ABI, pluginsdk.ABIVersion)
		}
		for _, h := range m.Hooks {
			if hk, ok := pluginsdk.ParseHook(h); ok {
				p.impl[hk] = true
			}
		}
		p.manifest = m
	}
	if _, err := pr.rpc.Call(cctx, pluginsdk.HookConfigure, p.config); err != nil {
		client.Kill()
		return nil, fmt.Errorf("process: configure: %w", err)
	}
	return pr, nil
}

// Manifest is the describe result read at load.
func (p *Plugin) Manifest() pluginsdk.Manifest { return p.manifest }

func (p *Plugin) fail(hook pluginsdk.Hook, kind plugins.ErrorKind, msg string, err error) *plugins.Error {
	return &plugins.Error{Plugin: p.name, Hook: hook.String(), Kind: kind, Message: msg, Err: err}
}

// current returns the live process, waiting for a restart in progress up to
// ctx's deadline.
func (p *Plugin) current(ctx context.Context, hook pluginsdk.Hook) (*proc, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, p.fail(hook, plugins.KindClosed, "plugin is closed", nil)
		}
		if p.cur != nil {
			if !p.cur.client.Exited() {
				pr := p.cur
				p.mu.Unlock()
				return pr, nil
			}
			p.retireLocked(p.cur, "process exited")
		}
		ready := p.ready
		p.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, p.fail(hook, plugins.KindUnavailable, "plugin process is restarting", ctx.Err())
		}
	}
}

// retireLocked kills pr (if still current) and schedules a restart.
func (p *Plugin) retireLocked(pr *proc, why string) {
	if p.cur != pr {
		return // someone else already handled this process
	}
	p.cur = nil
	go pr.client.Kill()
	if time.Since(pr.started) > healthyRun {
		p.backoff = minBackoff
	}
	delay := p.backoff
	p.backoff = min(p.backoff*2, maxBackoff)
	p.ready = make(chan struct{})
	p.log.Warn("plugin process failed; restarting", "why", why, "backoff", delay)
	go p.restart(p.ready, delay)
}

func (p *Plugin) restart(ready chan struct{}, delay time.Duration) {
	defer close(ready)
	for {
		time.Sleep(delay)
		p.mu.Lock()
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return
		}
		pr, err := p.start(context.Background(), false)
		if err == nil {
			p.mu.Lock()
			if p.closed {
				p.mu.Unlock()
				pr.client.Kill()
				return
			}
			p.cur = pr
			p.mu.Unlock()
			return
		}
		p.log.Error("plugin restart failed", "err", err)
		delay = min(delay*2, maxBackoff)
	}
}

// Invoke runs one hook in the subprocess.
func (p *Plugin) Invoke(ctx context.Context, hook pluginsdk.Hook, in plugins.Input) (pluginsdk.Output, error) {
	if int(hook) >= len(p.impl) || !p.impl[hook] {
		return pluginsdk.Pass(), nil
	}
	payload := in.Body
	if hook.IsStream() {
		payload = pluginsdk.AppendStreamFrame(make([]byte, 0, 8+len(in.State)+len(in.Body)),
			pluginsdk.StreamInput{State: in.State, Batch: in.Body, End: in.End})
	}
	if len(payload) > p.maxInput {
		return pluginsdk.Output{}, p.fail(hook, plugins.KindInputTooLarge,
			fmt.Sprintf("input is %d bytes, limit is %d", len(payload), p.maxInput), nil)
	}
	cctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	pr, err := p.current(cctx, hook)
	if err != nil {
		return pluginsdk.Output{}, err
	}
	out, err := pr.rpc.Call(cctx, hook, payload)
	if err == nil {
		return out, nil
	}
	var pe *pluginsdk.Error
	if errors.As(err, &pe) {
		return out, plugins.GuestError(p.name, hook, pe.Code, pe.Message)
	}
	switch {
	case (cctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded) && ctx.Err() == nil:
		// Our deadline, not the caller's: the plugin hangs. Kill it rather
		// than let stuck calls pile up in it. gRPC sends the deadline to
		// the subprocess, whose side may expire and reset the stream a
		// moment before our context reports it.
		p.mu.Lock()
		p.retireLocked(pr, "call exceeded its deadline")
		p.mu.Unlock()
		return pluginsdk.Output{}, p.fail(hook, plugins.KindTimeout, fmt.Sprintf("deadline %s exceeded; process killed", p.timeout), nil)
	case ctx.Err() != nil:
		return pluginsdk.Output{}, p.fail(hook, plugins.KindTimeout, "caller gave up", ctx.Err())
	}
	// Give the exit a moment to be observed so a crash is reported as one.
	for i := 0; i < 20 && !pr.client.Exited(); i++ {
		time.Sleep(5 * time.Millisecond)
	}
	kind := plugins.KindUnavailable
	if pr.client.Exited() {
		kind = plugins.KindCrash
		p.mu.Lock()
		p.retireLocked(pr, "process exited during a call")
		p.mu.Unlock()
	}
	return pluginsdk.Output{}, p.fail(hook, kind, "", firstLine(err))
}

func firstLine(err error) error {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return errors.New(s)
}

// Close kills the subprocess; restarts stop.
func (p *Plugin) Close() error {
	p.mu.Lock()
	p.closed = true
	pr := p.cur
	p.cur = nil
	p.mu.Unlock()
	if pr != nil {
		pr.client.Kill()
	}
	return nil
}

// lineLogger forwards a subprocess's output lines to slog.
type lineLogger struct {
	log    *slog.Logger
	source string
	mu     sync.Mutex
	buf    []byte
}

func (l *lineLogger) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, b...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimSpace(string(l.buf[:i])); line != "" {
			l.log.Info(line, "source", l.source)
		}
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 64<<10 {
		l.log.Info(string(l.buf), "source", l.source)
		l.buf = l.buf[:0]
	}
	return len(b), nil
}

// newHCLogger routes go-plugin's own logs (and plugins' hclog lines) into
// slog. Info and up only: go-plugin is chatty at debug.
func newHCLogger(log *slog.Logger) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:   "go-plugin",
		Level:  hclog.Info,
		Output: &lineLogger{log: log, source: "go-plugin"},
	})
}
