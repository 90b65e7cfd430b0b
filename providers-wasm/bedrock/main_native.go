//go:build !wasip1

package main

import "github.com/wasmgate/gateway/pluginsdk/grpcplugin"

// A native build is the same adapter as a go-plugin subprocess.
func main() { grpcplugin.Serve(New()) }
