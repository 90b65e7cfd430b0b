// Package mcpgw makes the gateway's MCP tools usable by callers: it serves
// the gateway itself as an MCP server at /mcp (Streamable HTTP, the
// aggregated allowed tools of every MCP client), and it hooks into chat
// completions (inference.ChatTools) to inject those tools into a request
// and, when asked, run the tool-call loop in the gateway.
//
// It does not connect to MCP servers: a ToolSource (host/mcp's clients)
// supplies the tools and executes calls. See docs/mcp-server.md.
package mcpgw

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HardMaxSteps bounds the tool loop whatever the configuration says: each
// step is a model call plus tool calls, and a runaway loop costs money.
const HardMaxSteps = 25

// Defaults of the Options that are left zero.
const (
	DefaultMaxSteps    = 5
	DefaultStepsLimit  = 10
	DefaultToolTimeout = 60 * time.Second
	// DefaultMaxBodyBytes caps a JSON-RPC message posted to /mcp.
	DefaultMaxBodyBytes = 4 << 20
)

// Authenticator checks the caller of /mcp the way /v1 callers are checked
// (virtual keys: Authorization Bearer, x-api-key, x-gw-vk). It returns nil
// to let the request in, or the error to answer (an *apierr.Error such as a
// 401 envelope).
type Authenticator func(c *fiber.Ctx) error

// Options configures the Service.
type Options struct {
	// Tools supplies and executes the tools; nil means NoTools.
	Tools ToolSource
	Log   *slog.Logger
	// Authenticate guards /mcp; nil leaves it open, like /v1 today.
	Authenticate Authenticator
	// ServerEnabled mounts /mcp.
	ServerEnabled bool
	// DefaultMaxSteps is the tool loop's bound when a request names none.
	DefaultMaxSteps int
	// StepsLimit is the largest max_steps a request may ask (<= HardMaxSteps).
	StepsLimit int
	// ToolTimeout bounds one tool call.
	ToolTimeout time.Duration
	// MaxBodyBytes caps a message posted to /mcp.
	MaxBodyBytes int64
	// Version is reported to MCP clients as the server version.
	Version string
	// DisableLocalhostProtection turns off the SDK's DNS-rebinding guard
	// (a loopback listener answers only loopback Host headers).
	DisableLocalhostProtection bool
}

// Service is the MCP gateway capability.
type Service struct {
	o       Options
	log     *slog.Logger
	handler http.Handler
	// base is the parent context of bridged /mcp requests; Close cancels
	// it so no MCP handler outlives the gateway.
	base   context.Context
	cancel context.CancelFunc
}

// New validates o and builds the service.
func New(o Options) (*Service, error) {
	if o.Tools == nil {
		o.Tools = NoTools{}
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.DefaultMaxSteps == 0 {
		o.DefaultMaxSteps = DefaultMaxSteps
	}
	if o.StepsLimit == 0 {
		o.StepsLimit = DefaultStepsLimit
	}
	if o.ToolTimeout <= 0 {
		o.ToolTimeout = DefaultToolTimeout
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.StepsLimit < 1 || o.StepsLimit > HardMaxSteps {
		return nil, fmt.Errorf("mcpgw: steps limit must be between 1 and %d (got %d)", HardMaxSteps, o.StepsLimit)
	}
	if o.DefaultMaxSteps < 1 || o.DefaultMaxSteps > o.StepsLimit {
		return nil, fmt.Errorf("mcpgw: default max steps must be between 1 and the steps limit %d (got %d)", o.StepsLimit, o.DefaultMaxSteps)
	}
	s := &Service{o: o, log: o.Log}
	s.base, s.cancel = context.WithCancel(context.Background())
	srv := s.newServer()
	s.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		// Stateless: no session state in memory, so any gateway node can
		// answer any request, nothing leaks when clients vanish, and no
		// long-lived GET streams hold a shutdown. The gateway never sends
		// requests to its clients, which is all stateless gives up.
		Stateless:                  true,
		Logger:                     o.Log,
		MaxRequestBodyBytes:        o.MaxBodyBytes,
		DisableLocalhostProtection: o.DisableLocalhostProtection,
	})
	return s, nil
}

// Routes mounts /mcp on app. It is an inference-side route, authenticated
// by Options.Authenticate, not a management route.
func (s *Service) Routes(app fiber.Router) {
	if !s.o.ServerEnabled {
		return
	}
	h := bridge(s.base, s.handler)
	serve := func(c *fiber.Ctx) error {
		if s.o.Authenticate != nil {
			if err := s.o.Authenticate(c); err != nil {
				return err
			}
		}
		return h(c)
	}
	app.All("/mcp", serve)
}

// Close ends in-flight /mcp handlers.
func (s *Service) Close() error {
	s.cancel()
	return nil
}
