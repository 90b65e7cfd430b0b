// Package mcp is the gateway's MCP client capability: MCP servers the gateway
// connects to (Streamable HTTP, SSE or stdio, through the official Go SDK),
// their tools, tool execution for inference callers, and server-level OAuth
// 2.0 for MCP servers that need it (spec: MCP client creation request,
// OAuth configuration status, MCP client and OAuth endpoints).
//
// Clients are managed through /api/mcp/... and the config file's
// `mcp_clients` array. OAuth tokens live in the sealed store (encrypted with
// GATEWAY_ENCRYPTION_KEY) and are refreshed by a background worker while the
// client is enabled, or inline when a call finds them expired.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/wasmgate/gateway/host/logs"
	"github.com/wasmgate/gateway/host/secret"
	"github.com/wasmgate/gateway/store"
)

// Store namespaces owned by this package. Keys are not sealed by the store
// (only values are), so flow states are keyed by their SHA-256, never by
// the state value itself.
const (
	nsClients = "mcp_clients"       // client id -> Client
	nsNames   = "mcp_client_names"  // name -> client id (uniqueness)
	nsOAuth   = "mcp_oauth_configs" // oauth config id -> oauthConfig
	nsTokens  = "mcp_oauth_tokens"  // oauth config id -> token
	nsFlows   = "mcp_oauth_flows"   // sha256(state) -> flow
)

// Options configures a Service.
type Options struct {
	// Store holds clients, OAuth configs, flows and tokens; the server
	// seals it at rest when an encryption key is set.
	Store store.Store
	// Log receives connection and refresh messages (never tokens).
	Log *slog.Logger
	// Secrets resolves env./vault. references in headers and stdio env.
	Secrets *secret.Resolver
	// Logs records tool calls (RequestType "mcp_tool"); nil records nothing.
	Logs *logs.Logger
	// ConfigEntries is the raw JSON of the config file's `mcp_clients` array.
	ConfigEntries json.RawMessage
	// ExternalURL is mcp_external_client_url: the public base of the
	// gateway for OAuth redirect URIs. The request Host is used when empty.
	ExternalURL string
	// AllowPrivateNetwork lets connection strings and OAuth endpoints reach
	// loopback and private addresses.
	AllowPrivateNetwork bool
	// AllowStdio allows stdio clients (a command run on the gateway host).
	AllowStdio bool
	// ConnectTimeout bounds connecting and listing tools (default 15s).
	ConnectTimeout time.Duration
	// ToolTimeout bounds one tool call (default 60s).
	ToolTimeout time.Duration
	// FlowTTL is the lifetime of an authorize URL and its state (default 15m).
	FlowTTL time.Duration
	// RefreshInterval and RefreshBefore drive the background refresher
	// (defaults 30s and 5m).
	RefreshInterval time.Duration
	RefreshBefore   time.Duration
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
}

// Service is the MCP client capability.
type Service struct {
	o       Options
	st      store.Store
	log     *slog.Logger
	secrets *secret.Resolver
	now     func() time.Time
	// http reaches MCP servers and OAuth endpoints; it carries the SSRF
	// guard unless private networks are allowed.
	http *http.Client

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[string]*conn // client id -> live connection state
	closed bool

	// refreshMu serializes refreshes per OAuth config: providers rotate
	// refresh tokens and treat a reused one as theft, so two concurrent
	// refreshes with the same token would revoke the grant.
	refreshMu sync.Map // oauth config id -> *sync.Mutex
}

// New opens the capability: it reconciles config-file clients, starts
// connecting the enabled ones in the background and starts the token
// refresher. Close stops everything.
func New(ctx context.Context, o Options) (*Service, error) {
	if o.Store == nil {
		return nil, errors.New("mcp: a store is required")
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Secrets == nil {
		o.Secrets = &secret.Resolver{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	defaults := []struct {
		d   *time.Duration
		def time.Duration
	}{
		{&o.ConnectTimeout, 15 * time.Second}, {&o.ToolTimeout, time.Minute}, {&o.FlowTTL, 15 * time.Minute},
		{&o.RefreshInterval, 30 * time.Second}, {&o.RefreshBefore, 5 * time.Minute},
	}
	for _, d := range defaults {
		if *d.d <= 0 {
			*d.d = d.def
		}
	}
	s := &Service{
		o: o, st: o.Store, log: o.Log, secrets: o.Secrets, now: o.Now,
		http:  newHTTPClient(!o.AllowPrivateNetwork),
		conns: map[string]*conn{},
	}
	if err := s.syncConfig(ctx, o.ConfigEntries); err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	clients, err := s.listClients(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcp: load clients: %w", err)
	}
	for i := range clients {
		if c := clients[i]; c.IsEnabled {
			s.connectAsync(c.ID)
		}
	}
	s.goTracked(s.refreshLoop)
	return s, nil
}

// Close disconnects every client (stopping stdio subprocesses) and stops
// the background workers.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	conns := s.conns
	s.conns = map[string]*conn{}
	s.mu.Unlock()
	s.cancel()
	for _, c := range conns {
		c.close()
	}
	s.wg.Wait()
	s.http.CloseIdleConnections()
	return nil
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// update runs fn in a store transaction, retrying conflicts a few more
// times than the store itself does (refreshes and state changes race).
func (s *Service) update(ctx context.Context, fn func(store.Tx) error) error {
	var err error
	for i := 0; i < 5; i++ {
		err = s.st.Update(ctx, fn)
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
		time.Sleep(time.Duration(i+1) * 10 * time.Millisecond)
	}
	return err
}

func (s *Service) listClients(ctx context.Context) ([]Client, error) {
	var out []Client
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		out, err = store.ListJSON[Client](tx, nsClients, store.ScanOptions{})
		return err
	})
	return out, err
}

func (s *Service) getClient(ctx context.Context, ref string) (Client, error) {
	var c Client
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		c, err = getClient(tx, ref)
		return err
	})
	return c, err
}

// ClientID resolves ref, an MCP client's id or name, to its id; ok is
// false when no client has it (governance validates mcp_configs with it).
func (s *Service) ClientID(ctx context.Context, ref string) (id string, ok bool, err error) {
	c, err := s.getClient(ctx, ref)
	if errors.Is(err, store.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("mcp: resolve client %q: %w", ref, err)
	}
	return c.ID, true, nil
}

// getClient loads a client by id, falling back to its name.
func getClient(tx store.Tx, ref string) (Client, error) {
	c, err := store.GetJSON[Client](tx, nsClients, ref)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return c, err
	}
	id, nerr := tx.Get(nsNames, ref)
	if nerr != nil {
		return c, err
	}
	return store.GetJSON[Client](tx, nsClients, string(id))
}

var errNameTaken = errors.New("mcp: client name already in use")

// putClient writes c and keeps the name index in step.
func putClient(tx store.Tx, c *Client, oldName string) error {
	if id, err := tx.Get(nsNames, c.Name); err == nil && string(id) != c.ID {
		return errNameTaken
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if oldName != "" && oldName != c.Name {
		if err := tx.Delete(nsNames, oldName); err != nil {
			return err
		}
	}
	if err := tx.Put(nsNames, c.Name, []byte(c.ID)); err != nil {
		return err
	}
	return store.PutJSON(tx, nsClients, c.ID, c)
}
