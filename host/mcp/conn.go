package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/gateway/store"
)

// conn is the live side of a client in this process. A conn is replaced
// whole on (re)connect, never edited, except for its tool list.
type conn struct {
	state   string
	err     string
	session *mcp.ClientSession
	tools   atomic.Pointer[[]*mcp.Tool]
	rt      *authTransport
	cancel  context.CancelFunc
}

func (c *conn) close() {
	if c == nil {
		return
	}
	if c.session != nil {
		_ = c.session.Close()
	}
	if c.cancel != nil {
		c.cancel()
	}
}

func (c *conn) toolList() []*mcp.Tool {
	if c == nil {
		return nil
	}
	if p := c.tools.Load(); p != nil {
		return *p
	}
	return nil
}

// authTransport adds a client's credentials to every request the SDK makes:
// static headers, or the OAuth bearer token, refreshed inline when expired.
type authTransport struct {
	s        *Service
	base     http.RoundTripper
	headers  map[string]string
	configID string
	// unauthorized is set when the MCP server answered 401: the token the
	// gateway considered valid was refused.
	unauthorized atomic.Bool
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	if t.configID != "" {
		tok, err := t.s.validToken(req.Context(), t.configID)
		if err != nil {
			return nil, err
		}
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := t.base.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		t.unauthorized.Store(true)
	}
	return resp, err
}

// connectAsync connects a client in the background (start-up).
func (s *Service) connectAsync(id string) {
	s.goTracked(func() { s.connect(s.ctx, id) })
}

// setConn installs c for id, closing the connection it replaces. After
// Close it closes c instead.
func (s *Service) setConn(id string, c *conn) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.close()
		return
	}
	old := s.conns[id]
	s.conns[id] = c
	s.mu.Unlock()
	if old != nil && old != c {
		old.close()
	}
}

func (s *Service) dropConn(id string) {
	s.mu.Lock()
	old := s.conns[id]
	delete(s.conns, id)
	s.mu.Unlock()
	old.close()
}

func (s *Service) getConn(id string) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns[id]
}

// connect (re)connects client id and lists its tools; the outcome is the
// client's state. Disabled clients are disconnected, OAuth clients without
// an authorized token wait in pending_oauth.
func (s *Service) connect(ctx context.Context, id string) *conn {
	cl, err := s.getClient(ctx, id)
	if err != nil {
		s.dropConn(id)
		return nil
	}
	if !cl.IsEnabled {
		c := &conn{state: StateDisconnected}
		s.setConn(id, c)
		return c
	}
	var headers map[string]string
	configID := ""
	switch cl.AuthType {
	case AuthOAuth:
		o, t, err := s.loadOAuth(ctx, cl.OAuthConfigID)
		if err != nil || o.Status != OAuthAuthorized || t == nil {
			reason := "OAuth configuration missing"
			if err == nil {
				reason = authReason(&o)
			}
			c := &conn{state: StatePendingOAuth, err: reason}
			s.setConn(id, c)
			return c
		}
		configID = cl.OAuthConfigID
	case AuthHeaders:
		headers = make(map[string]string, len(cl.Headers))
		for k, v := range cl.Headers {
			val, err := s.secrets.Resolve(ctx, v)
			if err != nil {
				return s.failConn(id, fmt.Errorf("header %s: %w", k, err))
			}
			headers[k] = val
		}
	}
	rt := &authTransport{s: s, base: s.http.Transport, headers: headers, configID: configID}
	hc := &http.Client{Transport: rt, CheckRedirect: s.http.CheckRedirect}
	// The session outlives this call (the SSE stream and stdio process run
	// until Close), so it gets its own context; the connect timeout cancels
	// it only while connecting.
	sctx, cancel := context.WithCancel(s.ctx)
	var transport mcp.Transport
	switch cl.ConnectionType {
	case ConnHTTP:
		transport = &mcp.StreamableClientTransport{Endpoint: cl.ConnectionString, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}
	case ConnSSE:
		transport = &mcp.SSEClientTransport{Endpoint: cl.ConnectionString, HTTPClient: hc}
	case ConnStdio:
		cmd, err := s.command(ctx, cl.StdioConfig)
		if err != nil {
			cancel()
			return s.failConn(id, err)
		}
		transport = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	default:
		cancel()
		return s.failConn(id, fmt.Errorf("unknown connection type %q", cl.ConnectionType))
	}
	c := &conn{state: StateConnected, rt: rt, cancel: cancel}
	client := mcp.NewClient(&mcp.Implementation{Name: "wasmgate", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(ctx context.Context, req *mcp.ToolListChangedRequest) {
			if tools, err := listTools(ctx, req.Session); err == nil {
				c.tools.Store(&tools)
			}
		},
	})
	var timedOut atomic.Bool
	timer := time.AfterFunc(s.o.ConnectTimeout, func() { timedOut.Store(true); cancel() })
	session, err := client.Connect(sctx, transport, nil)
	var tools []*mcp.Tool
	if err == nil {
		tctx, tcancel := context.WithTimeout(ctx, s.o.ConnectTimeout)
		tools, err = listTools(tctx, session)
		tcancel()
		if err != nil {
			_ = session.Close()
		}
	}
	timer.Stop()
	if timedOut.Load() && err == nil {
		_ = session.Close()
		err = errors.New("connect timed out")
	}
	if err != nil {
		cancel()
		if rt.unauthorized.Load() && cl.AuthType != AuthOAuth {
			err = fmt.Errorf("the MCP server answered 401 Unauthorized (check the client's headers): %w", err)
		}
		var are *authRequiredError
		if errors.As(err, &are) || (rt.unauthorized.Load() && cl.AuthType == AuthOAuth) {
			reason := "the MCP server refused the OAuth token"
			if are != nil {
				reason = are.reason
			}
			nc := &conn{state: StatePendingOAuth, err: reason}
			s.setConn(id, nc)
			return nc
		}
		if timedOut.Load() {
			err = fmt.Errorf("connect timed out after %s: %w", s.o.ConnectTimeout, err)
		}
		return s.failConn(id, err)
	}
	c.session = session
	c.tools.Store(&tools)
	s.setConn(id, c)
	s.log.Info("mcp: client connected", "client", cl.Name, "type", cl.ConnectionType, "tools", len(tools))
	// Watch the session: a server that goes away turns the state to error.
	s.goTracked(func() {
		werr := session.Wait()
		s.mu.Lock()
		if s.conns[id] == c {
			msg := "connection closed by the MCP server"
			if werr != nil {
				msg = "connection lost: " + werr.Error()
			}
			s.conns[id] = &conn{state: StateError, err: msg}
		}
		s.mu.Unlock()
	})
	return c
}

// goTracked runs fn in a goroutine Close waits for; after Close it runs
// nothing (what fn would watch has been closed already).
func (s *Service) goTracked(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
}

func (s *Service) failConn(id string, err error) *conn {
	s.log.Warn("mcp: client connection failed", "client_id", id, "error", err)
	c := &conn{state: StateError, err: err.Error()}
	s.setConn(id, c)
	return c
}

func listTools(ctx context.Context, session *mcp.ClientSession) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", err)
		}
		tools = append(tools, t)
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	return tools, nil
}

// command builds a stdio client's process. It inherits only PATH and HOME
// from the gateway, so the gateway's own secrets (GATEWAY_ENCRYPTION_KEY,
// provider keys) never reach the subprocess; its configured env is added.
func (s *Service) command(ctx context.Context, sc *StdioConfig) (*exec.Cmd, error) {
	cmd := exec.Command(sc.Command, sc.Args...)
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	for k, v := range sc.Env {
		val, err := s.secrets.Resolve(ctx, v)
		if err != nil {
			return nil, fmt.Errorf("stdio_config.env.%s: %w", k, err)
		}
		cmd.Env = append(cmd.Env, k+"="+val)
	}
	return cmd, nil
}

// state reports a client's live state for the API.
func (s *Service) state(cl *Client) (string, string) {
	c := s.getConn(cl.ID)
	switch {
	case c != nil:
		return c.state, c.err
	case !cl.IsEnabled:
		return StateDisconnected, ""
	case cl.AuthType == AuthOAuth:
		return StatePendingOAuth, ""
	}
	return StateDisconnected, ""
}

// deleteClientData removes a client, its OAuth config, token and name.
func deleteClientData(tx store.Tx, cl *Client) error {
	if cl.OAuthConfigID != "" {
		if err := tx.Delete(nsTokens, cl.OAuthConfigID); err != nil {
			return err
		}
		if err := tx.Delete(nsOAuth, cl.OAuthConfigID); err != nil {
			return err
		}
	}
	if err := tx.Delete(nsNames, cl.Name); err != nil {
		return err
	}
	return tx.Delete(nsClients, cl.ID)
}
