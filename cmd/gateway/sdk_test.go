package main_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmgate/gateway/host/fakeupstream"
	"github.com/wasmgate/gateway/host/upstreamauth"
)

// fakeProviders serves every fake upstream family on one local server and
// returns a gateway config file wiring providers to it.
func fakeProviders(t *testing.T) string {
	t.Helper()
	path, _ := fakeProviderSet(t)
	return path
}

// fakeProviderSet is fakeProviders that also returns the fakes, whose
// knobs (FailNext, SetStreamError, ...) tests turn.
func fakeProviderSet(t *testing.T) (string, *fakeupstream.Set) {
	t.Helper()
	// Bedrock requests are checked against a real SigV4 verification with
	// the key configured below.
	set := fakeupstream.NewSet(fakeupstream.Options{AWS: &upstreamauth.AWSCredentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "bedrock-test-secret"}})
	srv := httptest.NewServer(set)
	t.Cleanup(func() { set.Close(); srv.Close() })
	cfg := fmt.Sprintf(`providers:
  openai:
    network_config: {base_url: "%[1]s/openai/v1", max_retries: 2, retry_backoff_initial_ms: 20, retry_backoff_max_ms: 100}
    keys: [{name: main, value: sk-openai}]
  anthropic:
    network_config: {base_url: "%[1]s/anthropic/v1", max_retries: 2, retry_backoff_initial_ms: 20, retry_backoff_max_ms: 100}
    keys: [{name: main, value: sk-anthropic}]
  gemini:
    network_config: {base_url: "%[1]s/gemini/v1beta"}
    keys: [{name: main, value: gemini-key}]
  cohere:
    network_config: {base_url: "%[1]s/cohere/v2"}
    keys: [{name: main, value: sk-cohere}]
  bedrock:
    network_config: {base_url: "%[1]s/bedrock"}
    keys: [{name: main, bedrock_key_config: {access_key: AKIDEXAMPLE, secret_key: bedrock-test-secret, region: us-east-1}}]
`, srv.URL)
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, set
}

// nodeScript runs one of the SDK scripts in testdata/sdk against the gateway.
func nodeScript(t *testing.T, script string, env ...string) map[string]any {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	dir, _ := filepath.Abs("testdata/sdk")
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		t.Fatalf("SDK clients not installed: run `npm ci --prefix cmd/gateway/testdata/sdk` (make test-deps does)")
	}
	cmd := exec.Command("node", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("node %s printed %s", script, out)
	}
	return m
}

func get(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

func TestOpenAINodeSDK(t *testing.T) {
	cfg := fakeProviders(t)
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)
	for _, model := range []string{"openai/gpt-4o-mini", "anthropic/claude-3-5-haiku"} {
		t.Run(model, func(t *testing.T) {
			env := []string{"BASE_URL=" + p.base + "/v1", "MODEL=" + model}
			if strings.HasPrefix(model, "openai/") {
				env = append(env, "EMBED_MODEL=openai/text-embedding-3-small")
			}
			out := nodeScript(t, "openai.mjs", env...)
			for _, path := range [][]string{{"chat", "content"}, {"chatStream", "text"}, {"responses", "text"}, {"responsesStream", "text"}} {
				if s, _ := get(out, path...).(string); !strings.Contains(s, "hello") {
					t.Errorf("%v = %v", path, get(out, path...))
				}
			}
			if get(out, "chatStream", "args") != `{"echo":"hello"}` {
				t.Errorf("streamed tool arguments: %v", get(out, "chatStream", "args"))
			}
			for _, path := range [][]string{{"chat", "usage", "total_tokens"}, {"chatStream", "usage", "total_tokens"}, {"responses", "usage", "total_tokens"}, {"responsesStream", "usage", "total_tokens"}} {
				if n, _ := get(out, path...).(float64); n <= 0 {
					t.Errorf("%v = %v", path, get(out, path...))
				}
			}
			if strings.HasPrefix(model, "openai/") {
				if n, _ := get(out, "embeddings", "dims").(float64); n <= 0 {
					t.Errorf("base64 embeddings decoded to %v dims", get(out, "embeddings", "dims"))
				}
			}
			models, _ := out["models"].([]any)
			if len(models) == 0 {
				t.Errorf("no models listed")
			}
		})
	}
}

// TestGoSDKs runs the official Go SDK tests (openai-go on /v1,
// anthropic-sdk-go on the /anthropic drop-in prefix) (their own module in
// testdata/gosdk, kept out of the main build for compile time) against the
// real binary.
func TestGoSDKs(t *testing.T) {
	cfg := fakeProviders(t)
	p := start(t, t.TempDir(), t.TempDir(), nil, "--config", cfg)
	for _, model := range []string{"openai/gpt-4o-mini", "anthropic/claude-3-5-haiku"} {
		t.Run(model, func(t *testing.T) {
			cmd := exec.Command("go", "test", "-count=1", "./...")
			cmd.Dir = "testdata/gosdk"
			cmd.Env = append(os.Environ(), "GATEWAY_URL="+p.base, "MODEL="+model)
			if strings.HasPrefix(model, "openai/") {
				cmd.Env = append(cmd.Env, "EMBED_MODEL=openai/text-embedding-3-small")
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go SDK tests: %v\n%s", err, out)
			}
		})
	}
}
