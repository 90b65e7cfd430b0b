package plugintest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/host/plugins/wasm"
)

// Options tunes LoadWasm; zero values are the host defaults.
type Options struct {
	Name    string
	Config  any
	Trusted bool
	Limits  plugins.Limits
	Logger  *slog.Logger
}

// LoadWasm starts the module at path under the real wazero runtime and
// closes it when the test ends. Trusted pins the module's sha256 as the
// host requires.
func LoadWasm(t testing.TB, path string, opts Options) *wasm.Plugin {
	t.Helper()
	bin, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("plugintest: read %s: %v", path, err)
	}
	eng, err := wasm.NewEngine(wasm.Options{CacheDir: CacheDir(), Logger: opts.Logger})
	if err != nil {
		t.Fatalf("plugintest: %v", err)
	}
	spec := plugins.Spec{Name: opts.Name, Runtime: plugins.RuntimeWasm, Source: path, Enabled: true, Trusted: opts.Trusted, Limits: opts.Limits}
	if spec.Name == "" {
		spec.Name = filepath.Base(path)
	}
	if opts.Trusted {
		sum := sha256.Sum256(bin)
		spec.SHA256 = hex.EncodeToString(sum[:])
	}
	if opts.Config != nil {
		if raw, ok := opts.Config.(json.RawMessage); ok {
			spec.Config = raw
		} else if spec.Config, err = json.Marshal(opts.Config); err != nil {
			t.Fatalf("plugintest: encode config: %v", err)
		}
	}
	p, err := eng.LoadBytes(context.Background(), spec, bin)
	if err != nil {
		t.Fatalf("plugintest: load %s: %v", spec.Name, err)
	}
	t.Cleanup(func() {
		_ = p.Close()
		_ = eng.Close(context.Background())
	})
	return p
}

// CacheDir is the compilation cache tests share, so each module is
// compiled to machine code once per machine rather than once per test.
func CacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil || base == "" {
		base = os.TempDir()
	}
	return filepath.Join(base, "wasmgate-plugintest", "compiled")
}
