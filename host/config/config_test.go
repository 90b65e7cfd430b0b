package config_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/config"
)

func write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaults(t *testing.T) {
	cfg, err := config.Load(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr() != "127.0.0.1:8080" || cfg.DataDir != "./data" || cfg.AuthEnabled() {
		t.Fatalf("defaults: %s %s %v", cfg.Addr(), cfg.DataDir, cfg.AuthEnabled())
	}
	if cfg.Server.ShutdownTimeout.D() != 30*time.Second {
		t.Fatalf("shutdown timeout %v", cfg.Server.ShutdownTimeout.D())
	}
}

func TestPrecedence(t *testing.T) {
	file := write(t, "gw.yaml", "host: 0.0.0.0\nport: 9000\ndata_dir: /tmp/from-file\nlog_level: debug\nserver:\n  shutdown_timeout: 5\n")
	// file over defaults
	cfg, err := config.Load([]string{"--config", file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Port != 9000 || cfg.Host != "0.0.0.0" || cfg.LogLevel != "debug" || cfg.Server.ShutdownTimeout.D() != 5*time.Second {
		t.Fatalf("file: %+v", cfg)
	}
	// env over file, GATEWAY_CONFIG names the file
	cfg, err = config.Load(nil, []string{"GATEWAY_CONFIG=" + file, "GATEWAY_PORT=9100", "GATEWAY_DATA_DIR=/tmp/from-env", "GATEWAY_SERVER__SHUTDOWN_TIMEOUT=7s"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Port != 9100 || cfg.DataDir != "/tmp/from-env" || cfg.Host != "0.0.0.0" || cfg.Server.ShutdownTimeout.D() != 7*time.Second {
		t.Fatalf("env: %+v", cfg)
	}
	// flags over env
	cfg, err = config.Load([]string{"--port", "9200", "--data-dir", "/tmp/from-flag", "--host", "127.0.0.2"},
		[]string{"GATEWAY_CONFIG=" + file, "GATEWAY_PORT=9100", "GATEWAY_HOST=10.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Port != 9200 || cfg.DataDir != "/tmp/from-flag" || cfg.Host != "127.0.0.2" {
		t.Fatalf("flags: %+v", cfg)
	}
}

func TestJSONFileAndEntities(t *testing.T) {
	file := write(t, "gw.json", `{"port": 8181, "auth_config": {"admin_username": "a", "admin_password": "b"},
	  "providers": {"openai": {"keys": [{"name": "k", "value": "env.OPENAI_API_KEY", "aliases": {"gpt-4.1": "deploy-4.1"}}]}},
	  "webhooks": [{"name": "w", "url": "https://example.com/h", "events": ["async_job.completed"]}]}`)
	cfg, err := config.Load([]string{"--config", file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.AuthEnabled() {
		t.Fatal("auth should be enabled with an admin account")
	}
	var prov map[string]struct {
		Keys []struct {
			Aliases map[string]string `json:"aliases"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(cfg.Entities["providers"], &prov); err != nil {
		t.Fatal(err)
	}
	// Dotted map keys must survive (koanf's delimiter is ".").
	if prov["openai"].Keys[0].Aliases["gpt-4.1"] != "deploy-4.1" {
		t.Fatalf("providers section: %s", cfg.Entities["providers"])
	}
	if !strings.Contains(string(cfg.Entities["webhooks"]), `"async_job.completed"`) {
		t.Fatalf("webhooks section: %s", cfg.Entities["webhooks"])
	}
}

func TestInvalidConfigNamesTheKey(t *testing.T) {
	cases := []struct {
		args []string
		env  []string
		file string
		want string
	}{
		{env: []string{"GATEWAY_PORT=70000"}, want: "port: must be between 1 and 65535"},
		{env: []string{"GATEWAY_PORT=eighty"}, want: "port"},
		{args: []string{"--port", "x"}, want: "port"},
		{env: []string{"GATEWAY_LOG_LEVEL=loud"}, want: "log_level"},
		{file: "porte: 1\n", want: `unknown key "porte"`},
		{file: "server:\n  shutdown_timeout: soon\n", want: "shutdown_timeout"},
		{file: "auth_config:\n  admin_username: a\n", want: "auth_config: admin_username and admin_password must be set together"},
		{file: "vault:\n  address: vault.local\n", want: "vault.address"},
		{file: "port: [1\n", want: "config file"},
		{file: "server:\n  max_body_bytes: 10\n", want: "server.max_body_bytes"},
		{env: []string{"GATEWAY_LOGS__RETENTION_DAYS=-1"}, want: "logs.retention_days"},
		{env: []string{"GATEWAY_LOGS__QUEUE_SIZE=0"}, want: "logs.queue_size"},
		{env: []string{"GATEWAY_LOGS__FLUSH_INTERVAL=0s"}, want: "logs.flush_interval"},
		{file: "logs:\n  max_scan_records: 10\n", want: "logs.max_scan_records"},
		{env: []string{"GATEWAY_MEMORY_LIMIT_MB=8"}, want: "memory_limit_mb: must be 0 (no limit) or at least 32"},
		{file: "logs:\n  capture_contents: true\n", want: `unknown key "logs.capture_contents"`},
	}
	for _, c := range cases {
		args := c.args
		if c.file != "" {
			args = append(args, "--config", write(t, "c.yaml", c.file))
		}
		_, err := config.Load(args, c.env)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("args %v env %v file %q: error %v, want it to mention %q", c.args, c.env, c.file, err, c.want)
		}
	}
	if _, err := config.Load([]string{"--config", "/nonexistent/gw.yaml"}, nil); err == nil {
		t.Error("missing config file accepted")
	}
	if _, err := config.Load([]string{"--config", write(t, "c.toml", "")}, nil); err == nil || !strings.Contains(err.Error(), "unsupported extension") {
		t.Errorf("toml: %v", err)
	}
}

func TestPluginsDir(t *testing.T) {
	cfg, err := config.Load(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The test binary has no plugins dir next to it: the checkout fallback.
	if cfg.PluginsDir != filepath.Join(".", "bin", "plugins") {
		t.Fatalf("default plugins_dir %q", cfg.PluginsDir)
	}
	file := write(t, "not-a-dir", "x")
	if _, err := config.Load(nil, []string{"GATEWAY_PLUGINS_DIR=" + file}); err == nil || !strings.Contains(err.Error(), "plugins_dir") {
		t.Fatalf("a file as plugins_dir: %v", err)
	}
	dir := t.TempDir()
	if cfg, err := config.Load([]string{}, []string{"GATEWAY_PLUGINS_DIR=" + dir}); err != nil || cfg.PluginsDir != dir {
		t.Fatalf("plugins_dir from env: %v %v", cfg, err)
	}
}
