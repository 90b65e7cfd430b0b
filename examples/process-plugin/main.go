// Command process-plugin is an example plugin run as a go-plugin
// subprocess (runtime "process"). The plugin code is an ordinary
// pluginsdk.Plugin, exactly what a wasm module would implement; only main
// differs: grpcplugin.Serve instead of pluginsdk.Register.
//
// It stamps each request with a header naming the deployment and counts
// stream batches in the host-kept stream state.
//
// Config: {"stamp":"eu-west-1"}
package main

import (
	"encoding/json"
	"strconv"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/grpcplugin"
)

// Stamp is the plugin.
type Stamp struct {
	stamp string
}

// Manifest describes the plugin.
func (s *Stamp) Manifest() pluginsdk.Manifest {
	return pluginsdk.Manifest{Name: "stamp", Version: "0.1.0", Kind: pluginsdk.KindTransform}
}

// Configure reads the stamp value.
func (s *Stamp) Configure(raw []byte) error {
	var c struct {
		Stamp string `json:"stamp"`
	}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &c); err != nil {
			return pluginsdk.Reject(400, "stamp config: %v", err)
		}
	}
	s.stamp = c.Stamp
	if s.stamp == "" {
		s.stamp = "default"
	}
	return nil
}

// PreRequest adds a header for the upstream request; the body is untouched.
func (s *Stamp) PreRequest([]byte) (pluginsdk.Output, error) {
	return pluginsdk.Output{Status: pluginsdk.StatusPassThrough, Headers: map[string]string{"x-stamp": s.stamp}}, nil
}

// StreamBatch passes batches through and keeps a batch count as state.
func (s *Stamp) StreamBatch(in pluginsdk.StreamInput) (pluginsdk.Output, error) {
	n, _ := strconv.Atoi(string(in.State))
	return pluginsdk.Output{Status: pluginsdk.StatusPassThrough, State: strconv.AppendInt(nil, int64(n+1), 10)}, nil
}

func main() { grpcplugin.Serve(&Stamp{}) }
