package logs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	segjson "github.com/segmentio/encoding/json"

	"github.com/wasmgate/gateway/store"
	"github.com/wasmgate/gateway/store/badgerstore"
)

// Defaults used when an Options field is zero.
const (
	DefaultQueueSize       = 8192
	DefaultBatchSize       = 512
	DefaultFlushInterval   = 100 * time.Millisecond
	DefaultEnqueueTimeout  = time.Second
	DefaultMaxContentBytes = 32 << 10
	DefaultMaxScanRecords  = 100_000
	// storeMemTable and storeValueThreshold are the logs store's Badger
	// memtable size and value-log threshold (see StoreOptions).
	storeMemTable       = 1 << 20
	storeValueThreshold = 128
	// maxBatchBytes keeps one transaction under half of Badger's
	// per-transaction limit (15% of the memtable), counted as Badger counts
	// it: see batchCost.
	maxBatchBytes = storeMemTable * 15 / 100 / 2
)

// batchCost is what one record adds to a write transaction's size as
// Badger estimates it: its keys with their entry overhead, and the value
// only when it is small enough to stay in the LSM tree (larger ones are a
// pointer into the value log).
func batchCost(e *encoded) int {
	const entryOverhead = 64 // meta, version, value pointer, skiplist node
	n := len(e.key) + entryOverhead
	if !e.derived {
		n += len(e.id) + entryOverhead + len(e.key)
	}
	if len(e.val) < storeValueThreshold {
		n += len(e.val)
	}
	return n
}

// Options configures a Logger.
type Options struct {
	// Store is the logs store (its own instance, see the package comment).
	Store store.Store
	// Log receives progress and failure messages.
	Log *slog.Logger
	// Registry receives the logger's metrics; nil registers none.
	Registry prometheus.Registerer
	// QueueSize is the capacity of the hand-off queue between Record and the
	// writer goroutine.
	QueueSize int
	// BatchSize is the most records written in one transaction.
	BatchSize int
	// FlushInterval is the longest a queued record waits for its batch to
	// fill before it is written.
	FlushInterval time.Duration
	// EnqueueTimeout is how long Record blocks on a full queue before it
	// gives the record up (counted and logged as dropped).
	EnqueueTimeout time.Duration
	// CaptureContent keeps Record.Input/Output; when false they are cleared
	// before the record is queued.
	CaptureContent bool
	// MaxContentBytes cuts Input and Output each to this many bytes.
	MaxContentBytes int
	// Retention is how old a record may get before the pruner deletes it;
	// 0 keeps records forever.
	Retention time.Duration
	// PruneInterval is how often the pruner runs (default 1h); negative
	// disables the background pruner (Prune can still be called).
	PruneInterval time.Duration
	// MaxScanRecords caps the records one query examines.
	MaxScanRecords int
	// Now is the clock (tests inject one); default time.Now.
	Now func() time.Time
}

// Logger records inference requests off the hot path. A nil *Logger is a
// valid, disabled logger: Record does nothing, so callers need no checks
// when logs.enabled is false.
//
// Durability: the logs store runs without fsync per commit, and records wait
// up to FlushInterval (or BatchSize records) to be written as one
// transaction. A process kill can therefore lose the last ~100 ms of
// records and a power loss whatever the OS had not written back; a graceful
// Close writes everything queued before it returns. Records are never
// dropped silently: a full queue blocks the caller up to EnqueueTimeout and
// only then drops the record, counting it in
// wasmgate_logs_records_dropped_total and logging a warning.
type Logger struct {
	opts  Options
	st    store.Store
	log   *slog.Logger
	queue chan *Record
	flush chan chan error

	// mu guards closed against a send racing Close: senders hold it for
	// reading, Close takes it for writing before closing the queue.
	mu     sync.RWMutex
	closed bool

	writerDone chan struct{}
	// closing wakes the polling writer at once on Close.
	closing   chan struct{}
	stopPrune chan struct{}
	pruneDone chan struct{}

	written   atomic.Int64
	dropped   atomic.Int64
	lastWarn  atomic.Int64
	mWritten  prometheus.Counter
	mDropped  *prometheus.CounterVec
	mPruned   prometheus.Counter
	mBatch    prometheus.Histogram
	mFailures prometheus.Counter
}

// New starts a Logger writing to opts.Store. Close it to flush.
func New(opts Options) (*Logger, error) {
	if opts.Store == nil {
		return nil, errors.New("logs: a store is required")
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.EnqueueTimeout <= 0 {
		opts.EnqueueTimeout = DefaultEnqueueTimeout
	}
	if opts.MaxContentBytes <= 0 {
		opts.MaxContentBytes = DefaultMaxContentBytes
	}
	if opts.MaxScanRecords <= 0 {
		opts.MaxScanRecords = DefaultMaxScanRecords
	}
	if opts.PruneInterval == 0 {
		opts.PruneInterval = time.Hour
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	l := &Logger{
		opts: opts, st: opts.Store, log: opts.Log.With("component", "logs"),
		queue:      make(chan *Record, opts.QueueSize),
		flush:      make(chan chan error),
		writerDone: make(chan struct{}),
		closing:    make(chan struct{}),
		stopPrune:  make(chan struct{}),
		pruneDone:  make(chan struct{}),
	}
	if err := l.registerMetrics(opts.Registry); err != nil {
		return nil, err
	}
	go l.writer()
	if opts.Retention > 0 && opts.PruneInterval > 0 {
		go l.pruneLoop()
	} else {
		close(l.pruneDone)
	}
	return l, nil
}

func (l *Logger) registerMetrics(reg prometheus.Registerer) error {
	l.mWritten = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wasmgate_logs_records_written_total", Help: "Request-log records written to the logs store."})
	l.mDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wasmgate_logs_records_dropped_total", Help: "Request-log records given up, by reason (queue_full, closed, write_failed)."},
		[]string{"reason"})
	l.mPruned = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wasmgate_logs_records_pruned_total", Help: "Request-log records deleted by retention."})
	l.mFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wasmgate_logs_batch_failures_total", Help: "Log batch transactions that failed (the batch is split and retried)."})
	l.mBatch = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "wasmgate_logs_batch_size", Help: "Records per logs-store transaction.",
		Buckets: []float64{1, 4, 16, 64, 128, 256, 512, 1024}})
	if reg == nil {
		return nil
	}
	depth := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "wasmgate_logs_queue_depth", Help: "Request-log records queued for the writer."},
		func() float64 { return float64(len(l.queue)) })
	for _, c := range []prometheus.Collector{l.mWritten, l.mDropped, l.mPruned, l.mFailures, l.mBatch, depth} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("logs: register metrics: %w", err)
		}
	}
	return nil
}

// CaptureContent tells the pipeline whether to fill Input/Output at all, so
// it can skip building them when they would be cleared anyway.
func (l *Logger) CaptureContent() bool { return l != nil && l.opts.CaptureContent }

// Record hands r to the writer and returns at once unless the queue is full,
// in which case it waits up to EnqueueTimeout (backpressure) and then drops
// r, counting and logging the drop. The Logger owns r afterwards: the caller
// must not touch it again. Record does not allocate on its fast path.
func (l *Logger) Record(r *Record) {
	if l == nil || r == nil {
		return
	}
	if r.Timestamp.IsZero() {
		r.Timestamp = l.opts.Now()
	}
	if !l.opts.CaptureContent {
		r.Input, r.Output = "", ""
	} else if max := l.opts.MaxContentBytes; len(r.Input) > max || len(r.Output) > max {
		r.Input, r.Output, r.ContentTruncated = cut(r.Input, max), cut(r.Output, max), true
	}

	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		l.drop("closed", 1, errors.New("record after Close"))
		return
	}
	select {
	case l.queue <- r:
		return
	default:
	}
	t := time.NewTimer(l.opts.EnqueueTimeout)
	defer t.Stop()
	select {
	case l.queue <- r:
	case <-t.C:
		l.drop("queue_full", 1, fmt.Errorf("queue of %d full for %s", cap(l.queue), l.opts.EnqueueTimeout))
	}
}

func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return s[:max]
}

// drop counts lost records and warns at most once a second so a storm of
// drops cannot flood the log.
func (l *Logger) drop(reason string, n int, err error) {
	l.dropped.Add(int64(n))
	l.mDropped.WithLabelValues(reason).Add(float64(n))
	now := time.Now().UnixNano()
	last := l.lastWarn.Load()
	if now-last > int64(time.Second) && l.lastWarn.CompareAndSwap(last, now) {
		l.log.Warn("request-log records dropped", "reason", reason, "records", n,
			"dropped_total", l.dropped.Load(), "error", err)
	}
}

// Stats is a snapshot of the writer's counters.
type Stats struct {
	Written    int64 `json:"written"`
	Dropped    int64 `json:"dropped"`
	QueueDepth int   `json:"queue_depth"`
}

// WriterStats returns the writer's counters.
func (l *Logger) WriterStats() Stats {
	return Stats{Written: l.written.Load(), Dropped: l.dropped.Load(), QueueDepth: len(l.queue)}
}

// Flush writes every record handed to Record before the call and returns
// once they are committed.
func (l *Logger) Flush(ctx context.Context) error {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return nil // Close already flushed everything
	}
	done := make(chan error, 1)
	select {
	case l.flush <- done:
	case <-ctx.Done():
		l.mu.RUnlock()
		return ctx.Err()
	}
	l.mu.RUnlock()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the pruner, writes everything queued and stops the writer.
// It does not close the store, which the caller opened.
func (l *Logger) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.queue)
	close(l.closing)
	l.mu.Unlock()
	close(l.stopPrune)
	<-l.pruneDone
	<-l.writerDone
	l.log.Info("request logs flushed", "written", l.written.Load(), "dropped", l.dropped.Load())
	return nil
}

// writer is the single goroutine that owns the store writes. It polls the
// queue every FlushInterval/4 instead of blocking on it: a blocked receiver
// makes every Record wake it (a futex call and a thread hand-off per request,
// ~4% of the CPU of a low-concurrency passthrough request in profiles),
// whereas a poll drains whole bursts at once. Records therefore wait up to
// about FlushInterval/4 before being batched, and a batch is written when
// it reaches BatchSize records or at the latest on the next poll.
func (l *Logger) writer() {
	defer close(l.writerDone)
	batch := make([]*Record, 0, l.opts.BatchSize)
	tick := time.NewTicker(max(l.opts.FlushInterval/4, time.Millisecond))
	defer tick.Stop()
	// drain moves what is queued now into batch, writing full batches;
	// it reports false once the queue is closed and empty.
	drain := func() bool {
		n := len(l.queue)
		if n == 0 {
			select {
			case r, ok := <-l.queue:
				if !ok {
					return false
				}
				batch = append(batch, r)
			default:
			}
			return true
		}
		for ; n > 0; n-- {
			batch = append(batch, <-l.queue)
			if len(batch) >= l.opts.BatchSize {
				l.write(batch)
				batch = batch[:0]
			}
		}
		return true
	}
	for {
		var done chan error
		select {
		case <-tick.C:
		case done = <-l.flush:
			// Everything Record accepted before Flush was called is in the
			// queue now; drain takes it without waiting for more.
		case <-l.closing:
		}
		open := drain()
		// A queue at least half full means producers are outrunning the
		// poll (or blocked on it): keep draining instead of sleeping.
		for open && len(l.queue) >= cap(l.queue)/2 {
			open = drain()
		}
		if !open {
			// Close: take whatever raced in before the queue closed.
			for r := range l.queue {
				batch = append(batch, r)
			}
		}
		err := l.write(batch)
		batch = batch[:0]
		if done != nil {
			done <- err
		}
		if !open {
			return
		}
	}
}

// encoded is a record ready for the store.
type encoded struct {
	key, id string
	val     []byte
	derived bool // the id locates the record; no id-namespace entry
}

// write commits batch, splitting it when it is too large for one
// transaction or when a transaction fails, so one bad record cannot take
// its neighbours down with it.
func (l *Logger) write(batch []*Record) error {
	if len(batch) == 0 {
		return nil
	}
	enc := make([]encoded, 0, len(batch))
	for i, r := range batch {
		r.normalize()
		// segmentio's encoder writes what encoding/json does (asserted by
		// TestRecordEncodingMatchesEncodingJSON) in half the time: this
		// runs once per request.
		v, err := segjson.Marshal(r)
		batch[i] = nil // release the record for the GC
		if err != nil {
			l.drop("write_failed", 1, fmt.Errorf("encode record %s: %w", r.ID, err))
			continue
		}
		ts := r.Timestamp.UnixNano()
		enc = append(enc, encoded{key: recordKey(r.Timestamp, r.ID), id: r.ID, val: v, derived: derivedID(r.ID, ts)})
	}
	var firstErr error
	start, size := 0, 0
	for i := range enc {
		size += batchCost(&enc[i])
		if size > maxBatchBytes && i > start {
			if err := l.commit(enc[start:i]); err != nil && firstErr == nil {
				firstErr = err
			}
			start, size = i, batchCost(&enc[i])
		}
	}
	if err := l.commit(enc[start:]); err != nil && firstErr == nil {
		firstErr = err
	}
	return firstErr
}

func (l *Logger) commit(recs []encoded) error {
	if len(recs) == 0 {
		return nil
	}
	// The writer must finish even while the gateway shuts down, so it does
	// not inherit a cancellable context.
	err := l.st.Update(context.Background(), func(tx store.Tx) error {
		for _, e := range recs {
			if err := tx.Put(nsLogs, e.key, e.val); err != nil {
				return err
			}
			if e.derived {
				continue
			}
			if err := tx.Put(nsByID, e.id, []byte(e.key)); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		l.written.Add(int64(len(recs)))
		l.mWritten.Add(float64(len(recs)))
		l.mBatch.Observe(float64(len(recs)))
		return nil
	}
	l.mFailures.Inc()
	if len(recs) == 1 {
		err = fmt.Errorf("write record %s: %w", recs[0].id, err)
		l.drop("write_failed", 1, err)
		l.log.Error("request-log record lost", "id", recs[0].id, "error", err)
		return err
	}
	mid := len(recs) / 2
	return errors.Join(l.commit(recs[:mid]), l.commit(recs[mid:]))
}

// StoreOptions are the Badger settings for a logs store in dir: no fsync
// per commit (see Logger for the durability trade); records in the value
// log, so the tree holds only keys; and a 1 MiB memtable with 1 MiB tables
// at every level, because Badger keeps up to eight table-builder buffers
// pooled, each as large as the largest table it built (measured: 48 MiB of
// them with 4 MiB memtables and tables doubling per level, 830 MB peak RSS
// with the config store's 16 MiB x 5 memtables). The mapped pages of its
// files are released four times a second: the log is written once and
// read rarely, so they are not worth keeping resident, and at 20k records
// a second a one-second period let 8-15 MiB of freshly written value log
// accumulate between releases (one release costs a /proc/self/maps read
// and a madvise per file).
func StoreOptions(dir string, log *slog.Logger) badgerstore.Options {
	return badgerstore.Options{Dir: dir, SyncWrites: false, Logger: log, MemTableSize: storeMemTable, NumMemtables: 2,
		BaseTableSize: 1 << 20, TableSizeMultiplier: 1, ValueThreshold: storeValueThreshold, ReleaseMappedEvery: 250 * time.Millisecond,
		NoConflictDetection: true}
}
