// Package pluginsdk is what a wasmgate plugin author imports: the plugin
// interfaces, ABI v1 (see ABI.md in this directory), the unified
// OpenAI-shaped schema, and the guest glue that turns a Go type into a
// WebAssembly plugin module.
//
// A plugin is a type implementing Plugin plus one optional interface per
// hook (PreRequester, PostResponder, StreamBatcher, RequestAdapter, ...).
// The same type runs under either runtime:
//
//	// wasm module (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared)
//	func init() { pluginsdk.Register(&MyPlugin{}) }
//	func main() {}
//
//	// go-plugin subprocess (native build)
//	func main() { grpcplugin.Serve(&MyPlugin{}) }
//
// Hot paths should work on bytes with package jsonx rather than decode the
// schema types: in a wasm guest, reflection-based JSON costs several times
// what a byte scan does. Package plugintest runs a module under the real
// host runtime inside go test.
//
// The import graph stays small on purpose (standard library only; the
// go-plugin dependency lives in subpackage grpcplugin), so a plugin's
// module does not pull the gateway's server dependencies.
package pluginsdk
