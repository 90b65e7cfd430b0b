package mcp_test

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/internal/testgw"
)

// TestToolCallLogKeepsItsRoute: a tool call's log record is written by the
// log writer after the handler returned; its route (the request's path)
// must not read the bytes of the next request served meanwhile.
func TestToolCallLogKeepsItsRoute(t *testing.T) {
	// A long flush interval keeps the record queued while the second
	// request is served.
	g := testgw.Start(t, testgw.Options{ConfigYAML: "logs:\n  flush_interval: 2s\n"})
	base := g.Listen()
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	t.Cleanup(client.CloseIdleConnections)
	send := func(path, body string, want int) {
		t.Helper()
		resp, err := client.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("POST %s: %d %s, want %d", path, resp.StatusCode, raw, want)
		}
	}
	// The path is kept in a pooled buffer (Fiber's context), not the
	// connection's: on one P the pool hands the second request the same
	// context, so it overwrites the first one's path.
	prev := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	// An unknown client is a failed call, recorded like any other.
	send("/v1/mcp/tool/execute", `{"id":"1","type":"function","function":{"name":"nobody-echo","arguments":"{}"}}`, 404)
	// Same length, other bytes, same connection.
	send("/v1/mcp/tool/zzzzzzz", `{}`, 404)
	runtime.GOMAXPROCS(prev)

	if err := g.Server.Logs().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Logs []struct {
			Route  string `json:"route"`
			Object string `json:"object"`
		} `json:"logs"`
	}
	g.Expect(200, "GET", "/api/logs?objects=mcp_tool", nil).Decode(t, &out)
	if len(out.Logs) != 1 || out.Logs[0].Route != "/v1/mcp/tool/execute" {
		t.Fatalf("tool call records %+v, want one with route /v1/mcp/tool/execute", out.Logs)
	}
}
