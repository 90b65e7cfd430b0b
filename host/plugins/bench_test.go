package plugins_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"

	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/host/plugins/process"
	"github.com/wasmgate/gateway/host/plugins/wasm"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// The benchmarks compare the runtimes on the same plugin code: the noop
// plugin (the bare call path) and the first-party pii guardrail on a 2 KB
// chat request. Modules and binaries are built on first use and cached.

var (
	benchOnce sync.Once
	benchBins struct{ noopWasm, piiWasm, noopBin, piiBin string }
)

func benchModules(b *testing.B) {
	benchOnce.Do(func() {
		benchBins.noopWasm = plugintest.BuildWasm(b, "testdata/noop")
		benchBins.piiWasm = plugintest.BuildWasm(b, "../../plugins/pii")
		benchBins.noopBin = plugintest.BuildBinary(b, "testdata/noop")
		benchBins.piiBin = plugintest.BuildBinary(b, "../../plugins/pii")
	})
}

func pin(b *testing.B, path string) string {
	bin, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	s := sha256.Sum256(bin)
	return hex.EncodeToString(s[:])
}

func loadBench(b *testing.B, runtime plugins.Runtime, name, path string, trusted bool) plugins.Plugin {
	b.Helper()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	spec := plugins.Spec{Name: name, Runtime: runtime, Source: path, Enabled: true, Trusted: trusted, Limits: plugins.Limits{TimeoutMS: 1000}}
	if trusted {
		spec.SHA256 = pin(b, path)
	}
	var loader plugins.Loader
	if runtime == plugins.RuntimeWasm {
		eng, err := wasm.NewEngine(wasm.Options{CacheDir: plugintest.CacheDir(), Logger: log})
		if err != nil {
			b.Fatal(err)
		}
		loader = eng
	} else {
		loader = process.NewLoader(process.Options{Logger: log})
	}
	p, err := loader.Load(context.Background(), spec)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	return p
}

type benchCase struct {
	name    string
	runtime plugins.Runtime
	trusted bool
}

var benchCases = []benchCase{
	{"wasm-trusted", plugins.RuntimeWasm, true},
	{"wasm-interruptible", plugins.RuntimeWasm, false},
	{"process-grpc", plugins.RuntimeProcess, false},
}

func runHook(b *testing.B, p plugins.Plugin, body []byte) {
	ctx := context.Background()
	if _, err := p.PreRequest(ctx, body); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.PreRequest(ctx, body); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if wp, ok := p.(*wasm.Plugin); ok {
		b.ReportMetric(float64(wp.InstanceMemoryBytes()), "guest-bytes/instance")
	}
}

// BenchmarkNoopHook is the bare cost of calling a hook that does nothing.
func BenchmarkNoopHook(b *testing.B) {
	benchModules(b)
	body := plugintest.ChatRequest2KB()
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			path := benchBins.noopWasm
			if c.runtime == plugins.RuntimeProcess {
				path = benchBins.noopBin
			}
			runHook(b, loadBench(b, c.runtime, "noop", path, c.trusted), body)
		})
	}
}

// BenchmarkPIIGuardrail2KB runs the pii guardrail's pre_request on a 2 KB
// chat request containing an email and a phone number.
func BenchmarkPIIGuardrail2KB(b *testing.B) {
	benchModules(b)
	body := plugintest.ChatRequest2KB()
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			path := benchBins.piiWasm
			if c.runtime == plugins.RuntimeProcess {
				path = benchBins.piiBin
			}
			runHook(b, loadBench(b, c.runtime, "pii", path, c.trusted), body)
		})
	}
	// The pool spreads concurrent calls over instances.
	b.Run("wasm-trusted-parallel", func(b *testing.B) {
		p := loadBench(b, plugins.RuntimeWasm, "pii", benchBins.piiWasm, true)
		ctx := context.Background()
		b.SetBytes(int64(len(body)))
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := p.PreRequest(ctx, body); err != nil {
					panic(fmt.Sprint(err))
				}
			}
		})
	})
}

// BenchmarkInstanceStart measures creating and initialising one pooled
// instance (load with pool size 1, compilation cache warm) and reports
// the guest memory an instance holds after a call.
func BenchmarkInstanceStart(b *testing.B) {
	benchModules(b)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	eng, err := wasm.NewEngine(wasm.Options{CacheDir: plugintest.CacheDir(), Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	bin, _ := os.ReadFile(benchBins.piiWasm)
	spec := plugins.Spec{Name: "pii", Runtime: plugins.RuntimeWasm, Source: "pii", Enabled: true, Limits: plugins.Limits{PoolSize: 1}}
	var mem uint64
	for i := 0; i < b.N; i++ {
		p, err := eng.LoadBytes(context.Background(), spec, bin)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.PreRequest(context.Background(), plugintest.ChatRequest2KB()); err != nil {
			b.Fatal(err)
		}
		mem = p.InstanceMemoryBytes()
		_ = p.Close()
	}
	b.ReportMetric(float64(mem), "guest-bytes/instance")
}
