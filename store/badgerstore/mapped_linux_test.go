//go:build linux

package badgerstore_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wasmgate/gateway/store"
	"github.com/wasmgate/gateway/store/badgerstore"
)

// rssFileMiB is this process's resident file-backed memory.
func rssFileMiB(t *testing.T) int {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "RssFile:" {
			kib, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			return kib / 1024
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

const (
	mappedValues    = 12 << 10 // values of 4 KiB: 48 MiB in the value log
	mappedValueSize = 4 << 10
)

func mappedValue(i int) []byte {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	v := make([]byte, mappedValueSize)
	for j := range v {
		v[j] = byte(r.Uint32())
	}
	return v
}

func fillMapped(t *testing.T, db *badgerstore.DB) {
	t.Helper()
	for start := 0; start < mappedValues; start += 64 {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			for i := start; i < start+64; i++ {
				if err := tx.Put("v", fmt.Sprintf("%08d", i), mappedValue(i)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func checkMapped(t *testing.T, db *badgerstore.DB) {
	t.Helper()
	n := 0
	err := db.View(context.Background(), func(tx store.Tx) error {
		return tx.Scan("v", store.ScanOptions{}, func(k string, v []byte) error {
			if k != fmt.Sprintf("%08d", n) || !bytes.Equal(v, mappedValue(n)) {
				return fmt.Errorf("record %d (%s) differs after its pages were released", n, k)
			}
			n++
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != mappedValues {
		t.Fatalf("read %d records back, wrote %d", n, mappedValues)
	}
}

// TestReleaseMappedBoundsResidentStoreFiles: without the option, the value
// log's pages stay in the process's RSS once written; with it, they leave
// within a few release intervals, and a full scan (which faults the whole
// value log back in) leaves them resident only briefly. No data is lost:
// everything reads back byte for byte, also after a reopen.
func TestReleaseMappedBoundsResidentStoreFiles(t *testing.T) {
	base := rssFileMiB(t)

	control, err := badgerstore.Open(badgerstore.Options{Dir: t.TempDir(), MemTableSize: 4 << 20, ValueThreshold: 128})
	if err != nil {
		t.Fatal(err)
	}
	fillMapped(t, control)
	grown := rssFileMiB(t) - base
	_ = control.Close()
	if grown < 32 {
		t.Skipf("writing 48 MiB through Badger's mappings grew RssFile by only %d MiB here; nothing to release", grown)
	}

	dir := t.TempDir()
	db, err := badgerstore.Open(badgerstore.Options{Dir: dir, MemTableSize: 4 << 20, ValueThreshold: 128,
		ReleaseMappedEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	base = rssFileMiB(t)
	fillMapped(t, db)
	settled := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for rssFileMiB(t)-base > 8 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: store files still hold %d MiB of RSS after 10 s (without releasing: %d MiB)", what, rssFileMiB(t)-base, grown)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	settled("after writing")
	checkMapped(t, db)
	settled("after a full scan")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = badgerstore.Open(badgerstore.Options{Dir: dir, MemTableSize: 4 << 20, ValueThreshold: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkMapped(t, db)
}
