package wasm

import "github.com/tetratelabs/wazero/experimental"

// heapMemory is a linear memory in the Go heap, as wazero keeps them by
// default: the fallback where no mapping can be made.
type heapMemory struct{ buf []byte }

func (m *heapMemory) Reallocate(size uint64) []byte {
	if size > uint64(cap(m.buf)) {
		// At least double, as append would, so a guest growing a page at
		// a time does not copy its memory on every grow.
		grown := make([]byte, size, max(size, 2*uint64(cap(m.buf))))
		copy(grown, m.buf)
		m.buf = grown
	}
	m.buf = m.buf[:size]
	return m.buf
}

func (m *heapMemory) Free() { m.buf = nil }

var _ experimental.LinearMemory = (*heapMemory)(nil)
