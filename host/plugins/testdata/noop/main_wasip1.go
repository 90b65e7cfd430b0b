//go:build wasip1

package main

import "github.com/wasmgate/gateway/pluginsdk"

func init() { pluginsdk.Register(noop{}) }

func main() {}
