package mcpgw_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/mcpgw"
)

// connect opens an official SDK client session on the gateway's /mcp.
func connect(t testing.TB, endpoint string, hc *http.Client) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sdk-client", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", endpoint, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestMCPServerListsAndCallsTools: the official Go SDK client, connected
// to the real gateway's /mcp over a real listener, sees the allowed tools
// of the connected MCP server as <client>-<tool> and calls them.
func TestMCPServerListsAndCallsTools(t *testing.T) {
	e := start(t, testgw.Options{})
	cs := connect(t, e.listen(t)+"/mcp", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	if init := cs.InitializeResult(); init == nil || init.ServerInfo.Name != "wasmgate" || init.Capabilities.Tools == nil {
		t.Fatalf("initialize: %+v", init)
	}
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"calc-add", "calc-fail"}) {
		t.Fatalf("tools %v (secret must stay hidden)", names)
	}
	schema, _ := json.Marshal(res.Tools[0].InputSchema)
	if !strings.Contains(string(schema), `"a"`) || res.Tools[0].Description != "Adds a and b." {
		t.Fatalf("calc-add lost its schema or description: %s %q", schema, res.Tools[0].Description)
	}

	out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "calc-add", Arguments: map[string]any{"a": 20, "b": 22}})
	if err != nil {
		t.Fatal(err)
	}
	if out.IsError || len(out.Content) != 1 || out.Content[0].(*mcp.TextContent).Text != "42" {
		t.Fatalf("calc-add: %+v", out)
	}
	if got := e.calc.Calls(); !slices.Equal(got, []string{`add {"a":20,"b":22}`}) {
		t.Fatalf("the MCP server saw %v", got)
	}

	// A tool's own failure is a result with isError, as MCP wants.
	out, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "calc-fail", Arguments: map[string]any{}})
	if err != nil || !out.IsError || !strings.Contains(out.Content[0].(*mcp.TextContent).Text, "boom") {
		t.Fatalf("calc-fail: %+v %v", out, err)
	}
	// A tool that is not allowed, or unknown, is a protocol error naming it.
	for _, name := range []string{"calc-secret", "nope"} {
		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if slices.ContainsFunc(e.calc.Calls(), func(c string) bool { return strings.HasPrefix(c, "secret") }) {
		t.Fatal("a tool outside tools_to_execute was executed")
	}
}

// TestMCPServerAnswersSSE checks the raw wire: a POST accepting SSE gets a
// text/event-stream answer carrying the JSON-RPC result, and stateless
// operation refuses GET streams with 405.
func TestMCPServerAnswersSSE(t *testing.T) {
	e := start(t, testgw.Options{})
	base := e.listen(t)
	hc := &http.Client{Timeout: 10 * time.Second}
	post := func(body string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := post(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") ||
		!strings.Contains(body, `"name":"calc-add"`) || !strings.Contains(body, "data: ") {
		t.Fatalf("tools/list: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	resp, body = post(`{not json`)
	if resp.StatusCode/100 != 4 {
		t.Fatalf("malformed JSON-RPC: %d %s", resp.StatusCode, body)
	}
	r, err := hc.Get(base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET /mcp: %d", r.StatusCode)
	}
}

// TestMCPServerAuthenticator: with an authenticator, /mcp refuses callers
// without a key with the gateway's 401 envelope and serves those with one.
func TestMCPServerAuthenticator(t *testing.T) {
	_, src := startCalc(t)
	gw, err := mcpgw.New(mcpgw.Options{Tools: src, ServerEnabled: true, Authenticate: func(c *fiber.Ctx) error {
		if c.Get("x-gw-vk") != "sk-gw-good" {
			return apierr.Unauthorized("invalid_virtual_key", "a virtual key is required (x-gw-vk)")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	app := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error {
		e := apierr.As(err)
		return c.Status(e.StatusCode).JSON(e)
	}})
	gw.Routes(app)
	base := serveApp(t, app)

	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(string(b), "invalid_virtual_key") {
		t.Fatalf("no key: %d %s", resp.StatusCode, b)
	}
	cs := connect(t, base+"/mcp", &http.Client{Timeout: 10 * time.Second, Transport: headerTransport{"x-gw-vk", "sk-gw-good"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil || len(res.Tools) != 2 {
		t.Fatalf("with key: %v %v", res, err)
	}
}

type headerTransport struct{ k, v string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.k, h.v)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPServerDisabled: mcp_gateway.server_enabled=false leaves /mcp unmounted.
func TestMCPServerDisabled(t *testing.T) {
	e := start(t, testgw.Options{Env: []string{"GATEWAY_MCP_GATEWAY__SERVER_ENABLED=false"}})
	r := e.g.Do("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	testgw.WantEnvelope(t, r, 404, "")
}
