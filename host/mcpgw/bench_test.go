package mcpgw_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/inference"
	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/mcpgw"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// staticTools is a ToolSource answering from memory, like a caching
// host/mcp, so the benchmark measures mcpgw's own work.
type staticTools []mcpgw.Tool

func (s staticTools) Tools(context.Context) ([]mcpgw.Tool, error) { return s, nil }
func (staticTools) CallTool(context.Context, string, string, json.RawMessage) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{}, nil
}

type noModels struct{}

func (noModels) Complete(context.Context, []byte) ([]byte, *apierr.Error) { return nil, nil }
func (noModels) RecordTool(inference.ToolCall)                            {}

// BenchmarkInjectTools is the cost of the mcp field without the loop on a
// 2 KB chat request: decode the top level, select 10 tools, inject them,
// re-encode.
func BenchmarkInjectTools(b *testing.B) {
	var tools staticTools
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		tools = append(tools, mcpgw.Tool{Client: "calc", Name: n, Description: "tool " + n,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`)})
	}
	gw, err := mcpgw.New(mcpgw.Options{Tools: tools})
	if err != nil {
		b.Fatal(err)
	}
	defer gw.Close()
	base := plugintest.ChatRequest2KB()
	body := append([]byte(`{"mcp":{"tools":["*"]},`), base[1:]...)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		res, aerr := gw.ServeChat(context.Background(), body, noModels{})
		if aerr != nil || res.Forward == nil {
			b.Fatal(aerr)
		}
	}
}

// BenchmarkMCPToolCall is one tools/call by the official SDK client through
// the gateway's /mcp (real listener, bridge, stateless SDK server) to a
// real SDK MCP server; BenchmarkMCPToolCallDirect is the same call made
// straight to that server, so the difference is the gateway's share.
func BenchmarkMCPToolCall(b *testing.B) {
	e := start(b, testgw.Options{})
	cs := connect(b, e.listen(b)+"/mcp", nil)
	benchCall(b, cs)
}

func BenchmarkMCPToolCallDirect(b *testing.B) {
	_, src := startCalc(b)
	b.ResetTimer()
	ctx := context.Background()
	args := json.RawMessage(`{"a":1,"b":2}`)
	for b.Loop() {
		if _, err := src.CallTool(ctx, "calc", "add", args); err != nil {
			b.Fatal(err)
		}
	}
}

func benchCall(b *testing.B, cs *mcp.ClientSession) {
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "calc-add", Arguments: map[string]any{"a": 1, "b": 2}})
		if err != nil || res.IsError {
			b.Fatal(err)
		}
	}
}
