module github.com/wasmgate/gateway

go 1.26
