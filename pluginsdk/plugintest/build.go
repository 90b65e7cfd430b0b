// Package plugintest runs plugins under the real host runtimes inside
// `go test`: BuildWasm compiles a plugin package to a .wasm module (cached
// by content, so a clean clone needs no make step), and LoadWasm starts it
// with the same wazero runtime the gateway uses.
//
// It imports the host runtime, so only test code should import it; the
// pluginsdk package itself stays light.
package plugintest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// TB is the subset of testing.TB the helpers need; a TestMain can pass an
// adapter since it has no *testing.T.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

var buildMu sync.Mutex

// BuildWasm compiles the main package in dir (relative to the working
// directory or absolute) with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared
// and returns the module path. Results are cached under the user cache dir,
// keyed by the Go version and the content of every .go, go.mod and go.sum
// file in the package's module, so editing the plugin or pluginsdk rebuilds
// it and nothing else does.
func BuildWasm(t TB, dir string) string {
	t.Helper()
	path, err := BuildWasmErr(dir, "")
	if err != nil {
		t.Fatalf("plugintest: %v", err)
	}
	return path
}

// BuildBinary is BuildWasm for a native executable (a go-plugin
// subprocess plugin).
func BuildBinary(t TB, dir string) string {
	t.Helper()
	path, err := buildErr(dir, false, "")
	if err != nil {
		t.Fatalf("plugintest: %v", err)
	}
	return path
}

// BuildWasmErr is BuildWasm returning an error; outDir "" uses the cache.
func BuildWasmErr(dir, outDir string) (string, error) { return buildErr(dir, true, outDir) }

func buildErr(dir string, wasm bool, outDir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", dir, err)
	}
	root, err := moduleRoot(abs)
	if err != nil {
		return "", err
	}
	key, err := contentKey(append([]string{root}, replaceRoots(root)...), abs, wasm)
	if err != nil {
		return "", err
	}
	if outDir == "" {
		base, err := os.UserCacheDir()
		if err != nil || base == "" {
			base = os.TempDir()
		}
		outDir = filepath.Join(base, "wasmgate-plugintest")
	}
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		return "", fmt.Errorf("create build cache: %w", err)
	}
	name := filepath.Base(abs) + "-" + key[:16]
	if wasm {
		name += ".wasm"
	}
	out := filepath.Join(outDir, name)
	buildMu.Lock()
	defer buildMu.Unlock()
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	tmp := fmt.Sprintf("%s.tmp%d", out, os.Getpid())
	args := []string{"build", "-o", tmp}
	if wasm {
		args = append(args, "-buildmode=c-shared")
	}
	args = append(args, ".")
	cmd := exec.Command(goTool(), args...)
	cmd.Dir = abs
	cmd.Env = os.Environ()
	if wasm {
		cmd.Env = append(cmd.Env, "GOOS=wasip1", "GOARCH=wasm")
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), abs, err, b)
	}
	// Rename is atomic, so test binaries building the same module in
	// parallel never read a half-written file.
	if err := os.Rename(tmp, out); err != nil {
		return "", fmt.Errorf("install %s: %w", out, err)
	}
	pruneStale(outDir, filepath.Base(abs)+"-", out)
	return out, nil
}

func goTool() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return "go"
}

func moduleRoot(dir string) (string, error) {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		d = parent
	}
}

// contentKey hashes the module's sources. Hashing the whole module is
// coarser than the package's dependency set, but it needs no `go list` run
// and a stale module can never be served.
func contentKey(roots []string, pkg string, wasm bool) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%v\x00", runtime.Version(), pkg, wasm)
	var files []string
	for _, root := range roots {
		if err := collectSources(root, pkg, &files); err != nil {
			return "", err
		}
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("hash sources: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// replaceRoots returns the local directories go.mod replaces point to
// (an example module's "=> ../.."), whose sources it builds with too.
func replaceRoots(root string) []string {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil
	}
	var dirs []string
	for _, line := range strings.Split(string(b), "\n") {
		_, target, ok := strings.Cut(line, "=>")
		if !ok {
			continue
		}
		target = strings.TrimSpace(target)
		if strings.HasPrefix(target, "./") || strings.HasPrefix(target, "../") {
			dirs = append(dirs, filepath.Join(root, target))
		}
	}
	return dirs
}

func collectSources(root, pkg string, files *[]string) error {
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if p != root && (strings.HasPrefix(n, ".") || n == "bin" || n == "node_modules") {
				return filepath.SkipDir
			}
			if p != root && p != pkg {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // nested module
				}
			}
			return nil
		}
		n := d.Name()
		if strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") || n == "go.mod" || n == "go.sum" {
			*files = append(*files, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("hash sources: %w", err)
	}
	return nil
}

// pruneStale removes builds of the same package superseded more than a day
// ago, so the cache does not grow with every edit; the delay leaves a
// concurrently running older test binary its file.
func pruneStale(dir, prefix, keep string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() || p == keep || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > 24*time.Hour {
			_ = os.Remove(p)
		}
	}
}
