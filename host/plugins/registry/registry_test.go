package registry_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

// Modules built once for the whole package (cached by content across runs).
var mod struct {
	pii, maxtokens, faulty, wrongABI, adapter, faultyBin string
}

type mainTB struct{}

func (mainTB) Helper() {}
func (mainTB) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func TestMain(m *testing.M) {
	mod.pii = plugintest.BuildWasm(mainTB{}, "../../../plugins/pii")
	mod.maxtokens = plugintest.BuildWasm(mainTB{}, "../../../plugins/maxtokens")
	mod.faulty = plugintest.BuildWasm(mainTB{}, "../testdata/faulty")
	mod.wrongABI = plugintest.BuildWasm(mainTB{}, "../testdata/wrongabi")
	mod.adapter = plugintest.BuildWasm(mainTB{}, "testdata/adapter")
	mod.faultyBin = plugintest.BuildBinary(mainTB{}, "../testdata/faulty")
	os.Exit(m.Run())
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// pluginsDir is a plugins_dir holding the first-party modules pii and
// maxtokens, plus the given adapter-<family>.wasm files (the test adapter).
func pluginsDir(t *testing.T, adapters ...string) string {
	t.Helper()
	dir := t.TempDir()
	copyFile(t, mod.pii, filepath.Join(dir, "pii.wasm"))
	copyFile(t, mod.maxtokens, filepath.Join(dir, "maxtokens.wasm"))
	for _, fam := range adapters {
		copyFile(t, mod.adapter, filepath.Join(dir, "adapter-"+fam+".wasm"))
	}
	return dir
}

func start(t *testing.T, dir, cfgYAML string, env ...string) *testgw.Gateway {
	t.Helper()
	return testgw.Start(t, testgw.Options{ConfigYAML: cfgYAML, Env: append([]string{"GATEWAY_PLUGINS_DIR=" + dir}, env...)})
}

// view is the subset of the API view the tests read.
type view struct {
	Name     string          `json:"name"`
	Runtime  string          `json:"runtime"`
	Source   string          `json:"source"`
	Path     string          `json:"path"`
	SHA256   string          `json:"sha256"`
	Order    int             `json:"order"`
	Enabled  bool            `json:"enabled"`
	Config   json.RawMessage `json:"config"`
	Internal bool            `json:"internal"`
	Uploaded bool            `json:"uploaded"`
	Kind     string          `json:"kind"`
	Hooks    []string        `json:"hooks"`
	Status   string          `json:"status"`
	Error    string          `json:"error"`
	Calls    uint64          `json:"calls"`
	Errors   uint64          `json:"errors"`
	P50      int64           `json:"p50_ns"`
	P99      int64           `json:"p99_ns"`
	LoadedAt time.Time       `json:"loaded_at"`
	Hash     string          `json:"config_hash"`
}

func get(t *testing.T, g *testgw.Gateway, name string) view {
	t.Helper()
	var v view
	g.Expect(200, "GET", "/api/plugins/"+name, nil).Decode(t, &v)
	return v
}

type list struct {
	Plugins    []view `json:"plugins"`
	Count      int    `json:"count"`
	TotalCount int    `json:"total_count"`
	Limit      int    `json:"limit"`
	Offset     int    `json:"offset"`
}

// call runs pre_request on the named plugin through the service's chain,
// the way the request pipeline does.
func call(g *testgw.Gateway, name, body string) (string, bool, error) {
	for _, e := range g.Server.Plugins().Chain(pluginsdk.HookPreRequest) {
		if e.Name() == name {
			out, err := e.PreRequest(context.Background(), []byte(body))
			return string(out.Body), true, err
		}
	}
	return "", false, nil
}

func mustCall(t *testing.T, g *testgw.Gateway, name, body string) string {
	t.Helper()
	out, ok, err := call(g, name, body)
	if !ok || err != nil {
		t.Fatalf("call %s: in chain %v, err %v", name, ok, err)
	}
	return out
}

func TestInstallByPathAndFirstPartyName(t *testing.T) {
	dir := pluginsDir(t)
	g := start(t, dir, "")
	var v view
	g.Expect(201, "POST", "/api/plugins", map[string]any{"name": "pii", "source": "pii", "order": 20, "config": map[string]any{"action": "redact"}}).Decode(t, &v)
	if v.Kind != "guardrail" || v.Status != "loaded" || v.Path != filepath.Join(dir, "pii.wasm") || !contains(v.Hooks, "pre_request") {
		t.Fatalf("pii view %+v", v)
	}
	g.Expect(201, "POST", "/api/plugins", map[string]any{"name": "clamp", "source": "first-party:maxtokens", "order": 10, "config": map[string]any{"ceiling": 100}})
	g.Expect(201, "POST", "/api/plugins", map[string]any{"name": "tagger", "runtime": "wasm", "path": mod.faulty, "sha256": fileSum(t, mod.faulty), "order": 10, "config": map[string]any{"tag": "t1"}})
	// Relative paths resolve inside plugins_dir.
	g.Expect(201, "POST", "/api/plugins", map[string]any{"name": "clamp2", "source": "maxtokens.wasm", "order": 30, "enabled": false, "config": map[string]any{"ceiling": 5}})

	if out := mustCall(t, g, "tagger", "hello"); out != "t1:hello" {
		t.Fatalf("tagger answered %q", out)
	}
	// Chain order: order, then name; disabled plugins are not in it.
	var names []string
	for _, e := range g.Server.Plugins().Chain(pluginsdk.HookPreRequest) {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "clamp,tagger,pii" {
		t.Fatalf("chain %v", names)
	}

	var l list
	g.Expect(200, "GET", "/api/plugins?limit=2&offset=1", nil).Decode(t, &l)
	if l.Count != 2 || l.TotalCount != 4 || l.Limit != 2 || l.Offset != 1 || l.Plugins[0].Name != "tagger" {
		t.Fatalf("page %+v", l)
	}
	g.Expect(200, "GET", "/api/plugins?status=disabled", nil).Decode(t, &l)
	if l.TotalCount != 1 || l.Plugins[0].Name != "clamp2" || l.Plugins[0].Enabled {
		t.Fatalf("disabled filter %+v", l)
	}
	g.Expect(200, "GET", "/api/plugins?kind=guardrail", nil).Decode(t, &l)
	if l.TotalCount != 1 || l.Plugins[0].Name != "pii" {
		t.Fatalf("kind filter %+v", l)
	}
	v = get(t, g, "tagger")
	if v.Calls != 1 || v.Errors != 0 || v.P50 <= 0 || v.P99 < v.P50 || v.Kind != "transform" || v.Runtime != "wasm" {
		t.Fatalf("tagger stats %+v", v)
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/plugins?limit=0", nil), 400, "invalid_parameter")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestInstallByUpload(t *testing.T) {
	g := start(t, pluginsDir(t), "")
	bin, err := os.ReadFile(mod.faulty)
	if err != nil {
		t.Fatal(err)
	}
	sum := fileSum(t, mod.faulty)
	wasmType := func(r *http.Request) { r.Header.Set("Content-Type", "application/wasm") }

	// Raw body, settings in the query string.
	r := g.Do("POST", "/api/plugins/upload?name=up1&order=3&config=%7B%22tag%22%3A%22raw%22%7D", bin, wasmType)
	if r.Status != 201 {
		t.Fatalf("raw upload: %d %s", r.Status, r.Body)
	}
	var v view
	r.Decode(t, &v)
	want := filepath.Join(g.Dir, "plugins", "up1-"+sum+".wasm")
	if v.SHA256 != sum || !v.Uploaded || v.Path != want || v.Order != 3 || v.Status != "loaded" {
		t.Fatalf("raw upload view %+v", v)
	}
	fi, err := os.Stat(want)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("stored module: %v %v", fi, err)
	}
	if out := mustCall(t, g, "up1", "x"); out != "raw:x" {
		t.Fatalf("up1 answered %q", out)
	}

	// Multipart: the file plus a JSON spec part.
	body, ct := multipartBody(t, bin, map[string]string{"spec": `{"name":"up2","config":{"tag":"mp"},"trusted":true}`, "order": "4"})
	r = g.Do("POST", "/api/plugins/upload", body, func(r *http.Request) { r.Header.Set("Content-Type", ct) })
	if r.Status != 201 {
		t.Fatalf("multipart upload: %d %s", r.Status, r.Body)
	}
	r.Decode(t, &v)
	if v.Name != "up2" || v.SHA256 != sum || v.Order != 4 {
		t.Fatalf("multipart view %+v", v)
	}
	if out := mustCall(t, g, "up2", "x"); out != "mp:x" {
		t.Fatalf("up2 answered %q", out)
	}

	// Bad uploads.
	testgw.WantEnvelope(t, g.Do("POST", "/api/plugins/upload?name=up1", bin, wasmType), 409, "duplicate_name")
	testgw.WantEnvelope(t, g.Do("POST", "/api/plugins/upload?name=x", []byte("not wasm"), wasmType), 400, "not_wasm")
	testgw.WantEnvelope(t, g.Do("POST", "/api/plugins/upload?name=x&sha256="+strings.Repeat("0", 64), bin, wasmType), 400, "sha256_mismatch")
	testgw.WantEnvelope(t, g.Do("POST", "/api/plugins/upload?name=..%2F..%2Fescape", bin, wasmType), 400, "invalid_value")
	testgw.WantEnvelope(t, g.Do("POST", "/api/plugins/upload", bin, wasmType), 400, "missing_field")
	testgw.WantEnvelope(t, g.Do("POST", "/api/plugins/upload?name=x&runtime=process", bin, wasmType), 400, "invalid_value")
	testgw.WantEnvelope(t, g.Do("POST", "/api/plugins/upload?name=x", `{"name":"x"}`), 415, "unsupported_media_type")
	wrong, _ := os.ReadFile(mod.wrongABI)
	e := testgw.WantEnvelope(t, g.Do("POST", "/api/plugins/upload?name=wrong", wrong, wasmType), 400, "plugin_load_failed")
	if msg := e["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "unsupported plugin ABI") {
		t.Fatalf("wrong ABI message %q", msg)
	}
	entries, _ := os.ReadDir(filepath.Join(g.Dir, "plugins"))
	if len(entries) != 2 {
		t.Fatalf("upload dir holds %d files, want up1's and up2's only", len(entries))
	}
	for _, en := range entries {
		if strings.HasPrefix(en.Name(), "wrong-") || strings.HasPrefix(en.Name(), ".upload") {
			t.Fatalf("failed upload left %s behind", en.Name())
		}
	}

	// Delete removes the stored module.
	g.Expect(200, "DELETE", "/api/plugins/up1", nil)
	if _, err := os.Stat(want); !os.IsNotExist(err) {
		t.Fatalf("uploaded module kept after delete: %v", err)
	}
}

func multipartBody(t *testing.T, file []byte, fields map[string]string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range fields {
		if err := w.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	fw, err := w.CreateFormFile("file", "plugin.wasm")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(file)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), w.FormDataContentType()
}

func TestUploadSizeLimit(t *testing.T) {
	g := start(t, pluginsDir(t), "", "GATEWAY_SERVER__PLUGIN_UPLOAD_MAX_BYTES=4096")
	bin, _ := os.ReadFile(mod.faulty)
	r := g.Do("POST", "/api/plugins/upload?name=big", bin, func(r *http.Request) { r.Header.Set("Content-Type", "application/wasm") })
	e := testgw.WantEnvelope(t, r, 413, "body_too_large")
	if msg := e["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "server.plugin_upload_max_bytes") {
		t.Fatalf("413 message does not name the key: %q", msg)
	}
}

func TestEnableDisableConfigureReloadDelete(t *testing.T) {
	g := start(t, pluginsDir(t), "")
	g.Expect(201, "POST", "/api/plugins", map[string]any{"name": "f", "source": mod.faulty, "config": map[string]any{"tag": "a", "keep": 1}})

	var v view
	g.Expect(200, "POST", "/api/plugins/f/disable", nil).Decode(t, &v)
	if v.Status != "disabled" || v.Enabled {
		t.Fatalf("disabled view %+v", v)
	}
	if _, ok, _ := call(g, "f", "x"); ok {
		t.Fatal("disabled plugin still in the chain")
	}
	g.Expect(200, "POST", "/api/plugins/f/enable", nil).Decode(t, &v)
	if v.Status != "loaded" || !v.Enabled {
		t.Fatalf("enabled view %+v", v)
	}

	// PUT config is a merge patch: tag changes, keep stays.
	g.Expect(200, "PUT", "/api/plugins/f/config", map[string]any{"tag": "b"}).Decode(t, &v)
	if out := mustCall(t, g, "f", "x"); out != "b:x" {
		t.Fatalf("after config change: %q", out)
	}
	var cfg map[string]any
	_ = json.Unmarshal(v.Config, &cfg)
	if cfg["tag"] != "b" || cfg["keep"] != float64(1) {
		t.Fatalf("merged config %s", v.Config)
	}
	g.Expect(200, "PUT", "/api/plugins/f/config", map[string]any{"keep": nil}).Decode(t, &v)
	if string(v.Config) != `{"tag":"b"}` {
		t.Fatalf("null did not delete: %s", v.Config)
	}
	// A config the plugin rejects fails the change and keeps the old version serving.
	e := testgw.WantEnvelope(t, g.Do("PUT", "/api/plugins/f/config", `{"mode":"fail_configure"}`), 400, "plugin_load_failed")
	if e["error"].(map[string]any)["param"] != "config" {
		t.Fatalf("configure failure param: %v", e)
	}
	if out := mustCall(t, g, "f", "x"); out != "b:x" {
		t.Fatalf("old version not serving: %q", out)
	}

	before := get(t, g, "f").LoadedAt
	time.Sleep(5 * time.Millisecond)
	g.Expect(200, "POST", "/api/plugins/f/reload", nil).Decode(t, &v)
	if !v.LoadedAt.After(before) || v.Status != "loaded" {
		t.Fatalf("reload: loaded_at %v -> %v, status %s", before, v.LoadedAt, v.Status)
	}

	// Full update: omitted source keeps the module; name is immutable.
	g.Expect(200, "PUT", "/api/plugins/f", map[string]any{"order": 7, "config": map[string]any{"tag": "c"}}).Decode(t, &v)
	if v.Order != 7 || v.Source != mod.faulty || mustCall(t, g, "f", "x") != "c:x" {
		t.Fatalf("full update %+v", v)
	}
	testgw.WantEnvelope(t, g.Do("PUT", "/api/plugins/f", map[string]any{"name": "other"}), 400, "immutable_field")
	testgw.WantEnvelope(t, g.Do("PUT", "/api/plugins/f/config", "{bad"), 400, "invalid_json")
	testgw.WantEnvelope(t, g.Do("POST", "/api/plugins/nope/enable", nil), 404, "not_found")

	g.Expect(200, "DELETE", "/api/plugins/f", nil)
	testgw.WantEnvelope(t, g.Do("GET", "/api/plugins/f", nil), 404, "not_found")
	testgw.WantEnvelope(t, g.Do("DELETE", "/api/plugins/f", nil), 404, "not_found")
	if _, ok, _ := call(g, "f", "x"); ok {
		t.Fatal("deleted plugin still in the chain")
	}
}

// Hot reload under load: calls through the service's chain never fail
// while the plugin is reconfigured and reloaded through the API.
func TestHotReloadUnderLoad(t *testing.T) {
	g := start(t, pluginsDir(t), "")
	// A generous deadline: four spinning callers plus a compiling reload on
	// a shared 2-core machine can starve a call past the 250 ms default,
	// which would be a CPU-starvation timeout, not a reload failure.
	g.Expect(201, "POST", "/api/plugins", map[string]any{"name": "hot", "source": mod.faulty,
		"config": map[string]any{"tag": "g0"}, "limits": map[string]any{"pool_size": 2, "timeout_ms": 10000}})
	var stop atomic.Bool
	var calls, failures atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				_, ok, err := call(g, "hot", "x")
				calls.Add(1)
				if !ok || err != nil {
					failures.Add(1)
					t.Errorf("call during reload: in chain %v, err %v", ok, err)
					return
				}
			}
		}()
	}
	for i := 1; i <= 5; i++ {
		g.Expect(200, "PUT", "/api/plugins/hot/config", map[string]any{"tag": fmt.Sprintf("g%d", i)})
		g.Expect(200, "POST", "/api/plugins/hot/reload", nil)
	}
	stop.Store(true)
	wg.Wait()
	if failures.Load() != 0 || calls.Load() == 0 {
		t.Fatalf("%d failures in %d calls", failures.Load(), calls.Load())
	}
	if out := mustCall(t, g, "hot", "x"); out != "g5:x" {
		t.Fatalf("final generation answered %q", out)
	}
}

func TestPersistenceAcrossRestart(t *testing.T) {
	dir := pluginsDir(t)
	g := start(t, dir, "")
	g.Expect(201, "POST", "/api/plugins", map[string]any{"name": "kept", "source": mod.faulty, "config": map[string]any{"tag": "k"}})
	g.Expect(201, "POST", "/api/plugins", map[string]any{"name": "off", "source": "pii"})
	g.Expect(200, "POST", "/api/plugins/off/disable", nil)
	bin, _ := os.ReadFile(mod.faulty)
	g.Do("POST", "/api/plugins/upload?name=up&config=%7B%22tag%22%3A%22u%22%7D", bin, func(r *http.Request) { r.Header.Set("Content-Type", "application/wasm") })

	g = g.Restart("")
	if v := get(t, g, "kept"); v.Status != "loaded" || mustCall(t, g, "kept", "x") != "k:x" {
		t.Fatalf("kept after restart %+v", v)
	}
	if v := get(t, g, "off"); v.Status != "disabled" {
		t.Fatalf("off after restart %+v", v)
	}
	if v := get(t, g, "up"); v.Status != "loaded" || !v.Uploaded || mustCall(t, g, "up", "x") != "u:x" {
		t.Fatalf("upload after restart %+v", v)
	}
}

func TestConfigFileReconciliation(t *testing.T) {
	dir := pluginsDir(t)
	cfg := func(tag string) string {
		return fmt.Sprintf("plugins:\n  - name: cfg\n    source: %s\n    order: 5\n    config:\n      tag: %s\n  - name: guard\n    source: pii\n", mod.faulty, tag)
	}
	g := start(t, dir, cfg("file1"))
	v := get(t, g, "cfg")
	if v.Status != "loaded" || v.Hash == "" || v.Order != 5 || mustCall(t, g, "cfg", "x") != "file1:x" {
		t.Fatalf("from config %+v", v)
	}
	if get(t, g, "guard").Kind != "guardrail" {
		t.Fatal("first-party pii from config not loaded")
	}
	// An API edit survives a restart with the unchanged file ...
	g.Expect(200, "PUT", "/api/plugins/cfg/config", map[string]any{"tag": "api"})
	g = g.Restart("")
	if out := mustCall(t, g, "cfg", "x"); out != "api:x" {
		t.Fatalf("API edit lost on restart with unchanged file: %q", out)
	}
	// ... and a changed file entry wins.
	g = g.Restart(cfg("file2"))
	if out := mustCall(t, g, "cfg", "x"); out != "file2:x" {
		t.Fatalf("changed file entry did not win: %q", out)
	}
}

func TestInvalidConfigFailsStartNamingTheField(t *testing.T) {
	dir := pluginsDir(t)
	for entry, want := range map[string]string{
		"- name: a\n": "plugins[0].source",
		"- name: a\n  source: pii\n  runtime: jvm\n":               "plugins[0].runtime",
		"- name: a\n  source: pii\n  trusted: true\n":              "plugins[0].trusted",
		"- name: a\n  source: pii\n  bogus: 1\n":                   "plugins[0].bogus",
		"- source: pii\n":                                          "plugins[0].name",
		"- name: a\n  source: pii\n- name: a\n  source: pii\n":     "plugins[1].name",
		"- name: a\n  source: ../../etc/x.wasm\n":                  "plugins[0].source",
		"- name: a\n  source: pii\n  limits:\n    memory_mb: -1\n": "plugins[0].limits.memory_mb",
	} {
		_, err := testgw.TryStart(t, testgw.Options{ConfigYAML: "plugins:\n" + indent(entry),
			Env: []string{"GATEWAY_PLUGINS_DIR=" + dir}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("entry %q: err %v, want it to name %s", entry, err, want)
		}
	}
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = "  " + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

// A module of the wrong ABI (or a missing one) does not stop start-up: it
// is listed with status error.
func TestFailingModuleShowsStatusError(t *testing.T) {
	dir := pluginsDir(t)
	yaml := fmt.Sprintf("plugins:\n  - name: wrong\n    source: %s\n  - name: missing\n    source: /nonexistent/x.wasm\n  - name: good\n    source: pii\n", mod.wrongABI)
	g := start(t, dir, yaml)
	if v := get(t, g, "wrong"); v.Status != "error" || !strings.Contains(v.Error, "unsupported plugin ABI") {
		t.Fatalf("wrong ABI plugin %+v", v)
	}
	if v := get(t, g, "missing"); v.Status != "error" || v.Error == "" {
		t.Fatalf("missing module %+v", v)
	}
	if v := get(t, g, "good"); v.Status != "loaded" {
		t.Fatalf("good plugin %+v", v)
	}
	var l list
	g.Expect(200, "GET", "/api/plugins?status=error", nil).Decode(t, &l)
	if l.TotalCount != 2 {
		t.Fatalf("error filter %+v", l)
	}
}

func TestBadInputEnvelopes(t *testing.T) {
	dir := pluginsDir(t)
	g := start(t, dir, "")
	g.Expect(201, "POST", "/api/plugins", map[string]any{"name": "dup", "source": "pii"})
	sum := fileSum(t, mod.faulty)
	for _, c := range []struct {
		body   map[string]any
		status int
		code   string
		param  string
	}{
		{map[string]any{"name": "a", "runtime": "jvm", "source": "pii"}, 400, "unknown_runtime", "runtime"},
		{map[string]any{"name": "a"}, 400, "missing_source", "source"},
		{map[string]any{"name": "a", "source": "/nonexistent/plugin.wasm"}, 400, "source_not_found", "source"},
		{map[string]any{"name": "a", "source": "nothere"}, 400, "source_not_found", "source"},
		{map[string]any{"name": "a", "source": mod.faulty, "sha256": strings.Repeat("ab", 32)}, 400, "sha256_mismatch", "sha256"},
		{map[string]any{"name": "a", "source": mod.faulty, "sha256": "xyz"}, 400, "invalid_value", "sha256"},
		{map[string]any{"name": "a", "source": mod.wrongABI}, 400, "plugin_load_failed", "source"},
		{map[string]any{"name": "dup", "source": "pii"}, 409, "duplicate_name", "name"},
		{map[string]any{"name": "a", "source": mod.faulty, "trusted": true}, 400, "sha256_required", "trusted"},
		{map[string]any{"name": "a", "source": "../../../etc/passwd"}, 400, "path_outside_plugins_dir", "source"},
		{map[string]any{"name": "a/b", "source": "pii"}, 400, "invalid_value", "name"},
		{map[string]any{"source": "pii"}, 400, "missing_field", "name"},
		{map[string]any{"name": "a", "source": "pii", "path": "maxtokens"}, 400, "invalid_value", "path"},
		{map[string]any{"name": "a", "source": "pii", "bogus": 1}, 400, "unknown_field", "bogus"},
		{map[string]any{"name": "a", "source": "pii", "limits": map[string]any{"timeout_ms": -5}}, 400, "invalid_value", "limits.timeout_ms"},
		{map[string]any{"name": "a", "source": "pii", "config": map[string]any{"action": "explode"}}, 400, "plugin_load_failed", "config"},
		{map[string]any{"name": "a", "runtime": "process", "source": mod.faultyBin, "sha256": sum}, 400, "sha256_mismatch", "sha256"},
	} {
		e := testgw.WantEnvelope(t, g.Do("POST", "/api/plugins", c.body), c.status, c.code)
		if p := e["error"].(map[string]any)["param"]; p != c.param {
			t.Errorf("%v: param %v, want %s", c.body, p, c.param)
		}
	}
	// Nothing half-installed is left behind.
	var l list
	g.Expect(200, "GET", "/api/plugins", nil).Decode(t, &l)
	if l.TotalCount != 1 {
		t.Fatalf("failed installs left plugins: %+v", l)
	}
}

// TestProcessPluginNeedsSettingsUpdate: Plugins:Create alone (the
// developer role's) cannot run a native binary on the gateway host, by
// install or by pointing a plugin at another binary; wasm installs and a
// process plugin's config stay within Plugins:*.
func TestProcessPluginNeedsSettingsUpdate(t *testing.T) {
	g := start(t, pluginsDir(t), "")
	g.EnableAuth()
	pluginsOnly, withSettings := g.APIKey("Plugins:*"), g.APIKey("Plugins:*", "Settings:Update")
	proc := map[string]any{"name": "proc", "runtime": "process", "source": mod.faultyBin, "sha256": fileSum(t, mod.faultyBin)}
	testgw.WantEnvelope(t, g.Do("POST", "/api/plugins", proc, pluginsOnly), 403, "missing_permission")
	if r := g.Do("POST", "/api/plugins", proc, withSettings); r.Status != 201 {
		t.Fatalf("with Settings:Update: %d %s", r.Status, r.Body)
	}
	if r := g.Do("PUT", "/api/plugins/proc/config", map[string]any{"tag": "q"}, pluginsOnly); r.Status != 200 {
		t.Fatalf("config of a process plugin: %d %s", r.Status, r.Body)
	}
	// A wasm plugin turned into a process one is the same power.
	if r := g.Do("POST", "/api/plugins", map[string]any{"name": "pii", "source": mod.pii}, pluginsOnly); r.Status != 201 {
		t.Fatalf("wasm install: %d %s", r.Status, r.Body)
	}
	testgw.WantEnvelope(t, g.Do("PUT", "/api/plugins/pii", map[string]any{"runtime": "process", "source": mod.faultyBin}, pluginsOnly), 403, "missing_permission")
}

func TestProcessPlugin(t *testing.T) {
	g := start(t, pluginsDir(t), "")
	var v view
	g.Expect(201, "POST", "/api/plugins", map[string]any{"name": "proc", "runtime": "process", "source": mod.faultyBin,
		"sha256": fileSum(t, mod.faultyBin), "config": map[string]any{"tag": "p"}}).Decode(t, &v)
	if v.Runtime != "process" || v.Status != "loaded" || !contains(v.Hooks, "pre_request") {
		t.Fatalf("process plugin %+v", v)
	}
	if out := mustCall(t, g, "proc", "x"); out != "p:x" {
		t.Fatalf("process plugin answered %q", out)
	}
	g.Expect(200, "PUT", "/api/plugins/proc/config", map[string]any{"tag": "q"})
	if out := mustCall(t, g, "proc", "x"); out != "q:x" {
		t.Fatalf("reconfigured process plugin answered %q", out)
	}
	g.Expect(200, "DELETE", "/api/plugins/proc", nil)
}

func adaptPath(t *testing.T, e *plugins.Entry) string {
	t.Helper()
	out, err := e.AdaptRequest(context.Background(), []byte(`{"model":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(out.Body, &spec); err != nil {
		t.Fatalf("adapter output %s: %v", out.Body, err)
	}
	return spec.Path
}

// Adapters in plugins_dir load with zero configuration, show in the API,
// and a stored plugin of the same name overrides them.
func TestProviderAdapters(t *testing.T) {
	dir := pluginsDir(t, "test")
	g := start(t, dir, "")
	svc := g.Server.Plugins()
	// No provider of family "test" is configured: the adapter waits for
	// its first use.
	if v := get(t, g, "adapter-test"); !v.Internal || v.Status != "available" {
		t.Fatalf("adapter view before first use %+v", v)
	}
	e, ok := svc.Adapter("test")
	v := get(t, g, "adapter-test")
	if !v.Internal || v.Kind != "provider" || v.Status != "loaded" || !contains(v.Hooks, "adapt_request") {
		t.Fatalf("adapter view %+v", v)
	}
	if !ok || adaptPath(t, e) != "/default" {
		t.Fatalf("Adapter(test): %v", ok)
	}
	if _, ok := svc.Adapter("nope"); ok {
		t.Fatal("Adapter(nope) found")
	}
	if _, ok := svc.Adapter("missing"); ok {
		t.Fatal("unknown family found")
	}
	testgw.WantEnvelope(t, g.Do("DELETE", "/api/plugins/adapter-test", nil), 409, "internal_plugin")

	// Override with a module elsewhere, configured differently.
	other := filepath.Join(t.TempDir(), "thirdparty.wasm")
	copyFile(t, mod.adapter, other)
	g.Expect(201, "POST", "/api/plugins", map[string]any{"name": "adapter-test", "source": other, "config": map[string]any{"tag": "override"}}).Decode(t, &v)
	if v.Internal || v.Source != other {
		t.Fatalf("override view %+v", v)
	}
	if e, ok := svc.Adapter("test"); !ok || adaptPath(t, e) != "/override" {
		t.Fatal("override not serving")
	}
	g = g.Restart("")
	svc = g.Server.Plugins()
	if e, ok := svc.Adapter("test"); !ok || adaptPath(t, e) != "/override" {
		t.Fatal("stored override lost to the auto-loaded adapter on restart")
	}
	// Deleting the override brings the first-party adapter back.
	g.Expect(200, "DELETE", "/api/plugins/adapter-test", nil)
	if e, ok := svc.Adapter("test"); !ok || adaptPath(t, e) != "/default" || !get(t, g, "adapter-test").Internal {
		t.Fatal("first-party adapter not restored after delete")
	}
	// Disabling an adapter stores the choice; Adapter then reports none.
	g.Expect(200, "POST", "/api/plugins/adapter-test/disable", nil)
	if _, ok := svc.Adapter("test"); ok {
		t.Fatal("disabled adapter still returned")
	}
	g = g.Restart("")
	if v := get(t, g, "adapter-test"); v.Internal || v.Status != "disabled" {
		t.Fatalf("disabled adapter after restart %+v", v)
	}
	// A non-provider plugin under an adapter name is not an adapter.
	g.Expect(201, "POST", "/api/plugins", map[string]any{"name": "adapter-fake", "source": mod.faulty})
	if _, ok := g.Server.Plugins().Adapter("fake"); ok {
		t.Fatal("transform plugin returned as an adapter")
	}
}

func TestPermissionTable(t *testing.T) {
	g := start(t, pluginsDir(t), "")
	want := map[string]string{
		"GET /api/plugins":                "Plugins:View",
		"GET /api/plugins/:name":          "Plugins:View",
		"POST /api/plugins":               "Plugins:Create",
		"POST /api/plugins/upload":        "Plugins:Create",
		"PUT /api/plugins/:name":          "Plugins:Update",
		"PUT /api/plugins/:name/config":   "Plugins:Update",
		"POST /api/plugins/:name/enable":  "Plugins:Update",
		"POST /api/plugins/:name/disable": "Plugins:Update",
		"POST /api/plugins/:name/reload":  "Plugins:Update",
		"DELETE /api/plugins/:name":       "Plugins:Delete",
	}
	got := map[string]string{}
	for _, r := range g.Server.Routes() {
		if strings.HasPrefix(r.Path, "/api/plugins") {
			got[r.Method+" "+r.Path] = r.Permission
		}
	}
	for route, perm := range want {
		if got[route] != perm {
			t.Errorf("%s: permission %q, want %q", route, got[route], perm)
		}
	}
	if len(got) != len(want) {
		t.Errorf("plugin routes %v, want exactly %v", got, want)
	}
	// Without credentials every plugin route is refused.
	g.Auth = testgw.NoAuth
	if r := g.Do("GET", "/api/plugins", nil); r.Status != 401 && r.Status != 403 {
		t.Fatalf("unauthenticated list: %d", r.Status)
	}
}
