package mcpgw_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/gateway/host/fakeupstream"
	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/mcpgw"
	"github.com/wasmgate/gateway/host/server"
)

// calcServer is a real MCP server (official Go SDK over Streamable HTTP)
// whose tools record the arguments they were called with.
type calcServer struct {
	mu    sync.Mutex
	calls []string // "<tool> <arguments JSON>"
}

func (c *calcServer) record(tool string, args any) {
	b, _ := json.Marshal(args)
	c.mu.Lock()
	c.calls = append(c.calls, tool+" "+string(b))
	c.mu.Unlock()
}

func (c *calcServer) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

type addIn struct {
	A int `json:"a" jsonschema:"first addend"`
	B int `json:"b" jsonschema:"second addend"`
}

type failIn struct {
	Why string `json:"why,omitempty"`
}

// startCalc serves the calc MCP server on 127.0.0.1 and connects an SDK
// client session to it, the way host/mcp connects to external servers.
// The tool "secret" exists but is not allowed (tools_to_execute).
func startCalc(t testing.TB) (*calcServer, *mcpgw.Sessions) {
	t.Helper()
	cs := &calcServer{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "Adds a and b."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
			cs.record("add", in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(in.A + in.B)}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(_ context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
			cs.record("fail", in)
			return nil, nil, errors.New("boom: the calculator is on fire")
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "secret", Description: "Not allowed."},
		func(_ context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
			cs.record("secret", in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "leaked"}}}, nil, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "wasmgate-test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		t.Fatalf("connect to calc: %v", err)
	}
	t.Cleanup(func() { _ = session.Close() })
	src := mcpgw.NewSessions()
	src.Add("calc", session, "add", "fail")
	return cs, src
}

// env is a test gateway with the calc tools and an OpenAI provider backed
// by a fake upstream.
type env struct {
	g    *testgw.Gateway
	calc *calcServer
	fake *fakeupstream.Server
}

func start(t testing.TB, o testgw.Options) *env {
	t.Helper()
	return startWrapped(t, o, nil)
}

// startWrapped is start with the tool source wrapped (failure injection).
func startWrapped(t testing.TB, o testgw.Options, wrap func(mcpgw.ToolSource) mcpgw.ToolSource) *env {
	t.Helper()
	calc, sessions := startCalc(t)
	var src mcpgw.ToolSource = sessions
	if wrap != nil {
		src = wrap(sessions)
	}
	fake := fakeupstream.Start(t, fakeupstream.OpenAI, fakeupstream.Options{APIKey: "sk-fake"})
	o.ServerOptions = append(o.ServerOptions, server.WithMCPTools(src), testgw.PassthroughOpenAI())
	g := testgw.Start(t, o)
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "openai", "network_config": map[string]any{"base_url": fake.URL + "/v1"}})
	g.Expect(201, "POST", "/api/providers/openai/keys", map[string]any{"name": "k", "value": "sk-fake"})
	return &env{g: g, calc: calc, fake: fake}
}

// listen serves the gateway's real Fiber app on a 127.0.0.1 listener.
func (e *env) listen(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := e.g.Server
	go func() { _ = srv.Serve(ln) }()
	return fmt.Sprintf("http://%s", ln.Addr())
}

// serveApp serves a bare Fiber app on 127.0.0.1.
func serveApp(t *testing.T, app interface {
	Listener(net.Listener) error
	ShutdownWithTimeout(time.Duration) error
}) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.ShutdownWithTimeout(5 * time.Second) })
	return fmt.Sprintf("http://%s", ln.Addr())
}
