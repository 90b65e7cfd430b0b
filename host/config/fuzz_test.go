package config_test

import (
	"encoding/json"
	"testing"

	kjson "github.com/knadh/koanf/parsers/json"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/v2"

	"github.com/wasmgate/gateway/host/config"
)

// FuzzLoadBytes feeds arbitrary documents to the config loader: it may
// reject them, but must never panic or hang.
func FuzzLoadBytes(f *testing.F) {
	f.Add([]byte(`{"port": 8080, "providers": {"openai": {"keys": []}}}`), true)
	f.Add([]byte("host: 0.0.0.0\nport: 1\nserver:\n  read_timeout: 5s\n"), false)
	f.Add([]byte("providers:\n  a.b: {c: [1, {d: e}]}\n"), false)
	f.Add([]byte(`{"auth_config": {"enabled": "yes"}}`), true)
	f.Fuzz(func(t *testing.T, doc []byte, isJSON bool) {
		var p koanf.Parser = yaml.Parser()
		if isJSON {
			p = kjson.Parser()
		}
		k := koanf.New(".")
		ents := map[string]json.RawMessage{}
		if err := config.LoadBytes(k, doc, p, ents, "fuzz"); err != nil {
			return
		}
		for _, raw := range ents {
			if !json.Valid(raw) {
				t.Fatalf("entity section is not valid JSON: %s", raw)
			}
		}
	})
}
