package process_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/host/plugins/process"
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

var faultyBin string

type mainTB struct{}

func (mainTB) Helper() {}
func (mainTB) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func TestMain(m *testing.M) {
	faultyBin = plugintest.BuildBinary(mainTB{}, "../testdata/faulty")
	os.Exit(m.Run())
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

func sum(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestProcessHooks(t *testing.T) {
	l := process.NewLoader(process.Options{Logger: quietLogger()})
	p, err := l.Load(context.Background(), plugins.Spec{Name: "faulty-proc", Runtime: plugins.RuntimeProcess, Source: faultyBin,
		SHA256: sum(t, faultyBin), Enabled: true, Config: []byte(`{"tag":"p1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	if m := p.Manifest(); m.Name != "faulty" || !m.Implements(pluginsdk.HookAdaptRequest) {
		t.Fatalf("manifest %+v", m)
	}
	out, err := p.PreRequest(ctx, []byte("hi"))
	if err != nil || string(out.Body) != "p1:hi" || out.Headers["x-faulty-tag"] != "p1" {
		t.Fatalf("pre_request %+v %v", out, err)
	}
	_, err = p.PreRequest(ctx, []byte("reject"))
	var pe *plugins.Error
	if !errors.As(err, &pe) || pe.Kind != plugins.KindRejected || pe.Code != 403 {
		t.Fatalf("reject: %v", err)
	}
	out, err = p.StreamBatch(ctx, pluginsdk.StreamInput{State: []byte("41"), Batch: []byte("[]")})
	if err != nil || string(out.State) != "42" {
		t.Fatalf("stream %+v %v", out, err)
	}
}

func TestChecksumMismatchRefusesToStart(t *testing.T) {
	l := process.NewLoader(process.Options{Logger: quietLogger()})
	_, err := l.Load(context.Background(), plugins.Spec{Name: "pinned", Runtime: plugins.RuntimeProcess, Source: faultyBin,
		SHA256: strings.Repeat("ab", 32), Enabled: true})
	if err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("want checksum error, got %v", err)
	}
}

// A crash, a panic and a hang each fail only their call with an error
// naming the plugin; the process is restarted and later calls succeed.
func TestCrashAndHangAreIsolated(t *testing.T) {
	m := plugins.NewManager(plugins.ManagerOptions{
		Loaders: map[plugins.Runtime]plugins.Loader{plugins.RuntimeProcess: process.NewLoader(process.Options{Logger: quietLogger()})},
		Logger:  quietLogger(),
	})
	defer m.Close()
	ctx := context.Background()
	if err := m.Apply(ctx, plugins.Spec{Name: "faulty-proc", Runtime: plugins.RuntimeProcess, Source: faultyBin, Enabled: true,
		Config: []byte(`{"tag":"ok"}`), Limits: plugins.Limits{TimeoutMS: 500}}); err != nil {
		t.Fatal(err)
	}
	e, _ := m.Entry("faulty-proc")
	for _, c := range []struct {
		input string
		kind  plugins.ErrorKind
	}{{"exit", plugins.KindCrash}, {"panic", plugins.KindCrash}, {"hang", plugins.KindTimeout}} {
		t.Run(c.input, func(t *testing.T) {
			start := time.Now()
			_, err := e.PreRequest(ctx, []byte(c.input))
			var pe *plugins.Error
			if !errors.As(err, &pe) || pe.Plugin != "faulty-proc" || pe.Kind != c.kind {
				t.Fatalf("want %s error naming the plugin, got %v", c.kind, err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("failing call took %s", d)
			}
			st, _ := m.Get("faulty-proc")
			if st.Errors == 0 || !strings.Contains(st.Error, "faulty-proc") {
				t.Fatalf("status does not show the failure: %+v", st)
			}
			for i := 0; i < 5; i++ {
				cs := time.Now()
				out, err := e.PreRequest(ctx, []byte("fine"))
				if err != nil || string(out.Body) != "ok:fine" {
					t.Fatalf("call %d after %s: %v", i, c.input, err)
				}
				if d := time.Since(cs); d > 2*time.Second {
					t.Fatalf("call after %s took %s", c.input, d)
				}
			}
		})
	}
}
