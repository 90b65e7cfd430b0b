package apierr_test

import (
	"encoding/json"
	"testing"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/secret"
)

type sample struct {
	Name    string            `json:"name"`
	Weight  float64           `json:"weight"`
	Enabled *bool             `json:"enabled"`
	Models  []string          `json:"models"`
	Aliases map[string]string `json:"aliases"`
	Value   secret.Value      `json:"value"`
	Nested  struct {
		URL string `json:"url"`
	} `json:"nested"`
}

// FuzzDecodeJSON checks the management body decoder never panics and that
// every rejection is a 400 envelope.
func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"name":"a","weight":1,"models":["x"],"value":"env.X","nested":{"url":"u"}}`))
	f.Add([]byte(`{"value":{"type":"vault","ref":"vault.a/b#c"}}`))
	f.Add([]byte(`{"weight":"heavy"}`))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte(`{"unknown":1}`))
	f.Add([]byte(`{"name":"a"} trailing`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var v sample
		e := apierr.DecodeJSON(body, &v)
		if e == nil {
			if _, err := json.Marshal(v); err != nil {
				t.Fatalf("decoded value does not re-encode: %v", err)
			}
			return
		}
		if e.StatusCode != 400 || e.Detail.Message == "" || e.Detail.Code == "" {
			t.Fatalf("bad rejection: %+v", e)
		}
	})
}
