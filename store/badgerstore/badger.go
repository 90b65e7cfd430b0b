// Package badgerstore implements store.Store on an embedded Badger v4
// database. It is the gateway's default backend: nothing to install, one
// directory on disk.
package badgerstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/wasmgate/gateway/store"
)

// Options tunes the Badger database.
type Options struct {
	// Dir is the data directory; it is created (0700) when missing.
	Dir string
	// SyncWrites makes each commit fsync before it returns. The config store
	// keeps it on so acknowledged writes survive power loss too; a process
	// kill alone never loses a committed write either way.
	SyncWrites bool
	// InMemory runs without files (tests and benchmarks only).
	InMemory bool
	// Logger receives Badger's warnings and errors.
	Logger *slog.Logger
	// MemTableSize and NumMemtables bound write buffering (defaults 16 MiB
	// and 5). A write-heavy store such as the request logs sets them lower:
	// table builders size their buffers from the memtable, so peak memory
	// under sustained writes scales with it.
	MemTableSize int64
	NumMemtables int
	// BaseTableSize bounds SST tables; compaction buffers scale with it.
	BaseTableSize int64
	// TableSizeMultiplier grows tables level by level (Badger's default 2).
	// 1 keeps every level's tables at BaseTableSize, so the table builders
	// of a compaction deep in the tree (whose buffers Badger pools and
	// keeps) stay as small as the first level's.
	TableSizeMultiplier int
	// ValueThreshold, when positive, sends values of at least this many
	// bytes to the value log, so the LSM tree holds only keys and pointers.
	// A write-heavy, read-rarely store (the request logs) sets it low:
	// compaction then rewrites small key entries instead of every record
	// again and again, which was the largest CPU cost of logging under load.
	ValueThreshold int64
	// Compress enables Snappy block compression. It is off by default: the
	// gateway seals values with AES-GCM when a key is set, and ciphertext
	// does not compress, while the compressor's buffers were the largest
	// memory cost of a write-heavy store.
	Compress bool
	// ReleaseMappedEvery, when positive, periodically asks the kernel to
	// reclaim the pages of the store's value-log and table files mapped
	// into the process (Linux only; see releaseMapped). Badger reads and
	// writes those files through mmap, so without it the resident memory
	// of a write-heavy store grows with every byte written until the
	// machine runs short of memory. The request logs set it.
	ReleaseMappedEvery time.Duration
	// NoConflictDetection turns off Badger's tracking of the keys each
	// transaction read and wrote, which exists to fail a commit that raced
	// another on the same keys. A store with one writer that never reads
	// before it writes (the request logs) has nothing to detect, and the
	// tracking costs a map per transaction and a list of recent commits.
	NoConflictDetection bool
}

// DB is a store.Store backed by Badger.
type DB struct {
	db  *badger.DB
	log *slog.Logger
	// mappedDir is the resolved data dir when ReleaseMappedEvery is set.
	mappedDir string
	stop      chan struct{}
	wg        sync.WaitGroup
}

// Open opens (or creates) the database described by opts.
func Open(opts Options) (*DB, error) {
	bo := badger.DefaultOptions(opts.Dir).
		WithSyncWrites(opts.SyncWrites).
		WithInMemory(opts.InMemory).
		WithLogger(badgerLogger{log: opts.Logger}).
		// Small tables and memtables: the gateway's records are small and a
		// 2-core machine should not reserve hundreds of MiB for a config store.
		WithMemTableSize(16 << 20).
		WithValueLogFileSize(64 << 20).
		WithNumCompactors(2).
		// Uncompressed, unencrypted tables are read in place from their
		// mappings, indexes included, so Badger's block and index caches
		// would only cost their fixed ~3 MiB each (counters, shards,
		// metrics) of live heap.
		WithBlockCacheSize(0).
		WithIndexCacheSize(0).
		WithCompression(options.None)
	if opts.Compress {
		// Compressed blocks are decompressed into the block cache.
		bo = bo.WithCompression(options.Snappy).WithBlockCacheSize(16 << 20)
	}
	if opts.BaseTableSize > 0 {
		bo = bo.WithBaseTableSize(opts.BaseTableSize)
	}
	if opts.TableSizeMultiplier > 0 {
		bo.TableSizeMultiplier = opts.TableSizeMultiplier
	}
	if opts.MemTableSize > 0 {
		// Badger refuses a value threshold above its batch limit (15% of
		// the memtable); larger values go to the value log instead.
		bo = bo.WithMemTableSize(opts.MemTableSize).
			WithValueThreshold(min(bo.ValueThreshold, opts.MemTableSize*15/100/2))
	}
	if opts.ValueThreshold > 0 {
		bo = bo.WithValueThreshold(min(opts.ValueThreshold, bo.ValueThreshold))
	}
	if opts.NumMemtables > 0 {
		bo = bo.WithNumMemtables(opts.NumMemtables)
	}
	if opts.NoConflictDetection {
		bo = bo.WithDetectConflicts(false)
	}
	if opts.InMemory {
		bo.Dir, bo.ValueDir = "", ""
	} else {
		if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
			return nil, fmt.Errorf("badger: create data dir %s: %w", opts.Dir, err)
		}
	}
	db, err := badger.Open(bo)
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, fmt.Errorf("badger: data dir %s is in use by another gateway process: %w", opts.Dir, err)
		}
		return nil, fmt.Errorf("badger: open %s: %w", opts.Dir, err)
	}
	d := &DB{db: db, log: opts.Logger, stop: make(chan struct{})}
	if d.log == nil {
		d.log = slog.Default()
	}
	d.every(5*time.Minute, d.collectValueLog)
	if opts.ReleaseMappedEvery > 0 && !opts.InMemory {
		dir, err := filepath.Abs(opts.Dir)
		if err == nil {
			// /proc/self/maps names files by their resolved path.
			dir, err = filepath.EvalSymlinks(dir)
		}
		if err != nil {
			_ = d.Close()
			return nil, fmt.Errorf("badger: resolve data dir %s: %w", opts.Dir, err)
		}
		d.mappedDir = dir
		d.every(opts.ReleaseMappedEvery, func() bool { return d.releaseMappedPages(dir) })
	}
	return d, nil
}

// every runs fn every interval on its own goroutine until Close, or until
// fn returns false.
func (d *DB) every(interval time.Duration, fn func() bool) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-d.stop:
				return
			case <-t.C:
				if !fn() {
					return
				}
			}
		}
	}()
}

// releaseMappedPages releases the mapped pages of dir's files; it stops
// the periodic release, with one warning, where the kernel cannot.
func (d *DB) releaseMappedPages(dir string) bool {
	if _, err := releaseMapped(dir); err != nil {
		d.log.Warn("store files stay mapped until the kernel evicts them", "dir", dir, "err", err)
		return false
	}
	return true
}

// collectValueLog reclaims value-log space; Badger never does it on its own.
func (d *DB) collectValueLog() bool {
	for d.db.RunValueLogGC(0.5) == nil {
	}
	return true
}

func encodeKey(ns, key string) []byte {
	b := make([]byte, 0, len(ns)+1+len(key))
	b = append(b, ns...)
	b = append(b, 0)
	return append(b, key...)
}

// View implements store.Store.
func (d *DB) View(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.db.View(func(txn *badger.Txn) error { return fn(tx{txn: txn, mappedDir: d.mappedDir}) })
}

// Update implements store.Store. Conflicting transactions are retried a few
// times because callers express read-modify-write logic in fn.
func (d *DB) Update(ctx context.Context, fn func(store.Tx) error) error {
	var err error
	for attempt := 0; attempt < 8; attempt++ {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		err = d.db.Update(func(txn *badger.Txn) error { return fn(tx{txn: txn, mappedDir: d.mappedDir}) })
		if !errors.Is(err, badger.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("%w: %v", store.ErrConflict, err)
}

// Ping implements store.Store by reading a key, which fails once the DB is
// closed or its files are gone.
func (d *DB) Ping(ctx context.Context) error {
	if d.db.IsClosed() {
		return errors.New("badger: database is closed")
	}
	return d.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get([]byte("_meta\x00ping"))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		return err
	})
}

// Close implements store.Store.
func (d *DB) Close() error {
	select {
	case <-d.stop:
		return nil
	default:
	}
	close(d.stop)
	d.wg.Wait()
	return d.db.Close()
}

// Walk visits every record of every namespace; the sealing layer uses it to
// migrate existing data when encryption is turned on.
func (d *DB) Walk(fn func(ns, key string, value []byte) error) error {
	return d.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()
			i := bytes.IndexByte(k, 0)
			if i < 0 {
				continue
			}
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			if err := fn(string(k[:i]), string(k[i+1:]), v); err != nil {
				return err
			}
		}
		return nil
	})
}

type tx struct {
	txn *badger.Txn
	// mappedDir is set when the store releases its mapped pages; long
	// scans then release them as they go (see Scan).
	mappedDir string
}

// scanReleaseEvery is how many records a scan reads between two releases
// of the mapped pages it touched: a scan over a large log store would
// otherwise fault the whole value log into the process at once.
const scanReleaseEvery = 4096

func (t tx) Get(ns, key string) ([]byte, error) {
	item, err := t.txn.Get(encodeKey(ns, key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("badger: get %s/%s: %w", ns, key, err)
	}
	return item.ValueCopy(nil)
}

func (t tx) Put(ns, key string, value []byte) error {
	if err := t.txn.Set(encodeKey(ns, key), value); err != nil {
		return fmt.Errorf("badger: put %s/%s: %w", ns, key, err)
	}
	return nil
}

func (t tx) Delete(ns, key string) error {
	if err := t.txn.Delete(encodeKey(ns, key)); err != nil {
		return fmt.Errorf("badger: delete %s/%s: %w", ns, key, err)
	}
	return nil
}

func (t tx) Scan(ns string, opts store.ScanOptions, fn func(key string, value []byte) error) error {
	nsPrefix := encodeKey(ns, "")
	prefix := encodeKey(ns, opts.Prefix)
	io := badger.DefaultIteratorOptions
	io.Prefix = prefix
	io.Reverse = opts.Reverse
	it := t.txn.NewIterator(io)
	defer it.Close()

	var seek []byte
	switch {
	case opts.After != "":
		seek = encodeKey(ns, opts.After)
	case opts.Reverse:
		// Reverse iteration seeks to the last key <= seek, so go past every
		// key with this prefix.
		seek = append(append([]byte{}, prefix...), 0xff, 0xff, 0xff, 0xff)
	default:
		seek = prefix
	}
	n := 0
	for it.Seek(seek); it.ValidForPrefix(prefix); it.Next() {
		item := it.Item()
		k := item.Key()
		key := string(k[len(nsPrefix):])
		if opts.After != "" && key == opts.After {
			continue
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return fmt.Errorf("badger: read %s/%s: %w", ns, key, err)
		}
		if n++; t.mappedDir != "" && n%scanReleaseEvery == 0 {
			// Best effort: the periodic release reports failures.
			_, _ = releaseMapped(t.mappedDir)
		}
		if err := fn(key, v); err != nil {
			if errors.Is(err, store.ErrStopScan) {
				return nil
			}
			return err
		}
	}
	return nil
}

type badgerLogger struct{ log *slog.Logger }

func (l badgerLogger) logger() *slog.Logger {
	if l.log == nil {
		return slog.Default()
	}
	return l.log
}

func (l badgerLogger) Errorf(f string, a ...any) {
	l.logger().Error(strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
}
func (l badgerLogger) Warningf(f string, a ...any) {
	l.logger().Warn(strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
}

// Infof and Debugf are dropped: Badger is chatty at those levels.
func (badgerLogger) Infof(string, ...any)  {}
func (badgerLogger) Debugf(string, ...any) {}
