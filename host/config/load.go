package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	kjson "github.com/knadh/koanf/parsers/json"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// EntitySections are the config-file sections holding entities that are
// synced into the store at start-up.
var EntitySections = []string{"providers", "plugins", "webhooks", "mcp_clients"}

// Defaults are the embedded settings the gateway runs on with no config at all.
func Defaults() map[string]any {
	return map[string]any{
		"host":                                  "127.0.0.1",
		"port":                                  8080,
		"data_dir":                              "./data",
		"plugins_dir":                           DefaultPluginsDir(),
		"plugin_idle_unload":                    "60s",
		"log_level":                             "info",
		"log_format":                            "text",
		"server.max_body_bytes":                 64 << 20,
		"server.management_max_body_bytes":      1 << 20,
		"server.plugin_upload_max_bytes":        64 << 20,
		"server.read_timeout":                   "60s",
		"server.write_timeout":                  "0s",
		"server.idle_timeout":                   "120s",
		"server.shutdown_timeout":               "30s",
		"auth_config.session_ttl":               "24h",
		"auth_config.login_attempts_per_minute": 10,
		"vault.mount":                           "secret",
		"vault.cache_ttl":                       "5m",
		"vault.timeout":                         "5s",
		"client.webhook_config.delivery_history_retention_days": 30,
		"logs.enabled":                            true,
		"logs.capture_content":                    false,
		"logs.max_content_bytes":                  32 << 10,
		"logs.retention_days":                     30,
		"logs.queue_size":                         8192,
		"logs.batch_size":                         512,
		"logs.flush_interval":                     "100ms",
		"logs.enqueue_timeout":                    "1s",
		"logs.max_scan_records":                   100000,
		"async.workers":                           8,
		"async.result_ttl":                        "1h",
		"async.job_timeout":                       "10m",
		"async.max_attempts":                      3,
		"async.prune_interval":                    "1m",
		"async.prune_grace":                       "1m",
		"async.tombstone_ttl":                     "24h",
		"async.max_backlog":                       10000,
		"async.max_backlog_per_credential":        0,
		"mcp_client_config.allow_private_network": false,
		"mcp_client_config.allow_stdio":           true,
		"mcp_client_config.connect_timeout":       "15s",
		"mcp_client_config.tool_timeout":          "60s",
		"mcp_client_config.oauth_flow_ttl":        "15m",
		"mcp_client_config.refresh_interval":      "30s",
		"mcp_client_config.refresh_before":        "5m",
		"governance.require_virtual_key":          false,
		"governance.default_completion_tokens":    1024,
		"governance.counter_flush_interval":       "1s",

		// The gateway's MCP server and chat tool loop (docs/mcp-server.md).
		"mcp_gateway.server_enabled":    true,
		"mcp_gateway.default_max_steps": 5,
		"mcp_gateway.max_steps":         10,
		"mcp_gateway.tool_timeout":      "60s",
	}
}

// DefaultPluginsDir is the directory `plugins` next to the gateway
// executable, where `make build` and release archives put the wasm modules,
// falling back to ./bin/plugins (a checkout run with `go run`, whose
// executable lives in a temporary build directory).
func DefaultPluginsDir() string {
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Join(filepath.Dir(exe), "plugins")
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir
		}
	}
	return filepath.Join(".", "bin", "plugins")
}

// Load builds the configuration from defaults, the config file, the
// environment (environ, usually os.Environ()) and command-line args.
func Load(args []string, environ []string) (*Config, error) {
	fs := pflag.NewFlagSet("gateway", pflag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	configPath := fs.String("config", "", "config file (JSON or YAML); also GATEWAY_CONFIG")
	fs.String("host", "", "listen host (GATEWAY_HOST, default 127.0.0.1)")
	fs.Int("port", 0, "listen port (GATEWAY_PORT, default 8080)")
	fs.String("data-dir", "", "data directory (GATEWAY_DATA_DIR, default ./data)")
	fs.String("log-level", "", "debug, info, warn or error (GATEWAY_LOG_LEVEL)")
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("flags: %w", err)
	}
	env := envMap(environ)

	k := koanf.New(".")
	if err := k.Load(confmap.Provider(Defaults(), "."), nil); err != nil {
		return nil, fmt.Errorf("defaults: %w", err)
	}

	file := *configPath
	if file == "" {
		file = env["GATEWAY_CONFIG"]
	}
	entities := map[string]json.RawMessage{}
	if file != "" {
		if err := loadFile(k, file, entities); err != nil {
			return nil, err
		}
	}

	envKeys := map[string]any{}
	for name, val := range env {
		if !strings.HasPrefix(name, "GATEWAY_") || name == "GATEWAY_CONFIG" {
			continue
		}
		key := strings.ToLower(strings.TrimPrefix(name, "GATEWAY_"))
		key = strings.ReplaceAll(key, "__", ".")
		if key == "" {
			continue
		}
		envKeys[key] = val
	}
	if err := k.Load(confmap.Provider(envKeys, "."), nil); err != nil {
		return nil, fmt.Errorf("environment: %w", err)
	}

	// Only flags the user actually set override; their zero defaults must not.
	if err := k.Load(posflag.ProviderWithFlag(fs, ".", nil, func(f *pflag.Flag) (string, any) {
		if !f.Changed || f.Name == "config" {
			return "", nil
		}
		return strings.ReplaceAll(f.Name, "-", "_"), posflag.FlagVal(fs, f)
	}), nil); err != nil {
		return nil, fmt.Errorf("flags: %w", err)
	}

	var cfg Config
	var md mapstructure.Metadata
	err := k.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{
		Tag: "koanf",
		DecoderConfig: &mapstructure.DecoderConfig{
			DecodeHook: mapstructure.ComposeDecodeHookFunc(
				durationHook,
				mapstructure.TextUnmarshallerHookFunc(),
				mapstructure.StringToSliceHookFunc(","),
			),
			Metadata:         &md,
			Result:           &cfg,
			WeaklyTypedInput: true,
			TagName:          "koanf",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("config: %s", cleanDecodeError(err))
	}
	if len(md.Unused) > 0 {
		return nil, fmt.Errorf("config: unknown key %q", md.Unused[0])
	}
	cfg.Entities = entities
	cfg.File = file
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

func loadFile(k *koanf.Koanf, path string, entities map[string]json.RawMessage) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	var parser koanf.Parser
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		parser = kjson.Parser()
	case ".yaml", ".yml":
		parser = yaml.Parser()
	default:
		return fmt.Errorf("config file %s: unsupported extension (use .json, .yaml or .yml)", path)
	}
	return LoadBytes(k, raw, parser, entities, path)
}

// LoadBytes parses a config document into k, moving entity sections into
// entities. It is separate from Load so the fuzzer can drive it.
func LoadBytes(k *koanf.Koanf, raw []byte, parser koanf.Parser, entities map[string]json.RawMessage, name string) error {
	fk := koanf.New(".")
	if err := fk.Load(rawbytes.Provider(raw), parser); err != nil {
		return fmt.Errorf("config file %s: %w", name, err)
	}
	for _, sec := range EntitySections {
		v := fk.Get(sec)
		if v == nil {
			continue
		}
		b, err := jsonMarshal(v)
		if err != nil {
			return fmt.Errorf("config file %s: %s: %w", name, sec, err)
		}
		entities[sec] = b
		fk.Delete(sec)
	}
	if err := k.Merge(fk); err != nil {
		return fmt.Errorf("config file %s: %w", name, err)
	}
	return nil
}

// Validate checks values that decode but make no sense, naming the key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("config: %s: %s", key, fmt.Sprintf(format, a...)))
	}
	if c.Port < 1 || c.Port > 65535 {
		bad("port", "must be between 1 and 65535 (got %d)", c.Port)
	}
	if strings.TrimSpace(c.Host) == "" {
		bad("host", "must not be empty")
	} else if net.ParseIP(c.Host) == nil && strings.ContainsAny(c.Host, " /:") {
		bad("host", "must be an IP address or host name (got %q)", c.Host)
	}
	if strings.TrimSpace(c.DataDir) == "" {
		bad("data_dir", "must not be empty")
	}
	if c.MemoryLimitMB < 0 || (c.MemoryLimitMB > 0 && c.MemoryLimitMB < 32) {
		bad("memory_limit_mb", "must be 0 (no limit) or at least 32 (got %d)", c.MemoryLimitMB)
	}
	if c.PluginIdleUnload < 0 {
		bad("plugin_idle_unload", "must be 0 (never) or a positive duration (got %s)", c.PluginIdleUnload.D())
	}
	if strings.TrimSpace(c.PluginsDir) == "" {
		bad("plugins_dir", "must not be empty")
	} else if fi, err := os.Stat(c.PluginsDir); err == nil && !fi.IsDir() {
		// A missing directory is fine (no first-party modules installed);
		// a file there is a typo worth stopping for.
		bad("plugins_dir", "%q is not a directory", c.PluginsDir)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("log_level", "must be debug, info, warn or error (got %q)", c.LogLevel)
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		bad("log_format", "must be text or json (got %q)", c.LogFormat)
	}
	if c.Server.MaxBodyBytes < 1024 {
		bad("server.max_body_bytes", "must be at least 1024 (got %d)", c.Server.MaxBodyBytes)
	}
	if c.Server.ManagementMaxBodyBytes < 1024 {
		bad("server.management_max_body_bytes", "must be at least 1024 (got %d)", c.Server.ManagementMaxBodyBytes)
	}
	if c.Server.PluginUploadMaxBytes < 1024 {
		bad("server.plugin_upload_max_bytes", "must be at least 1024 (got %d)", c.Server.PluginUploadMaxBytes)
	}
	for key, d := range map[string]Duration{
		"server.read_timeout": c.Server.ReadTimeout, "server.write_timeout": c.Server.WriteTimeout,
		"server.idle_timeout": c.Server.IdleTimeout, "server.shutdown_timeout": c.Server.ShutdownTimeout,
		"vault.cache_ttl": c.Vault.CacheTTL, "vault.timeout": c.Vault.Timeout,
	} {
		if d < 0 {
			bad(key, "must not be negative")
		}
	}
	if c.AuthConfig.SessionTTL.D() < time.Minute {
		bad("auth_config.session_ttl", "must be at least 1m")
	}
	if c.AuthConfig.LoginAttemptsPerMinute < 1 {
		bad("auth_config.login_attempts_per_minute", "must be at least 1")
	}
	if (c.AuthConfig.AdminUsername == "") != (c.AuthConfig.AdminPassword == "") {
		bad("auth_config", "admin_username and admin_password must be set together")
	}
	if c.Vault.Address != "" && !strings.HasPrefix(c.Vault.Address, "http://") && !strings.HasPrefix(c.Vault.Address, "https://") {
		bad("vault.address", "must be an http(s) URL (got %q)", c.Vault.Address)
	}
	if c.Client.WebhookConfig.DeliveryHistoryRetentionDays < 0 {
		bad("client.webhook_config.delivery_history_retention_days", "must not be negative")
	}
	c.validateLogs(bad)
	c.validateAsync(bad)
	if g := c.Governance; g.DefaultCompletionTokens < 1 || g.DefaultCompletionTokens > 10_000_000 {
		bad("governance.default_completion_tokens", "must be between 1 and 10000000 (got %d)", g.DefaultCompletionTokens)
	}
	if d := c.Governance.CounterFlushInterval.D(); d < 10*time.Millisecond || d > time.Hour {
		bad("governance.counter_flush_interval", "must be between 10ms and 1h (got %s)", d)
	}
	c.validateMCP(bad)
	c.validateMCPGateway(bad)
	return errors.Join(errs...)
}

func (c *Config) validateMCP(bad func(key, format string, a ...any)) {
	if u := c.MCPExternalClientURL; u != "" {
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" || pu.RawQuery != "" || pu.Fragment != "" {
			bad("mcp_external_client_url", "must be an absolute http(s) URL without query or fragment (got %q)", u)
		}
	}
	m := c.MCPClientConfig
	for key, d := range map[string]Duration{
		"mcp_client_config.connect_timeout": m.ConnectTimeout, "mcp_client_config.tool_timeout": m.ToolTimeout,
		"mcp_client_config.oauth_flow_ttl": m.OAuthFlowTTL, "mcp_client_config.refresh_interval": m.RefreshInterval,
	} {
		if d.D() < 100*time.Millisecond {
			bad(key, "must be at least 100ms (got %s)", d.D())
		}
	}
	if m.RefreshBefore < 0 {
		bad("mcp_client_config.refresh_before", "must not be negative")
	}
}

// mcpGatewayHardMaxSteps mirrors mcpgw.HardMaxSteps (config must not import
// capabilities): the most tool rounds any configuration may allow.
const mcpGatewayHardMaxSteps = 25

func (c *Config) validateMCPGateway(bad func(key, format string, a ...any)) {
	m := c.MCPGateway
	if m.MaxSteps < 1 || m.MaxSteps > mcpGatewayHardMaxSteps {
		bad("mcp_gateway.max_steps", "must be between 1 and %d (got %d)", mcpGatewayHardMaxSteps, m.MaxSteps)
	}
	if m.DefaultMaxSteps < 1 || m.DefaultMaxSteps > m.MaxSteps {
		bad("mcp_gateway.default_max_steps", "must be between 1 and mcp_gateway.max_steps (got %d)", m.DefaultMaxSteps)
	}
	if m.ToolTimeout.D() < time.Second {
		bad("mcp_gateway.tool_timeout", "must be at least 1s (got %s)", m.ToolTimeout.D())
	}
}

func (c *Config) validateAsync(bad func(key, format string, a ...any)) {
	a := c.Async
	if a.Workers < 1 || a.Workers > 4096 {
		bad("async.workers", "must be between 1 and 4096 (got %d)", a.Workers)
	}
	if a.ResultTTL.D() < time.Second {
		bad("async.result_ttl", "must be at least 1s (got %s)", a.ResultTTL.D())
	}
	if a.JobTimeout.D() < time.Second {
		bad("async.job_timeout", "must be at least 1s (got %s)", a.JobTimeout.D())
	}
	if a.MaxAttempts < 1 || a.MaxAttempts > 100 {
		bad("async.max_attempts", "must be between 1 and 100 (got %d)", a.MaxAttempts)
	}
	if a.PruneInterval.D() < time.Second {
		bad("async.prune_interval", "must be at least 1s (got %s)", a.PruneInterval.D())
	}
	if a.PruneGrace.D() < 0 {
		bad("async.prune_grace", "must not be negative")
	}
	if a.MaxBacklog < 1 {
		bad("async.max_backlog", "must be at least 1 (got %d)", a.MaxBacklog)
	}
	if a.MaxBacklogPerCredential < 0 {
		bad("async.max_backlog_per_credential", "must not be negative (got %d); 0 means no per-credential cap", a.MaxBacklogPerCredential)
	}
	if a.TombstoneTTL.D() < a.PruneGrace.D() {
		bad("async.tombstone_ttl", "must be at least async.prune_grace (got %s)", a.TombstoneTTL.D())
	}
}

func (c *Config) validateLogs(bad func(key, format string, a ...any)) {
	l := c.Logs
	if l.RetentionDays < 0 {
		bad("logs.retention_days", "must not be negative (0 keeps records forever)")
	}
	if l.MaxContentBytes < 1 {
		bad("logs.max_content_bytes", "must be at least 1 (got %d)", l.MaxContentBytes)
	}
	if l.QueueSize < 1 || l.QueueSize > 1_000_000 {
		bad("logs.queue_size", "must be between 1 and 1000000 (got %d)", l.QueueSize)
	}
	if l.BatchSize < 1 || l.BatchSize > 10_000 {
		bad("logs.batch_size", "must be between 1 and 10000 (got %d)", l.BatchSize)
	}
	if l.FlushInterval.D() < time.Millisecond || l.FlushInterval.D() > time.Minute {
		bad("logs.flush_interval", "must be between 1ms and 1m (got %s)", l.FlushInterval.D())
	}
	if l.EnqueueTimeout.D() < time.Millisecond {
		bad("logs.enqueue_timeout", "must be at least 1ms (got %s)", l.EnqueueTimeout.D())
	}
	if l.MaxScanRecords < 1000 {
		bad("logs.max_scan_records", "must be at least 1000 (got %d)", l.MaxScanRecords)
	}
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if i := strings.IndexByte(kv, '='); i > 0 {
			m[kv[:i]] = kv[i+1:]
		}
	}
	return m
}

var durationType = reflect.TypeOf(Duration(0))

// durationHook accepts numbers (seconds) and strings for Duration fields;
// YAML and JSON give numbers as int or float64.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != durationType {
		return data, nil
	}
	switch v := data.(type) {
	case int:
		return Duration(time.Duration(v) * time.Second), nil
	case int64:
		return Duration(time.Duration(v) * time.Second), nil
	case float64:
		return Duration(time.Duration(v * float64(time.Second))), nil
	case string:
		var d Duration
		if err := d.UnmarshalText([]byte(v)); err != nil {
			return nil, err
		}
		return d, nil
	}
	return data, nil
}

// cleanDecodeError turns mapstructure's wording into "key: problem".
func cleanDecodeError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "1 error(s) decoding:\n\n* ")
	s = strings.ReplaceAll(s, "\n* ", "; ")
	s = strings.ReplaceAll(s, "decoding failed due to the following error(s):\n\n", "")
	s = strings.ReplaceAll(s, "'", "")
	return s
}
