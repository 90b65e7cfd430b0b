package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/config"
)

func TestMCPGatewayDefaultsAndBounds(t *testing.T) {
	cfg, err := config.Load(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.MCPGateway
	if !m.ServerEnabled || m.DefaultMaxSteps != 5 || m.MaxSteps != 10 || m.ToolTimeout.D() != 60*time.Second || m.DisableLocalhostProtection {
		t.Fatalf("defaults: %+v", m)
	}
	for env, want := range map[string]string{
		"GATEWAY_MCP_GATEWAY__MAX_STEPS=26":        "mcp_gateway.max_steps: must be between 1 and 25",
		"GATEWAY_MCP_GATEWAY__DEFAULT_MAX_STEPS=0": "mcp_gateway.default_max_steps: must be between 1",
		"GATEWAY_MCP_GATEWAY__TOOL_TIMEOUT=10ms":   "mcp_gateway.tool_timeout: must be at least 1s",
	} {
		if _, err := config.Load(nil, []string{env}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", env, err, want)
		}
	}
	if _, err := config.Load(nil, []string{"GATEWAY_MCP_GATEWAY__MAX_STEPS=3"}); err == nil ||
		!strings.Contains(err.Error(), "mcp_gateway.default_max_steps") {
		t.Errorf("default above the limit accepted: %v", err)
	}
}
