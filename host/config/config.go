// Package config loads the gateway's configuration with koanf.
//
// Precedence, lowest first: built-in defaults < config file (JSON or YAML,
// from --config or GATEWAY_CONFIG) < GATEWAY_* environment variables < flags.
// Environment names map to keys by dropping the prefix, lower-casing and
// reading "__" as nesting: GATEWAY_AUTH_CONFIG__ADMIN_USERNAME sets
// auth_config.admin_username, GATEWAY_DATA_DIR sets data_dir.
//
// Entity sections (providers, plugins, webhooks, mcp_clients) are kept as raw
// JSON: the capability owning each entity decodes and validates its section,
// so its schema lives in one place.
package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Config is the gateway's validated configuration.
type Config struct {
	// Host is the listen address (default 127.0.0.1).
	Host string `koanf:"host" json:"host"`
	// Port is the listen port (default 8080).
	Port int `koanf:"port" json:"port"`
	// DataDir holds the Badger stores, the plugin compilation cache and
	// uploaded plugin modules.
	DataDir string `koanf:"data_dir" json:"data_dir"`
	// PluginsDir holds first-party wasm modules (`source: "pii"` loads
	// PluginsDir/pii.wasm) and provider adapters (adapter-<family>.wasm,
	// auto-loaded); relative plugin paths resolve against it.
	PluginsDir string `koanf:"plugins_dir" json:"plugins_dir"`
	// PluginCacheDir holds wazero's compiled machine code (default
	// data_dir/wasm-cache). Sharing it between gateways on one host saves
	// the cold compile (about a second per module) at start-up.
	PluginCacheDir string `koanf:"plugin_cache_dir" json:"plugin_cache_dir"`
	// PluginIdleUnload unloads a wasm plugin's runtime (compiled code,
	// instances, their memory) after this long without a call; the next
	// call starts it again in tens of milliseconds from the compilation
	// cache. 0 keeps every plugin loaded.
	PluginIdleUnload Duration `koanf:"plugin_idle_unload" json:"plugin_idle_unload"`
	// UntrustedBundledAdapters runs the adapters shipped with the gateway
	// with termination checks, like third-party modules (slower; off by
	// default because they come from the same build as the binary).
	UntrustedBundledAdapters bool `koanf:"untrusted_bundled_adapters" json:"untrusted_bundled_adapters"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `koanf:"log_level" json:"log_level"`
	// LogFormat is text or json.
	LogFormat string `koanf:"log_format" json:"log_format"`
	// EncryptionKey seals the store at rest (GATEWAY_ENCRYPTION_KEY).
	EncryptionKey string `koanf:"encryption_key" json:"-"`
	// SetupToken unlocks the management API while dashboard auth is inactive.
	SetupToken string `koanf:"setup_token" json:"-"`

	// PprofAddr, when set (e.g. 127.0.0.1:6060), serves net/http/pprof on
	// its own listener for profiling; never expose it publicly.
	PprofAddr string `koanf:"pprof_addr" json:"pprof_addr,omitempty"`

	// MemoryLimitMB, when positive, is the Go runtime's soft memory limit
	// in MiB (debug.SetMemoryLimit): the collector works harder as the heap
	// nears it instead of letting it double, which bounds the anonymous RSS
	// of a gateway under sustained load. The GOMEMLIMIT environment
	// variable, when set, wins. 0 leaves the runtime's default (no limit).
	MemoryLimitMB int `koanf:"memory_limit_mb" json:"memory_limit_mb,omitempty"`

	Server     Server     `koanf:"server" json:"server"`
	AuthConfig AuthConfig `koanf:"auth_config" json:"auth_config"`
	Vault      Vault      `koanf:"vault" json:"vault"`
	Client     Client     `koanf:"client" json:"client"`
	Logs       Logs       `koanf:"logs" json:"logs"`
	Async      Async      `koanf:"async" json:"async"`
	Governance Governance `koanf:"governance" json:"governance"`
	// MCPExternalClientURL is the public base URL of the gateway used as
	// the OAuth redirect_uri base for MCP servers; the request Host when unset.
	MCPExternalClientURL string `koanf:"mcp_external_client_url" json:"mcp_external_client_url,omitempty"`
	// MCPClientConfig tunes the MCP client capability (host/mcp).
	MCPClientConfig MCPClientConfig `koanf:"mcp_client_config" json:"mcp_client_config"`
	MCPGateway      MCPGateway      `koanf:"mcp_gateway" json:"mcp_gateway"`

	// Entities holds the raw entity sections by name ("providers", ...).
	Entities map[string]json.RawMessage `koanf:"-" json:"-"`
	// File is the config file path that was loaded, if any.
	File string `koanf:"-" json:"config_file,omitempty"`
}

// Server tunes the HTTP listener.
type Server struct {
	// MaxBodyBytes caps request bodies (inference carries large multimodal payloads).
	MaxBodyBytes int `koanf:"max_body_bytes" json:"max_body_bytes"`
	// ManagementMaxBodyBytes caps /api bodies, which are small JSON documents;
	// plugin uploads have their own cap.
	ManagementMaxBodyBytes int `koanf:"management_max_body_bytes" json:"management_max_body_bytes"`
	// PluginUploadMaxBytes caps .wasm uploads through /api/plugins.
	PluginUploadMaxBytes int `koanf:"plugin_upload_max_bytes" json:"plugin_upload_max_bytes"`
	// ReadTimeout bounds reading a request, WriteTimeout writing a response
	// (0 disables: streams can last minutes), IdleTimeout keep-alive idling.
	ReadTimeout  Duration `koanf:"read_timeout" json:"read_timeout"`
	WriteTimeout Duration `koanf:"write_timeout" json:"write_timeout"`
	IdleTimeout  Duration `koanf:"idle_timeout" json:"idle_timeout"`
	// ShutdownTimeout bounds the drain of in-flight requests on SIGTERM.
	ShutdownTimeout Duration `koanf:"shutdown_timeout" json:"shutdown_timeout"`
	// TrustedProxies lists proxy addresses or CIDR prefixes whose
	// X-Forwarded-For is believed when identifying clients (login
	// throttling, audit, async jobs; see host/clientip).
	TrustedProxies []string `koanf:"trusted_proxies" json:"trusted_proxies"`
}

// AuthConfig configures dashboard and management authentication.
type AuthConfig struct {
	// Enabled turns dashboard auth on; it also needs an admin account. nil
	// means "on when an admin account is configured".
	Enabled *bool `koanf:"enabled" json:"enabled,omitempty"`
	// AdminUsername and AdminPassword are the local admin's credentials. The
	// password may be given as a bcrypt hash; plain text is hashed on load and
	// only the hash is stored.
	AdminUsername string `koanf:"admin_username" json:"admin_username"`
	AdminPassword string `koanf:"admin_password" json:"-"`
	// SessionTTL is how long a dashboard session token lives.
	SessionTTL Duration `koanf:"session_ttl" json:"session_ttl"`
	// LoginAttemptsPerMinute throttles failed logins per client.
	LoginAttemptsPerMinute int `koanf:"login_attempts_per_minute" json:"login_attempts_per_minute"`
}

// Vault points secret references (`vault.path`) at a HashiCorp Vault KV v2 engine.
type Vault struct {
	Address   string   `koanf:"address" json:"address"`
	Token     string   `koanf:"token" json:"-"`
	Mount     string   `koanf:"mount" json:"mount"`
	Namespace string   `koanf:"namespace" json:"namespace"`
	CacheTTL  Duration `koanf:"cache_ttl" json:"cache_ttl"`
	Timeout   Duration `koanf:"timeout" json:"timeout"`
}

// Client holds client-facing behaviour settings.
type Client struct {
	WebhookConfig WebhookConfig `koanf:"webhook_config" json:"webhook_config"`
}

// WebhookConfig holds gateway-wide webhook settings.
type WebhookConfig struct {
	// DeliveryHistoryRetentionDays prunes delivery records older than this.
	DeliveryHistoryRetentionDays int `koanf:"delivery_history_retention_days" json:"delivery_history_retention_days"`
}

// Logs configures the request-log store (data_dir/logs).
type Logs struct {
	// Enabled records every inference request (default true).
	Enabled bool `koanf:"enabled" json:"enabled"`
	// CaptureContent keeps request and response bodies in the records
	// (default false: bodies may hold personal data).
	CaptureContent bool `koanf:"capture_content" json:"capture_content"`
	// MaxContentBytes cuts each captured body to this size.
	MaxContentBytes int `koanf:"max_content_bytes" json:"max_content_bytes"`
	// RetentionDays deletes records older than this; 0 keeps them forever.
	RetentionDays int `koanf:"retention_days" json:"retention_days"`
	// QueueSize is the hand-off queue between requests and the log writer.
	QueueSize int `koanf:"queue_size" json:"queue_size"`
	// BatchSize is the most records written in one transaction.
	BatchSize int `koanf:"batch_size" json:"batch_size"`
	// FlushInterval is the longest a record waits before it is written.
	FlushInterval Duration `koanf:"flush_interval" json:"flush_interval"`
	// EnqueueTimeout is how long a request waits on a full queue before its
	// record is dropped (counted and logged).
	EnqueueTimeout Duration `koanf:"enqueue_timeout" json:"enqueue_timeout"`
	// MaxScanRecords caps the records one query or stats call examines.
	MaxScanRecords int `koanf:"max_scan_records" json:"max_scan_records"`
}

// Async configures async inference jobs (/v1/async/*).
type Async struct {
	// Workers is how many jobs run at once.
	Workers int `koanf:"workers" json:"workers"`
	// ResultTTL is how long a finished job's result can be fetched.
	ResultTTL Duration `koanf:"result_ttl" json:"result_ttl"`
	// JobTimeout bounds one run of a job; a job over it fails with 504.
	JobTimeout Duration `koanf:"job_timeout" json:"job_timeout"`
	// MaxAttempts is how many runs a job gets when restarts interrupt it.
	MaxAttempts int `koanf:"max_attempts" json:"max_attempts"`
	// PruneInterval is how often expired jobs are pruned.
	PruneInterval Duration `koanf:"prune_interval" json:"prune_interval"`
	// PruneGrace keeps an expired result this long before it is dropped.
	PruneGrace Duration `koanf:"prune_grace" json:"prune_grace"`
	// TombstoneTTL is how long after expiry a job answers 410, not 404.
	TombstoneTTL Duration `koanf:"tombstone_ttl" json:"tombstone_ttl"`
	// MaxBacklog caps the jobs accepted and not finished (queued or
	// running); a submit beyond it is refused with 429.
	MaxBacklog int `koanf:"max_backlog" json:"max_backlog"`
	// MaxBacklogPerCredential caps one submitting credential's unfinished
	// jobs (0: no cap beyond MaxBacklog).
	MaxBacklogPerCredential int `koanf:"max_backlog_per_credential" json:"max_backlog_per_credential"`
}

// Governance configures virtual keys, budgets and rate limits.
type Governance struct {
	// RequireVirtualKey refuses inference requests that carry no virtual
	// key (default false: provider keys and anonymous calls keep working).
	RequireVirtualKey bool `koanf:"require_virtual_key" json:"require_virtual_key"`
	// DefaultCompletionTokens is the completion-token estimate reserved for
	// a request that sets no max_tokens.
	DefaultCompletionTokens int `koanf:"default_completion_tokens" json:"default_completion_tokens"`
	// CounterFlushInterval is how often budget and rate-limit usage is
	// written to the store; a kill -9 loses at most this much settled usage.
	CounterFlushInterval Duration `koanf:"counter_flush_interval" json:"counter_flush_interval"`
}

// MCPClientConfig tunes MCP clients and their server-level OAuth.
type MCPClientConfig struct {
	// AllowPrivateNetwork lets MCP connection strings and OAuth endpoints
	// reach loopback and private addresses (local MCP servers, tests).
	AllowPrivateNetwork bool `koanf:"allow_private_network" json:"allow_private_network"`
	// AllowStdio allows stdio MCP clients, which run a command on the gateway host.
	AllowStdio bool `koanf:"allow_stdio" json:"allow_stdio"`
	// ConnectTimeout bounds connecting to an MCP server and listing its tools.
	ConnectTimeout Duration `koanf:"connect_timeout" json:"connect_timeout"`
	// ToolTimeout bounds one tool call.
	ToolTimeout Duration `koanf:"tool_timeout" json:"tool_timeout"`
	// OAuthFlowTTL is how long an authorize URL (its state) stays valid.
	OAuthFlowTTL Duration `koanf:"oauth_flow_ttl" json:"oauth_flow_ttl"`
	// RefreshInterval is how often the background refresher looks for
	// tokens about to expire; RefreshBefore is how close to expiry it acts.
	RefreshInterval Duration `koanf:"refresh_interval" json:"refresh_interval"`
	RefreshBefore   Duration `koanf:"refresh_before" json:"refresh_before"`
}

// MCPGateway configures the gateway's own MCP server (/mcp) and the MCP
// tool loop of chat completions (docs/mcp-server.md).
type MCPGateway struct {
	// ServerEnabled mounts /mcp.
	ServerEnabled bool `koanf:"server_enabled" json:"server_enabled"`
	// DefaultMaxSteps bounds a tool loop whose request names no max_steps.
	DefaultMaxSteps int `koanf:"default_max_steps" json:"default_max_steps"`
	// MaxSteps is the largest max_steps a request may ask for.
	MaxSteps int `koanf:"max_steps" json:"max_steps"`
	// ToolTimeout bounds one tool call.
	ToolTimeout Duration `koanf:"tool_timeout" json:"tool_timeout"`
	// DisableLocalhostProtection lets /mcp on a loopback listener answer
	// non-loopback Host headers (a reverse proxy on the same machine); the
	// protection stops DNS-rebinding pages from calling local tools.
	DisableLocalhostProtection bool `koanf:"disable_localhost_protection" json:"disable_localhost_protection"`
}

// Addr is host:port for the listener.
func (c *Config) Addr() string { return fmt.Sprintf("%s:%d", c.Host, c.Port) }

// AuthEnabled reports whether dashboard auth is active: an admin account
// exists and auth was not switched off.
func (c *Config) AuthEnabled() bool {
	hasAdmin := c.AuthConfig.AdminUsername != "" && c.AuthConfig.AdminPassword != ""
	if c.AuthConfig.Enabled != nil {
		return *c.AuthConfig.Enabled && hasAdmin
	}
	return hasAdmin
}

// Duration is a time.Duration that reads "30s"-style strings or seconds as numbers.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalText reads "1m30s" or a number of seconds.
func (d *Duration) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if v, err := time.ParseDuration(s); err == nil {
		*d = Duration(v)
		return nil
	}
	var secs float64
	if _, err := fmt.Sscanf(s, "%g", &secs); err == nil && !strings.ContainsAny(s, " \t") {
		*d = Duration(time.Duration(secs * float64(time.Second)))
		return nil
	}
	return fmt.Errorf("invalid duration %q (use a number of seconds or a Go duration like 30s)", s)
}
