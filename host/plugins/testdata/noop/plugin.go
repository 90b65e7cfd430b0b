// Command noop is the cheapest possible plugin: pre_request passes
// through. Benchmarks use it to measure the bare call path of a runtime.
package main

import "github.com/wasmgate/gateway/pluginsdk"

type noop struct{}

func (noop) Manifest() pluginsdk.Manifest {
	return pluginsdk.Manifest{Name: "noop", Version: "1.0.0", Kind: pluginsdk.KindTransform}
}
func (noop) Configure([]byte) error { return nil }
func (noop) PreRequest([]byte) (pluginsdk.Output, error) {
	return pluginsdk.Pass(), nil
}
