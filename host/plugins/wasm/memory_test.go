//go:build linux

package wasm

import (
	"testing"
	"unsafe"
)

// TestLinearMemories: both backings keep a guest's bytes across growth,
// hand out zeroed new pages, and refuse to grow past the limit; the mapped
// one never moves (the address wazero's compiled code holds).
func TestLinearMemories(t *testing.T) {
	const page, limit = 64 << 10, 16 * (64 << 10)
	for name, mem := range map[string]interface {
		Reallocate(uint64) []byte
		Free()
	}{
		"heap":     &heapMemory{buf: make([]byte, 0, page)},
		"platform": newLinearMemory(page, limit),
	} {
		b := mem.Reallocate(page)
		if len(b) != page {
			t.Fatalf("%s: first length %d", name, len(b))
		}
		b[0], b[page-1] = 1, 2
		start := unsafe.SliceData(b)
		for size := uint64(2 * page); size <= limit; size += 3 * page {
			g := mem.Reallocate(size)
			if uint64(len(g)) != size || g[0] != 1 || g[page-1] != 2 || g[size-1] != 0 {
				t.Fatalf("%s: grown to %d: len %d, kept %d/%d, new byte %d", name, size, len(g), g[0], g[page-1], g[size-1])
			}
			if _, mapped := mem.(*mappedMemory); mapped && unsafe.SliceData(g) != start {
				t.Fatalf("%s: the mapping moved when growing to %d", name, size)
			}
		}
		if _, mapped := mem.(*mappedMemory); mapped {
			if g := mem.Reallocate(limit + page); g != nil {
				t.Fatalf("%s: grew past the limit to %d", name, len(g))
			}
		}
		mem.Free()
		mem.Free() // wazero calls it once; a second call must not unmap twice
	}
}
