package mcpgw_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/fakeupstream"
	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/mcpgw"
)

// needsAuth is a source whose client lost its OAuth token, as host/mcp
// reports it: a 401 envelope carrying mcp_auth_required.
type needsAuth struct{ mcpgw.ToolSource }

func (needsAuth) CallTool(context.Context, string, string, json.RawMessage) (*mcp.CallToolResult, error) {
	return nil, apierr.New(401, apierr.TypeAuthentication, "mcp_auth_required", "MCP client calc needs authorization").
		WithExtra(&apierr.ExtraFields{MCPAuthRequired: &apierr.MCPAuthRequired{Kind: "oauth", MCPClientID: "mc-1",
			MCPClientName: "calc", Message: "authorize again", AuthorizeURL: "https://auth.example/authorize?state=s"}})
}

// hangs never answers a tool call before its context ends.
type hangs struct{ mcpgw.ToolSource }

func (hangs) CallTool(ctx context.Context, _, _ string, _ json.RawMessage) (*mcp.CallToolResult, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestAuthRequiredReachesTheCaller: a tool whose client needs authorization
// ends the loop with the source's envelope (mcp_auth_required and its
// authorize URL), and /mcp carries the same envelope as JSON-RPC error data.
func TestAuthRequiredReachesTheCaller(t *testing.T) {
	e := startWrapped(t, testgw.Options{}, func(s mcpgw.ToolSource) mcpgw.ToolSource { return needsAuth{s} })
	e.fake.ScriptChatTools([]fakeupstream.ScriptedToolCall{{Name: "calc-add", Arguments: `{"a":1,"b":1}`}})
	r := e.g.Do("POST", "/v1/chat/completions", chatBody(`,"mcp":{"auto_execute":true}`))
	m := testgw.WantEnvelope(t, r, 401, "mcp_auth_required")
	x, _ := m["extra_fields"].(map[string]any)
	ar, _ := x["mcp_auth_required"].(map[string]any)
	if ar["authorize_url"] != "https://auth.example/authorize?state=s" {
		t.Fatalf("%s", r.Body)
	}

	cs := connect(t, e.listen(t)+"/mcp", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "calc-add", Arguments: map[string]any{"a": 1, "b": 1}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || !strings.Contains(string(we.Data), `"authorize_url":"https://auth.example/authorize?state=s"`) {
		t.Fatalf("/mcp error %v (%T)", err, err)
	}
}

// TestToolTimeoutIsFedBack: a tool that does not answer within
// mcp_gateway.tool_timeout is reported to the model, not hung on.
func TestToolTimeoutIsFedBack(t *testing.T) {
	e := startWrapped(t, testgw.Options{Env: []string{"GATEWAY_MCP_GATEWAY__TOOL_TIMEOUT=1s"}},
		func(s mcpgw.ToolSource) mcpgw.ToolSource { return hangs{s} })
	e.fake.ScriptChatTools([]fakeupstream.ScriptedToolCall{{Name: "calc-add", Arguments: `{"a":1,"b":1}`}})
	start := time.Now()
	r := e.g.Do("POST", "/v1/chat/completions", chatBody(`,"mcp":{"auto_execute":true}`))
	if r.Status != 200 || time.Since(start) > 10*time.Second {
		t.Fatalf("%d after %s: %s", r.Status, time.Since(start), r.Body)
	}
	a := decodeAnswer(t, r)
	if c := *a.Choices[0].Message.Content; !strings.Contains(c, "did not answer within 1s") {
		t.Fatalf("final: %s", c)
	}
}
