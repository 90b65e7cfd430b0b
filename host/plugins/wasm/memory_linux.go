package wasm

import (
	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// mappedMemory backs one guest's linear memory with its own anonymous
// mapping, reserved at the memory limit and never moved.
//
// Why not the Go heap (wazero's default): a Go guest's linear memory is
// several MiB, and in the host heap it counts toward the collector's goal,
// so the host's heap target, and with it the resident set, grows by twice
// the guests' memory; each memory.grow also appends, copying the old
// memory and leaving it as garbage. In a mapping the guest costs exactly
// the pages it touched, growing is free (the reservation is MAP_NORESERVE,
// so untouched pages cost neither memory nor commit charge), and closing
// the instance returns its pages to the system at once.
type mappedMemory struct{ mapping []byte }

// newLinearMemory maps a guest's memory; wazero passes the capacity it
// would preallocate and the memory's limit. Without a usable limit, or if
// the mapping fails, the memory falls back to the Go heap.
func newLinearMemory(capacity, limit uint64) experimental.LinearMemory {
	if limit == 0 || limit > 4<<30 {
		return &heapMemory{buf: make([]byte, 0, capacity)}
	}
	b, err := unix.Mmap(-1, 0, int(limit), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return &heapMemory{buf: make([]byte, 0, capacity)}
	}
	return &mappedMemory{mapping: b}
}

// Reallocate returns the first size bytes of the mapping; wasm memory only
// grows, and pages past the old length are still zero, as the spec wants.
func (m *mappedMemory) Reallocate(size uint64) []byte {
	if m.mapping == nil || size > uint64(len(m.mapping)) {
		return nil
	}
	return m.mapping[:size:size]
}

// Free unmaps the memory. wazero calls it once, after the instance's last
// call returned (a call cancelled by its context closes the instance on
// the calling goroutine), and the host never keeps a view of guest memory
// past a call: guestBytes copies.
func (m *mappedMemory) Free() {
	if m.mapping != nil {
		_ = unix.Munmap(m.mapping)
		m.mapping = nil
	}
}
