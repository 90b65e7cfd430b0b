package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/gateway/host/fakeupstream"
)

// TestMCPGatewayE2E runs the real binary: the official Go SDK client
// speaks Streamable HTTP to its /mcp, and a chat request carrying the mcp
// field goes through the hook and upstream without it. No MCP client is
// configured here, so the tool list is empty; TestMCPClientToolsThroughGateway
// covers tools and the loop with a real MCP client.
func TestMCPGatewayE2E(t *testing.T) {
	cfg, set := fakeProviderSet(t)
	openai := set.Servers[fakeupstream.OpenAI]
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.base + "/mcp"}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, p.stderr.String())
	}
	defer cs.Close()
	if init := cs.InitializeResult(); init.ServerInfo.Name != "wasmgate" || init.Capabilities.Tools == nil {
		t.Fatalf("initialize: %+v", init)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 0 {
		t.Fatalf("tools/list: %+v %v", tools, err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "calc-add", Arguments: map[string]any{}}); err == nil ||
		!strings.Contains(err.Error(), "calc-add") {
		t.Fatalf("tools/call of an unknown tool: %v", err)
	}

	code, body := p.do("POST", "/v1/chat/completions", map[string]any{"model": "openai/gpt-4o-mini",
		"messages": []map[string]string{{"role": "user", "content": "hi"}}, "mcp": map[string]any{"auto_execute": true}})
	if code != 200 || !strings.Contains(string(body), "hello from openai") {
		t.Fatalf("chat: %d %s", code, body)
	}
	var sent map[string]any
	if err := json.Unmarshal(openai.LastRequest().Body, &sent); err != nil {
		t.Fatal(err)
	}
	if _, ok := sent["mcp"]; ok {
		t.Fatalf("the mcp field reached the upstream: %s", openai.LastRequest().Body)
	}
	if _, ok := sent["tools"]; ok {
		t.Fatalf("no tools exist, yet tools were sent: %s", openai.LastRequest().Body)
	}
	code, body = p.do("POST", "/v1/chat/completions", map[string]any{"model": "openai/gpt-4o-mini",
		"messages": []map[string]string{{"role": "user", "content": "hi"}}, "mcp": map[string]any{"tools": []string{"calc-add"}}})
	if code != 400 || !strings.Contains(string(body), `"param":"mcp.tools[0]"`) {
		t.Fatalf("unknown tool: %d %s", code, body)
	}
}

// TestMCPClientToolsThroughGateway wires both halves in the real binary: a
// stdio MCP client managed at /api/mcp serves its tools on the gateway's
// own /mcp (official Go SDK client) and in the chat tool loop, and every
// loop tool call is logged exactly once.
func TestMCPClientToolsThroughGateway(t *testing.T) {
	bin := mcpServerBinary(t)
	cfg, set := fakeProviderSet(t)
	openai := set.Servers[fakeupstream.OpenAI]
	gw := start(t, t.TempDir(), t.TempDir(), mcpEnv, "--config", cfg)
	gw.json("POST", "/api/mcp/client", map[string]any{
		"name": "local", "connection_type": "stdio",
		"stdio_config":     map[string]any{"command": bin, "args": []string{"-stdio"}},
		"tools_to_execute": []string{"echo"},
	}, 201)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.base + "/mcp"}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "local-echo" {
		t.Fatalf("tools/list: %+v %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "local-echo", Arguments: map[string]any{"text": "via /mcp"}})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "echo: via /mcp" {
		t.Fatalf("tools/call: %+v %v", res, err)
	}
	// A tool outside tools_to_execute is neither listed nor callable.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "local-pid"}); err == nil {
		t.Fatal("a filtered tool was callable through /mcp")
	}

	openai.ScriptChatTools([]fakeupstream.ScriptedToolCall{{Name: "local-echo", Arguments: `{"text":"loop"}`}})
	code, body := gw.do("POST", "/v1/chat/completions", map[string]any{"model": "openai/gpt-4o-mini",
		"messages": []map[string]string{{"role": "user", "content": "echo loop"}},
		"mcp":      map[string]any{"tools": []string{"*"}, "auto_execute": true}})
	if code != 200 || !strings.Contains(string(body), "tool results: echo: loop") {
		t.Fatalf("tool loop: %d %s", code, body)
	}
	// One record per tool call: the /mcp call (logged by the MCP client
	// capability) and the loop's call (logged by the loop), not two each.
	waitFor(t, "tool call records", 10*time.Second, func() bool {
		_, lb := gw.do("GET", "/api/logs?limit=50", nil)
		return strings.Count(string(lb), `"object":"mcp_tool"`) == 2
	})
	time.Sleep(300 * time.Millisecond) // a third (duplicate) record would land within the flush interval
	if _, lb := gw.do("GET", "/api/logs?limit=50", nil); strings.Count(string(lb), `"object":"mcp_tool"`) != 2 {
		t.Fatalf("tool call records: %s", lb)
	}

	// Tool routes authenticate callers like inference: a bad virtual key is
	// refused on /v1/mcp/* and /mcp, a valid one admitted.
	if code, b := govCall(t, gw, "GET", "/v1/mcp/tools", "", map[string]string{"x-api-key": "sk-gw-wrong"}); code != 401 ||
		!strings.Contains(string(b), "invalid_virtual_key") {
		t.Fatalf("/v1/mcp/tools with a bad key: %d %s", code, b)
	}
	bad := &http.Client{Transport: headerTransport{"Authorization": "Bearer sk-gw-wrong"}}
	if _, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.base + "/mcp", HTTPClient: bad}, nil); err == nil {
		t.Fatal("/mcp accepted an invalid virtual key")
	}
	code, body = gw.do("POST", "/api/governance/virtual-keys", map[string]any{"name": "mcp-caller"})
	var created struct {
		VirtualKey struct{ Value string } `json:"virtual_key"`
	}
	if code != 201 || json.Unmarshal(body, &created) != nil || created.VirtualKey.Value == "" {
		t.Fatalf("create vk: %d %s", code, body)
	}
	good := &http.Client{Transport: headerTransport{"x-gw-vk": created.VirtualKey.Value}}
	vcs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.base + "/mcp", HTTPClient: good}, nil)
	if err != nil {
		t.Fatalf("/mcp with a valid virtual key: %v", err)
	}
	defer vcs.Close()
	if res, err := vcs.CallTool(ctx, &mcp.CallToolParams{Name: "local-echo", Arguments: map[string]any{"text": "vk"}}); err != nil || res.IsError {
		t.Fatalf("tools/call with a virtual key: %+v %v", res, err)
	}

	// mcp_configs: a key allowed echo gets it injected into its chat
	// requests; a key allowed no tool of the client sees none and is refused.
	newKey := func(name string, tools []string) string {
		code, body := gw.do("POST", "/api/governance/virtual-keys", map[string]any{"name": name,
			"mcp_configs": []map[string]any{{"mcp_client_id": "local", "tools_to_execute": tools}}})
		var k struct {
			VirtualKey struct{ Value string } `json:"virtual_key"`
		}
		if code != 201 || json.Unmarshal(body, &k) != nil {
			t.Fatalf("create %s: %d %s", name, code, body)
		}
		return k.VirtualKey.Value
	}
	echoKey, noneKey := newKey("echo-only", []string{"echo"}), newKey("no-tools", []string{})
	if code, b := govCall(t, gw, "POST", "/v1/chat/completions", `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"x-gw-vk": echoKey}); code != 200 {
		t.Fatalf("chat with the echo-only key: %d %s", code, b)
	}
	var sent struct {
		Tools []struct {
			Function struct{ Name string } `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(openai.LastRequest().Body, &sent); err != nil || len(sent.Tools) != 1 || sent.Tools[0].Function.Name != "local-echo" {
		t.Fatalf("the key's tool was not injected: %s", openai.LastRequest().Body)
	}
	if code, b := govCall(t, gw, "GET", "/v1/mcp/tools", "", map[string]string{"x-gw-vk": noneKey}); code != 200 || !strings.Contains(string(b), `"count":0`) {
		t.Fatalf("/v1/mcp/tools with the no-tools key: %d %s", code, b)
	}
	if code, b := govCall(t, gw, "POST", "/v1/mcp/tool/execute", `{"id":"1","type":"function","function":{"name":"local-echo","arguments":"{}"}}`,
		map[string]string{"x-gw-vk": noneKey}); code != 403 || !strings.Contains(string(b), "local-echo") {
		t.Fatalf("/v1/mcp/tool/execute with the no-tools key: %d %s", code, b)
	}
}

// headerTransport adds fixed headers to every request.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}
