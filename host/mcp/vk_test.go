package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/gateway/host/fakeupstream"
	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/server"
)

func vkHeader(v string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("x-gw-vk", v) }
}

type vkTransport struct{ vk string }

func (h vkTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("x-gw-vk", h.vk)
	return http.DefaultTransport.RoundTrip(r)
}

// toolNames are the function names of an OpenAI tools array.
func toolNames(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var tools []struct {
		Function struct{ Name string } `json:"function"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &tools); err != nil {
			t.Fatalf("tools %s: %v", raw, err)
		}
	}
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Function.Name)
	}
	slices.Sort(out)
	return out
}

// TestVirtualKeyMCPConfigs runs a real stdio MCP client (tools echo, add,
// pid) behind the gateway and a virtual key whose mcp_configs allow only
// echo: /v1/mcp/tools and the /mcp server list only echo, calling add is a
// 403 naming it, and the key's chat requests get echo injected (the fake
// upstream sees it) unless their own mcp field narrows further. A key
// without mcp_configs keeps every tool.
func TestVirtualKeyMCPConfigs(t *testing.T) {
	up := fakeupstream.Start(t, fakeupstream.OpenAI, fakeupstream.Options{APIKey: "sk-up"})
	g := testgw.Start(t, testgw.Options{ConfigYAML: fmt.Sprintf(`
mcp_clients:
  - name: files
    connection_type: stdio
    stdio_config: {command: %q, args: ["-stdio"]}
`, mcpServer), ServerOptions: []server.Option{testgw.PassthroughOpenAI()}})
	g.Expect(201, "POST", "/api/providers", map[string]any{"name": "openai", "network_config": map[string]any{"base_url": up.URL + "/v1"}})
	g.Expect(201, "POST", "/api/providers/openai/keys", map[string]any{"name": "k", "value": "sk-up"})
	var clientID string
	for deadline := time.Now().Add(20 * time.Second); clientID == ""; time.Sleep(100 * time.Millisecond) {
		list := g.Expect(200, "GET", "/api/mcp/clients", nil).Map(t)["clients"].([]any)
		if c := list[0].(map[string]any); c["state"] == "connected" {
			clientID = c["id"].(string)
		} else if time.Now().After(deadline) {
			t.Fatalf("client never connected: %v", c)
		}
	}

	// Validation: the client must exist and be listed once; names resolve to the id.
	for _, c := range []struct {
		body  string
		code  string
		param string
	}{
		{`{"name":"x","mcp_configs":[{"mcp_client_id":"ghost"}]}`, "unknown_mcp_client", "mcp_configs[0].mcp_client_id"},
		{`{"name":"x","mcp_configs":[{"mcp_client_id":""}]}`, "invalid_field", "mcp_configs[0].mcp_client_id"},
		{`{"name":"x","mcp_configs":[{"mcp_client_id":"files"},{"mcp_client_id":"` + clientID + `"}]}`, "invalid_field", "mcp_configs[1].mcp_client_id"},
		{`{"name":"x","mcp_configs":[{"mcp_client_id":"files","tools_to_execute":[" "]}]}`, "invalid_field", "mcp_configs[0].tools_to_execute[0]"},
	} {
		m := testgw.WantEnvelope(t, g.Do("POST", "/api/governance/virtual-keys", c.body), 400, c.code)
		if m["error"].(map[string]any)["param"] != c.param {
			t.Errorf("%s: %v", c.body, m)
		}
	}
	var created struct {
		VirtualKey struct {
			ID, Value  string
			MCPConfigs []struct {
				MCPClientID    string   `json:"mcp_client_id"`
				ToolsToExecute []string `json:"tools_to_execute"`
			} `json:"mcp_configs"`
		} `json:"virtual_key"`
	}
	g.Expect(201, "POST", "/api/governance/virtual-keys", map[string]any{"name": "scoped",
		"mcp_configs": []map[string]any{{"mcp_client_id": "files", "tools_to_execute": []string{"echo"}}}}).Decode(t, &created)
	scoped, scopedID := created.VirtualKey.Value, created.VirtualKey.ID
	if mc := created.VirtualKey.MCPConfigs; len(mc) != 1 || mc[0].MCPClientID != clientID || !slices.Equal(mc[0].ToolsToExecute, []string{"echo"}) {
		t.Fatalf("stored mcp_configs %+v, want the client's id", mc)
	}
	g.Expect(201, "POST", "/api/governance/virtual-keys", map[string]any{"name": "plain"}).Decode(t, &created)
	plain := created.VirtualKey.Value

	// /v1/mcp/tools lists what the caller may use.
	list := func(mods ...func(*http.Request)) []string {
		var out struct{ Data json.RawMessage }
		r := g.Do("GET", "/v1/mcp/tools", nil, mods...)
		if r.Status != 200 {
			t.Fatalf("tools: %d %s", r.Status, r.Body)
		}
		r.Decode(t, &out)
		return toolNames(t, out.Data)
	}
	all := []string{"files-add", "files-echo", "files-pid"}
	if got := list(vkHeader(scoped)); !slices.Equal(got, []string{"files-echo"}) {
		t.Fatalf("scoped key sees %v", got)
	}
	if got, got2 := list(vkHeader(plain)), list(); !slices.Equal(got, all) || !slices.Equal(got2, all) {
		t.Fatalf("key without mcp_configs sees %v, no key %v", got, got2)
	}
	// /v1/mcp/tool/execute: the allowed tool runs, another is a 403 naming it.
	exec := func(name, args, vk string) *testgw.Response {
		return g.Do("POST", "/v1/mcp/tool/execute", map[string]any{"id": "c1", "type": "function",
			"function": map[string]any{"name": name, "arguments": args}}, vkHeader(vk))
	}
	if r := exec("files-echo", `{"text":"x"}`, scoped); r.Status != 200 || r.Map(t)["content"] != "echo: x" {
		t.Fatalf("allowed tool: %d %s", r.Status, r.Body)
	}
	m := testgw.WantEnvelope(t, exec("files-add", `{"a":1,"b":2}`, scoped), 403, "tool_not_allowed")
	if msg := m["error"].(map[string]any)["message"].(string); !strings.Contains(msg, `"files-add"`) || !strings.Contains(msg, `"scoped"`) {
		t.Fatalf("403 does not name the tool and key: %v", m)
	}
	if r := exec("files-add", `{"a":1,"b":2}`, plain); r.Status != 200 || r.Map(t)["content"] != "3" {
		t.Fatalf("key without mcp_configs: %d %s", r.Status, r.Body)
	}

	// The /mcp server, over a real listener with the official SDK client.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Server.Serve(ln) }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "vk-test", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: "http://" + ln.Addr().String() + "/mcp",
			HTTPClient: &http.Client{Timeout: 10 * time.Second, Transport: vkTransport{scoped}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil || len(res.Tools) != 1 || res.Tools[0].Name != "files-echo" {
		t.Fatalf("/mcp tools/list with the scoped key: %+v %v", res, err)
	}
	// The refusal is a JSON-RPC error whose data is the 403 envelope.
	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "files-add", Arguments: map[string]any{"a": 1, "b": 2}})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || !strings.Contains(rpcErr.Message, `"files-add"`) ||
		!strings.Contains(string(rpcErr.Data), `"status_code":403`) || !strings.Contains(string(rpcErr.Data), `"tool_not_allowed"`) {
		t.Fatalf("/mcp tools/call outside the key's tools: %v (%+v)", err, rpcErr)
	}
	if out, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "files-echo", Arguments: map[string]any{"text": "y"}}); err != nil ||
		out.Content[0].(*sdk.TextContent).Text != "echo: y" {
		t.Fatalf("/mcp tools/call of the allowed tool: %+v %v", out, err)
	}

	// Chat: the key's tools are injected when the request has no mcp field.
	chat := func(vk, extra string) *testgw.Response {
		return g.Do("POST", "/v1/chat/completions", `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]`+extra+`}`,
			testgw.NoAuth, vkHeader(vk))
	}
	sentTools := func() []string {
		var sent struct {
			Tools json.RawMessage `json:"tools"`
			MCP   json.RawMessage `json:"mcp"`
		}
		if err := json.Unmarshal(up.LastRequest().Body, &sent); err != nil || sent.MCP != nil {
			t.Fatalf("upstream body %s: %v", up.LastRequest().Body, err)
		}
		return toolNames(t, sent.Tools)
	}
	if r := chat(scoped, ""); r.Status != 200 {
		t.Fatalf("scoped chat: %d %s", r.Status, r.Body)
	}
	if got := sentTools(); !slices.Equal(got, []string{"files-echo"}) {
		t.Fatalf("upstream saw tools %v, want the key's files-echo injected", got)
	}
	// The OpenAI drop-in prefix is a chat route too (bare names are openai's).
	if r := g.Do("POST", "/openai/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`,
		testgw.NoAuth, vkHeader(scoped)); r.Status != 200 || !slices.Equal(sentTools(), []string{"files-echo"}) {
		t.Fatalf("scoped chat on /openai/v1: %d %s", r.Status, up.LastRequest().Body)
	}
	if r := g.Do("POST", "/openai/v1/chat/completions", `{"model":"gpt-4o-mini","mcp":{"tools":["files-pid"]},"messages":[]}`,
		testgw.NoAuth, vkHeader(plain)); r.Status != 200 || !slices.Equal(sentTools(), []string{"files-pid"}) {
		t.Fatalf("mcp field on /openai/v1: %d %s", r.Status, up.LastRequest().Body)
	}
	if r := chat(plain, ""); r.Status != 200 || sentTools() != nil {
		t.Fatalf("a key without mcp_configs got tools injected: %d %s", r.Status, up.LastRequest().Body)
	}
	// The request's own mcp field narrows; it cannot widen.
	if r := chat(scoped, `,"mcp":{"tools":["files-*"]}`); r.Status != 200 || !slices.Equal(sentTools(), []string{"files-echo"}) {
		t.Fatalf("files-* with the scoped key: %d %s", r.Status, up.LastRequest().Body)
	}
	m = testgw.WantEnvelope(t, chat(scoped, `,"mcp":{"tools":["files-add"]}`), 403, "tool_not_allowed")
	if m["error"].(map[string]any)["param"] != "mcp.tools[0]" {
		t.Fatalf("widening refusal: %v", m)
	}
	if r := chat(plain, `,"mcp":{"tools":["*"]}`); r.Status != 200 || !slices.Equal(sentTools(), all) {
		t.Fatalf("key without mcp_configs asking for all: %d %s", r.Status, up.LastRequest().Body)
	}
	// Clearing mcp_configs gives the key every tool back, and no injection.
	g.Expect(200, "PUT", "/api/governance/virtual-keys/"+scopedID, map[string]any{"mcp_configs": nil})
	if got := list(vkHeader(scoped)); !slices.Equal(got, all) {
		t.Fatalf("after clearing mcp_configs: %v", got)
	}
	if r := chat(scoped, ""); r.Status != 200 || sentTools() != nil {
		t.Fatalf("injection after clearing mcp_configs: %d %s", r.Status, up.LastRequest().Body)
	}
}
