//go:build !linux

package badgerstore

import "errors"

// releaseMapped is Linux-only (it reads /proc/self/maps and uses
// MADV_PAGEOUT); elsewhere mapped pages stay until the kernel evicts them.
func releaseMapped(string) (int64, error) {
	return 0, errors.New("badger: releasing mapped pages is supported on Linux only")
}
