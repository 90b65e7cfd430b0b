package mcp

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/secret"
)

// Connection types.
const (
	ConnHTTP  = "http" // Streamable HTTP
	ConnSSE   = "sse"  // the 2024-11-05 HTTP+SSE transport
	ConnStdio = "stdio"
)

// Auth types.
const (
	AuthNone    = "none"
	AuthHeaders = "headers"
	AuthOAuth   = "oauth"
)

// Client states (the `state` field of a client).
const (
	StateConnected    = "connected"
	StateDisconnected = "disconnected"
	StateError        = "error"
	StatePendingOAuth = "pending_oauth"
)

// Client is a stored MCP client. Connection state is not stored: it belongs
// to this process and is reported from the live connection.
type Client struct {
	ID               string                  `json:"id"`
	Name             string                  `json:"name"`
	ConnectionType   string                  `json:"connection_type"`
	ConnectionString string                  `json:"connection_string,omitempty"`
	StdioConfig      *StdioConfig            `json:"stdio_config,omitempty"`
	AuthType         string                  `json:"auth_type"`
	Headers          map[string]secret.Value `json:"headers,omitempty"`
	OAuthConfigID    string                  `json:"oauth_config_id,omitempty"`
	ToolsToExecute   []string                `json:"tools_to_execute"`
	IsEnabled        bool                    `json:"is_enabled"`
	ConfigHash       string                  `json:"config_hash,omitempty"`
	CreatedAt        time.Time               `json:"created_at"`
	UpdatedAt        time.Time               `json:"updated_at"`
}

// StdioConfig is the command a stdio client runs. Env values are
// secret-capable (plain, env. or vault. references) and redacted in answers.
type StdioConfig struct {
	Command string                  `json:"command"`
	Args    []string                `json:"args,omitempty"`
	Env     map[string]secret.Value `json:"env,omitempty"`
}

// Input is the body of POST /api/mcp/client (and of PUT, where the
// immutable fields may be repeated unchanged).
type Input struct {
	Name             string                  `json:"name"`
	ConnectionType   string                  `json:"connection_type"`
	ConnectionString string                  `json:"connection_string"`
	StdioConfig      *StdioConfig            `json:"stdio_config"`
	AuthType         string                  `json:"auth_type"`
	Headers          map[string]secret.Value `json:"headers"`
	OAuthConfig      *OAuthInput             `json:"oauth_config"`
	ToolsToExecute   []string                `json:"tools_to_execute"`
	IsEnabled        *bool                   `json:"is_enabled"`
}

// OAuthInput is the spec's `oauth_config` object.
type OAuthInput struct {
	ClientID        *string       `json:"client_id"`
	ClientSecret    *secret.Value `json:"client_secret"`
	AuthorizeURL    string        `json:"authorize_url"`
	TokenURL        string        `json:"token_url"`
	RegistrationURL string        `json:"registration_url"`
	ServerURL       string        `json:"server_url"`
	Resource        string        `json:"resource"`
	Scopes          []string      `json:"scopes"`
}

// fieldError is a validation failure naming the field.
type fieldError struct{ field, msg string }

func (e *fieldError) api() *apierr.Error { return apierr.BadRequest("invalid_field", e.field, e.msg) }

func bad(field, format string, a ...any) *fieldError {
	return &fieldError{field: field, msg: fmt.Sprintf(format, a...)}
}

// namePattern keeps names free of "-": tool calls are addressed as
// "<client>-<tool>" and split at the first hyphen.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// normalize validates in and builds the client it describes. allowStdio is
// the gateway's mcp_client_config.allow_stdio.
func (in *Input) normalize(allowStdio bool) (Client, *fieldError) {
	c := Client{
		Name: strings.TrimSpace(in.Name), ConnectionType: strings.ToLower(strings.TrimSpace(in.ConnectionType)),
		ConnectionString: strings.TrimSpace(in.ConnectionString), AuthType: strings.ToLower(strings.TrimSpace(in.AuthType)),
		Headers: in.Headers, IsEnabled: in.IsEnabled == nil || *in.IsEnabled,
	}
	if !namePattern.MatchString(c.Name) {
		return c, bad("name", "name is required: 1 to 64 letters, digits or underscores (no hyphen: tools are named <client>-<tool>)")
	}
	if c.AuthType == "" {
		c.AuthType = AuthNone
		if len(in.Headers) > 0 {
			c.AuthType = AuthHeaders
		}
	}
	switch c.ConnectionType {
	case ConnHTTP, ConnSSE:
		if err := checkURL(c.ConnectionString); err != nil {
			return c, bad("connection_string", "%v", err)
		}
		if in.StdioConfig != nil {
			return c, bad("stdio_config", "stdio_config applies to connection_type stdio only")
		}
	case ConnStdio:
		if !allowStdio {
			return c, bad("connection_type", "stdio clients are disabled on this gateway (mcp_client_config.allow_stdio)")
		}
		if c.ConnectionString != "" {
			return c, bad("connection_string", "stdio clients take stdio_config, not a connection_string")
		}
		if in.StdioConfig == nil || strings.TrimSpace(in.StdioConfig.Command) == "" {
			return c, bad("stdio_config.command", "stdio_config.command is required for connection_type stdio")
		}
		sc := *in.StdioConfig
		sc.Command = strings.TrimSpace(sc.Command)
		for k := range sc.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return c, bad("stdio_config.env", "invalid environment variable name %q", k)
			}
		}
		c.StdioConfig = &sc
	case "":
		return c, bad("connection_type", "connection_type is required (http, sse or stdio)")
	default:
		return c, bad("connection_type", "unknown connection_type %q (use http, sse or stdio)", in.ConnectionType)
	}
	switch c.AuthType {
	case AuthNone:
		if len(in.Headers) > 0 {
			return c, bad("headers", "headers need auth_type headers")
		}
	case AuthHeaders:
		if c.ConnectionType == ConnStdio {
			return c, bad("auth_type", "stdio clients take no auth (use stdio_config.env)")
		}
		if len(in.Headers) == 0 {
			return c, bad("headers", "auth_type headers needs at least one header")
		}
		for k, v := range in.Headers {
			if !headerName.MatchString(k) {
				return c, bad("headers", "invalid header name %q", k)
			}
			if v.IsZero() {
				return c, bad("headers."+k, "header value is empty")
			}
		}
	case AuthOAuth:
		if c.ConnectionType == ConnStdio {
			return c, bad("auth_type", "OAuth applies to http and sse connections only")
		}
		if in.OAuthConfig == nil {
			return c, bad("oauth_config", "auth_type oauth needs oauth_config")
		}
		if len(in.Headers) > 0 {
			return c, bad("headers", "headers need auth_type headers")
		}
	default:
		return c, bad("auth_type", "unknown auth_type %q (use none, headers or oauth)", in.AuthType)
	}
	if c.AuthType != AuthOAuth && in.OAuthConfig != nil {
		return c, bad("oauth_config", "oauth_config needs auth_type oauth")
	}
	tools, ferr := normalizeTools(in.ToolsToExecute)
	if ferr != nil {
		return c, ferr
	}
	c.ToolsToExecute = tools
	return c, nil
}

// normalizeTools defaults an omitted filter to all tools; an empty list
// allows none.
func normalizeTools(in []string) ([]string, *fieldError) {
	if in == nil {
		return []string{"*"}, nil
	}
	out := make([]string, 0, len(in))
	seen := map[string]bool{}
	for i, t := range in {
		t = strings.TrimSpace(t)
		if t == "" {
			return nil, bad(fmt.Sprintf("tools_to_execute[%d]", i), "tool name is empty")
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out, nil
}

// checkURL accepts absolute http(s) URLs without credentials. Whether the
// host may be private is decided at dial time by the SSRF guard.
func checkURL(raw string) error {
	if raw == "" {
		return fmt.Errorf("a URL is required")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("URL must use http or https (got %q)", u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("URL has no host")
	}
	if u.User != nil {
		return fmt.Errorf("URL must not carry credentials (use headers or oauth)")
	}
	return nil
}

// allows reports whether the tools_to_execute filter admits tool.
func (c *Client) allows(tool string) bool {
	for _, t := range c.ToolsToExecute {
		if t == "*" || t == tool {
			return true
		}
	}
	return false
}

// View is a client as the API shows it: secrets redacted, live state and
// tools attached.
type View struct {
	Client
	State       string     `json:"state"`
	Error       string     `json:"error,omitempty"`
	Tools       []ToolView `json:"tools"`
	OAuthConfig *OAuthView `json:"oauth_config,omitempty"`
	// StdioConfig shadows the stored one with its env redacted.
	StdioConfig *StdioConfig `json:"stdio_config,omitempty"`
}

// ToolView is one tool of a client.
type ToolView struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Allowed     bool   `json:"allowed"`
	InputSchema any    `json:"input_schema,omitempty"`
}

func redactMap(m map[string]secret.Value) map[string]secret.Value {
	if m == nil {
		return nil
	}
	out := make(map[string]secret.Value, len(m))
	for k, v := range m {
		out[k] = v.Redacted()
	}
	return out
}

// keepMasked restores stored secrets that a client sent back in their
// redacted form (GET then PUT).
func keepMasked(in, old map[string]secret.Value) map[string]secret.Value {
	if in == nil {
		return nil
	}
	out := make(map[string]secret.Value, len(in))
	for k, v := range in {
		out[k] = secret.KeepIfMasked(v, old[k])
	}
	return out
}
