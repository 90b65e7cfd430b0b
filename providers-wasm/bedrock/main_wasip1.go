//go:build wasip1

package main

import "github.com/wasmgate/gateway/pluginsdk"

func init() { pluginsdk.Register(New()) }

// main never runs in a reactor module; the host calls _initialize.
func main() {}
