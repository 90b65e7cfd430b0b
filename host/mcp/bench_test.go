package mcp_test

import (
	"encoding/json"
	"testing"

	"github.com/wasmgate/gateway/host/internal/testgw"
)

// BenchmarkToolExecuteStdio measures POST /v1/mcp/tool/execute through the
// Fiber app to a stdio MCP server (the Go SDK test server): decoding, the
// client lookup in the sealed store, the JSON-RPC round trip over pipes and
// the log hand-off.
func BenchmarkToolExecuteStdio(b *testing.B) {
	g := testgw.New(b)
	c := g.Expect(201, "POST", "/api/mcp/client", stdioClient("bench", nil)).Map(b)
	if c["state"] != "connected" {
		b.Fatalf("client: %v", c)
	}
	body, _ := json.Marshal(map[string]any{"id": "c", "type": "function",
		"function": map[string]any{"name": "bench-echo", "arguments": `{"text":"hi"}`}})
	for b.Loop() {
		if r := g.Do("POST", "/v1/mcp/tool/execute", body); r.Status != 200 {
			b.Fatalf("execute: %d %s", r.Status, r.Body)
		}
	}
}
