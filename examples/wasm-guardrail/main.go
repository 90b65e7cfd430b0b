// Command wasm-guardrail is an example third-party guardrail built only
// from pluginsdk: it rejects requests whose text contains a blocklisted
// keyword (ASCII case-insensitive) and can do the same to responses.
//
// Config: {"keywords":["secret project","internal only"],"check_responses":true}
package main

import (
	"encoding/json"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// Blocklist is the guardrail.
type Blocklist struct {
	keywords       [][]byte // lower-cased
	checkResponses bool
}

// Manifest describes the plugin; hooks are filled in by pluginsdk.
func (b *Blocklist) Manifest() pluginsdk.Manifest {
	return pluginsdk.Manifest{
		Name: "keyword-blocklist", Version: "0.1.0", Kind: pluginsdk.KindGuardrail,
		ConfigSchema: pluginsdk.RawJSON(`{"type":"object","properties":{"keywords":{"type":"array","items":{"type":"string"}},"check_responses":{"type":"boolean"}}}`),
	}
}

// Configure reads the keyword list.
func (b *Blocklist) Configure(raw []byte) error {
	var c struct {
		Keywords       []string `json:"keywords"`
		CheckResponses bool     `json:"check_responses"`
	}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &c); err != nil {
			return pluginsdk.Reject(400, "keyword-blocklist config: %v", err)
		}
	}
	b.keywords = b.keywords[:0]
	for _, k := range c.Keywords {
		if k != "" {
			b.keywords = append(b.keywords, lower([]byte(k)))
		}
	}
	b.checkResponses = c.CheckResponses
	return nil
}

// PreRequest rejects a request mentioning a keyword.
func (b *Blocklist) PreRequest(req []byte) (pluginsdk.Output, error) {
	if kw := b.find(req); kw != "" {
		return pluginsdk.Output{}, pluginsdk.Reject(403, "request mentions blocked keyword %q", kw)
	}
	return pluginsdk.Pass(), nil
}

// PostResponse replaces a response mentioning a keyword with an error.
func (b *Blocklist) PostResponse(resp []byte) (pluginsdk.Output, error) {
	if !b.checkResponses {
		return pluginsdk.Pass(), nil
	}
	if kw := b.find(resp); kw != "" {
		return pluginsdk.Output{}, pluginsdk.Reject(502, "response mentions blocked keyword %q", kw)
	}
	return pluginsdk.Pass(), nil
}

// find returns the first keyword present in any string value of doc.
func (b *Blocklist) find(doc []byte) string {
	found := ""
	jsonx.WalkStrings(doc, func(s, e int) {
		if found != "" {
			return
		}
		for _, kw := range b.keywords {
			if containsFold(doc[s:e], kw) {
				found = string(kw)
				return
			}
		}
	})
	return found
}

func lower(b []byte) []byte {
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return b
}

// containsFold is an allocation-free ASCII case-insensitive search.
func containsFold(s, lowerSub []byte) bool {
	n := len(lowerSub)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if c >= 'A' && c <= 'Z' {
				c += 32
			}
			if c != lowerSub[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

// Register in init: a wasm module's main never runs.
func init() { pluginsdk.Register(&Blocklist{}) }

func main() {}
