// Command maxtokens is a first-party transform: it clamps max_tokens and
// max_completion_tokens to a configured ceiling (optionally injecting one
// when the request sets none) and reports what it did in a header, so
// clients and logs can tell a clamped answer from a natural stop.
//
// Config: {"ceiling":4096, "inject_if_missing":false,
// "inject_field":"max_tokens", "header":"x-wasmgate-max-tokens"}.
package main

import (
	"encoding/json"
	"strconv"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// Clamp is the plugin.
type Clamp struct {
	ceiling     int64
	inject      bool
	injectField string
	header      string
}

type config struct {
	Ceiling         int64  `json:"ceiling"`
	InjectIfMissing bool   `json:"inject_if_missing"`
	InjectField     string `json:"inject_field"`
	Header          string `json:"header"`
}

const schema = `{"type":"object","required":["ceiling"],"properties":{
"ceiling":{"type":"integer","minimum":1},
"inject_if_missing":{"type":"boolean","default":false},
"inject_field":{"enum":["max_tokens","max_completion_tokens"],"default":"max_tokens"},
"header":{"type":"string","default":"x-wasmgate-max-tokens"}}}`

var fields = [...]string{"max_tokens", "max_completion_tokens"}

// New returns an unconfigured Clamp; Configure must set a ceiling.
func New() *Clamp { return &Clamp{} }

// Manifest describes the plugin.
func (c *Clamp) Manifest() pluginsdk.Manifest {
	return pluginsdk.Manifest{Name: "maxtokens", Version: "1.0.0", Kind: pluginsdk.KindTransform, ConfigSchema: pluginsdk.RawJSON(schema)}
}

// Configure reads the ceiling.
func (c *Clamp) Configure(raw []byte) error {
	cfg := config{InjectField: "max_tokens", Header: "x-wasmgate-max-tokens"}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return pluginsdk.Reject(400, "maxtokens config: %v", err)
		}
	}
	if cfg.Ceiling < 1 {
		return pluginsdk.Reject(400, "maxtokens config: ceiling must be a positive integer")
	}
	if cfg.InjectField != "max_tokens" && cfg.InjectField != "max_completion_tokens" {
		return pluginsdk.Reject(400, "maxtokens config: inject_field must be max_tokens or max_completion_tokens")
	}
	c.ceiling, c.inject, c.injectField, c.header = cfg.Ceiling, cfg.InjectIfMissing, cfg.InjectField, cfg.Header
	return nil
}

// PreRequest clamps the limits by rewriting only the number bytes.
func (c *Clamp) PreRequest(req []byte) (pluginsdk.Output, error) {
	body := req
	changed, present := false, false
	var note []byte
	ceiling := strconv.AppendInt(nil, c.ceiling, 10)
	for _, f := range fields {
		n, ok := jsonx.IntField(body, f)
		if !ok {
			continue
		}
		present = true
		if n <= c.ceiling {
			continue
		}
		nb, ok := jsonx.SetField(body, f, ceiling)
		if !ok {
			return pluginsdk.Output{}, pluginsdk.Reject(400, "maxtokens: request is not a JSON object")
		}
		body, changed = nb, true
		note = append(note, f...)
		note = append(note, '=')
		note = strconv.AppendInt(note, n, 10)
		note = append(note, "->"...)
		note = append(note, ceiling...)
		note = append(note, ';')
	}
	if !present && c.inject {
		nb, ok := jsonx.SetField(body, c.injectField, ceiling)
		if !ok {
			return pluginsdk.Output{}, pluginsdk.Reject(400, "maxtokens: request is not a JSON object")
		}
		body, changed = nb, true
		note = append(note, c.injectField...)
		note = append(note, "=unset->"...)
		note = append(note, ceiling...)
		note = append(note, ';')
	}
	if !changed {
		return pluginsdk.Pass(), nil
	}
	out := pluginsdk.Replace(body)
	if c.header != "" {
		out.Headers = map[string]string{c.header: string(note[:len(note)-1])}
	}
	return out, nil
}
