package plugins_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/host/plugins/process"
	"github.com/wasmgate/gateway/host/plugins/wasm"
	"github.com/wasmgate/gateway/pluginsdk"
)

// How the host wires plugins: one wasm Engine and one process Loader, a
// Manager fed with specs (from config or /api/plugins), and the request path
// walking Chain(hook).
func Example() {
	ctx := context.Background()
	log := slog.Default()
	eng, err := wasm.NewEngine(wasm.Options{CacheDir: "data/wasm-cache", ModuleDir: "bin/plugins", Logger: log})
	if err != nil {
		panic(err)
	}
	m := plugins.NewManager(plugins.ManagerOptions{
		Loaders: map[plugins.Runtime]plugins.Loader{
			plugins.RuntimeWasm:    eng,
			plugins.RuntimeProcess: process.NewLoader(process.Options{Logger: log}),
		},
		Logger: log,
	})
	defer m.Close()

	// Load (or hot-swap, if the name exists) a plugin.
	if err := m.Apply(ctx, plugins.Spec{
		Name: "pii", Runtime: plugins.RuntimeWasm, Source: "pii", Enabled: true, Order: 10,
		Config: []byte(`{"action":"redact"}`), Limits: plugins.Limits{TimeoutMS: 50}, FailOpen: false,
	}); err != nil {
		log.Error("plugin load failed", "err", err) // also visible in m.Get("pii")
	}

	// Request path: pre-request hooks in order.
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	for _, p := range m.Chain(pluginsdk.HookPreRequest) {
		out, err := p.PreRequest(ctx, body)
		var pe *plugins.Error
		switch {
		case errors.As(err, &pe) && !pe.Failure():
			fmt.Println("reject with", pe.HTTPStatus(), pe.Message) // plugin said no
			return
		case err != nil:
			fmt.Println("5xx envelope:", err) // runtime failure, names the plugin
			return
		case out.Response != nil:
			fmt.Println("short-circuit with", string(out.Response))
			return
		case out.Status == pluginsdk.StatusOK && out.Body != nil:
			body = out.Body
		}
	}

	// Reconfigure: a new generation is built and swapped in atomically.
	_ = m.Configure(ctx, "pii", []byte(`{"action":"block"}`))
	for _, st := range m.List() {
		fmt.Println(st.Name, st.State, st.Calls, st.P99)
	}
}
