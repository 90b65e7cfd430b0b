//go:build wasip1

// Command wrongabi exports a future ABI marker (v2) instead of v1. The host
// must reject it before any of its code runs: its init prints a line that a
// test checks never appears.
package main

import (
	"fmt"
	"os"
)

func init() { fmt.Fprintln(os.Stderr, "WRONGABI INIT RAN") }

//go:wasmexport wasmgate_abi_v2
func marker() {}

//go:wasmexport wasmgate_input
func input(size uint32) uint32 { return 0 }

//go:wasmexport wasmgate_call
func call(hook, size uint32) uint32 { return 0 }

func main() {}
