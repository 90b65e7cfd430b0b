//go:build !wasip1

package main

import "github.com/wasmgate/gateway/pluginsdk/grpcplugin"

func main() { grpcplugin.Serve(noop{}) }
