module example.com/wasm-guardrail

go 1.26.0

require github.com/wasmgate/gateway v0.0.0

require (
	github.com/tetratelabs/wazero v1.12.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/wasmgate/gateway => ../..
