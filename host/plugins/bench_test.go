package plugins_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
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

// chatRequest2KB is a realistic chat request of about 2 KB with two PII
// items, so the guardrail does its full scan and one redaction pass.
func chatRequest2KB() []byte {
	para := "Our quarterly report covers revenue, churn and the roadmap for the next two releases. " +
		"Please summarise the key risks and suggest three follow-up actions for the team. "
	msgs := []map[string]string{
		{"role": "system", "content": "You are a helpful assistant that answers concisely and cites sources when asked."},
		{"role": "user", "content": strings.Repeat(para, 6) + "Reach me at jane.doe@example.com."},
		{"role": "assistant", "content": strings.Repeat(para, 4)},
		{"role": "user", "content": strings.Repeat(para, 3) + " My number is +1 415 555 0134."},
	}
	b, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "messages": msgs, "max_tokens": 512, "temperature": 0.2, "stream": false})
	return b[:min(len(b), 2200)-0]
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
	body := chatRequest2KB()
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
	body := chatRequest2KB()
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
		if _, err := p.PreRequest(context.Background(), chatRequest2KB()); err != nil {
			b.Fatal(err)
		}
		mem = p.InstanceMemoryBytes()
		_ = p.Close()
	}
	b.ReportMetric(float64(mem), "guest-bytes/instance")
}
