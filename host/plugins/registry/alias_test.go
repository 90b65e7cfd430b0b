package registry_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/wasmgate/gateway/host/internal/testgw"
)

// TestPluginNameOwnsItsBytes: a plugin installed by a raw upload takes its
// name from ?name=, which points into the connection's request buffer.
// The manager keeps the name for the plugin's life, so the next request on
// the same keep-alive connection must not be able to rewrite it.
func TestPluginNameOwnsItsBytes(t *testing.T) {
	g := start(t, pluginsDir(t), "")
	bin, err := os.ReadFile(mod.faulty)
	if err != nil {
		t.Fatal(err)
	}
	base := g.Listen()
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	t.Cleanup(client.CloseIdleConnections)
	send := func(method, path string, body []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/wasm")
		testgw.SetupAuth(req)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
	}
	send("POST", "/api/plugins/upload?name=alias1", bin)
	// Same connection, same query slot, same length, other bytes.
	send("GET", "/api/plugins?kind=zzzzzz", nil)

	e, ok := g.Server.Plugins().Manager().Entry("alias1")
	if !ok {
		var names []string
		for _, st := range g.Server.Plugins().Manager().List() {
			names = append(names, st.Name)
		}
		t.Fatalf("plugin alias1 not found; the manager lists %q", names)
	}
	if e.Name() != "alias1" || e.Spec().Name != "alias1" {
		t.Fatalf("entry name %q, spec name %q: want alias1", e.Name(), e.Spec().Name)
	}
}
