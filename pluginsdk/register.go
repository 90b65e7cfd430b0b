package pluginsdk

import (
	"encoding/json"
	"errors"
	"strconv"
)

// RawJSON is a JSON value kept as bytes, so unknown or opaque parts of a
// document pass through without being decoded.
type RawJSON = json.RawMessage

// registered is the one implementation a wasm module exposes. A guest module
// is a single plugin, so a package-level slot is the natural home; the host
// never uses it.
var registered Plugin

// Register installs p as the module's plugin. Call it from init (a wasm
// module's main never runs: the host calls _initialize, then hooks). In a
// wasip1 build the ABI exports dispatch to p; elsewhere Register only
// records p so tests can reach it through Registered.
func Register(p Plugin) {
	if p == nil {
		panic("pluginsdk: Register(nil)")
	}
	registered = p
}

// Registered returns the plugin installed by Register, or nil.
func Registered() Plugin { return registered }

// EncodeManifest is the describe payload of p.
func EncodeManifest(p Plugin) ([]byte, error) {
	m := FullManifest(p)
	b, err := json.Marshal(m)
	if err != nil {
		return nil, errors.New("pluginsdk: encode manifest: " + err.Error())
	}
	return b, nil
}

// AppendHeaders encodes headers as the JSON object OutputHeaders carries.
// Reflection-free because it runs on every call that sets headers.
func AppendHeaders(dst []byte, h map[string]string) []byte {
	dst = append(dst, '{')
	first := true
	for k, v := range h {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = strconv.AppendQuote(dst, k)
		dst = append(dst, ':')
		dst = strconv.AppendQuote(dst, v)
	}
	return append(dst, '}')
}
