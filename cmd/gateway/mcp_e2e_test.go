package main_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/gateway/host/fakeupstream"
)

// TestMCPGatewayE2E runs the real binary: the official Go SDK client
// speaks Streamable HTTP to its /mcp, and a chat request carrying the mcp
// field goes through the hook and upstream without it. The binary has no
// MCP clients until host/mcp is wired in, so the tool list is empty here;
// tools and the loop are covered in host/mcpgw against a real MCP server.
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
