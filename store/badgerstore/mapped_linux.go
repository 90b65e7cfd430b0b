//go:build linux

package badgerstore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// releaseMapped asks the kernel to reclaim the pages of dir's value-log and
// table files that are mapped into this process. Badger writes and reads
// those files through shared mappings, so every page of every record ever
// written stays resident (and counted in the process's RSS) until memory
// pressure evicts it. MADV_PAGEOUT unmaps them: clean pages leave the page
// cache, dirty ones stay there for the kernel's flusher to write, and the
// next access faults the page back in from the cache or the file.
//
// MADV_PAGEOUT never discards data (unlike MADV_DONTNEED), which matters
// because the map listing is read before the advice is given: a range that
// Badger unmapped in between and the runtime reused for anonymous memory is
// only asked to page out, not zeroed. It returns the bytes of mapping
// advised.
func releaseMapped(dir string) (int64, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("badger: release mapped pages: %w", err)
	}
	defer f.Close()
	prefix := []byte(dir + "/")
	var total int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		slash := bytes.IndexByte(line, '/')
		if slash < 0 {
			continue
		}
		path := line[slash:]
		if !bytes.HasPrefix(path, prefix) || !(bytes.HasSuffix(path, []byte(".vlog")) || bytes.HasSuffix(path, []byte(".sst"))) {
			continue
		}
		start, end, ok := mapRange(line)
		if !ok {
			continue
		}
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_PAGEOUT); e != 0 {
			if errors.Is(e, unix.EINVAL) || errors.Is(e, unix.ENOSYS) {
				return total, fmt.Errorf("badger: release mapped pages: kernel without MADV_PAGEOUT (Linux 5.4+): %w", e)
			}
			// EPERM/ENOMEM for one range (e.g. just unmapped) do not stop
			// the rest.
			continue
		}
		total += int64(end - start)
	}
	if err := sc.Err(); err != nil {
		return total, fmt.Errorf("badger: release mapped pages: read maps: %w", err)
	}
	return total, nil
}

// mapRange parses the "start-end" hex range that begins a maps line.
func mapRange(line []byte) (start, end uintptr, ok bool) {
	sp := bytes.IndexByte(line, ' ')
	dash := bytes.IndexByte(line, '-')
	if sp < 0 || dash < 0 || dash > sp {
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(string(line[:dash]), 16, 64)
	e, err2 := strconv.ParseUint(string(line[dash+1:sp]), 16, 64)
	if err1 != nil || err2 != nil || e <= s {
		return 0, 0, false
	}
	return uintptr(s), uintptr(e), true
}
