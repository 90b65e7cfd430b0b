//go:build wasip1

// Command adapter is a minimal provider adapter for the registry tests: it
// declares kind provider and turns every unified request into a fixed
// upstream request spec naming its configured tag, so a test can tell
// which module answered.
package main

import (
	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

type adapter struct{ tag string }

func (a *adapter) Manifest() pluginsdk.Manifest {
	return pluginsdk.Manifest{Name: "adapter-test", Version: "0.1.0", Kind: pluginsdk.KindProvider, Wire: "test"}
}

func (a *adapter) Configure(cfg []byte) error {
	a.tag = "default"
	if tag, ok := jsonx.StringField(cfg, "tag"); ok {
		a.tag = string(tag)
	}
	return nil
}

func (a *adapter) AdaptRequest(req []byte) (pluginsdk.Output, error) {
	return pluginsdk.Replace([]byte(`{"method":"POST","path":"/` + a.tag + `"}`)), nil
}

func init() { pluginsdk.Register(&adapter{}) }

func main() {}
