//go:build !linux

package wasm

import "github.com/tetratelabs/wazero/experimental"

// newLinearMemory keeps guest memories in the Go heap where the mapped
// memory of memory_linux.go is not built.
func newLinearMemory(capacity, _ uint64) experimental.LinearMemory {
	return &heapMemory{buf: make([]byte, 0, capacity)}
}
