package logs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wasmgate/gateway/host/logs"
	"github.com/wasmgate/gateway/host/reqid"
	"github.com/wasmgate/gateway/store"
	"github.com/wasmgate/gateway/store/badgerstore"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// openStore opens a real on-disk Badger store as the server does for logs.
func openStore(tb testing.TB, dir, key string) store.Store {
	tb.Helper()
	db, err := badgerstore.Open(logs.StoreOptions(dir, quiet))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	sealed, err := store.OpenSealed(context.Background(), db, key, quiet)
	if err != nil {
		tb.Fatal(err)
	}
	return sealed
}

// clock is an injectable time source.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) set(t time.Time)     { c.ns.Store(t.UnixNano()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

func TestRetentionPrunesByAge(t *testing.T) {
	var clk clock
	clk.set(t0)
	lg, err := logs.New(logs.Options{Store: openStore(t, t.TempDir(), ""), Log: quiet, Now: clk.now,
		Retention: 30 * 24 * time.Hour, PruneInterval: -1, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	ctx := context.Background()
	// 2,500 records one hour apart (> deleteBatch, so pruning takes several
	// bounded batches), stamped by the injected clock.
	for i := 0; i < 2500; i++ {
		lg.Record(&logs.Record{Provider: "openai"})
		clk.add(time.Hour)
	}
	if err := lg.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Now = t0+2500h; cutoff = now-720h = t0+1780h: records 0..1779 go.
	n, err := lg.Prune(ctx)
	if err != nil || n != 1780 {
		t.Fatalf("pruned %d (%v), want 1780", n, err)
	}
	left, _ := lg.Count(ctx)
	if left != 720 {
		t.Fatalf("left %d, want 720", left)
	}
	res, err := lg.Query(ctx, logs.Filter{}, logs.Page{Limit: 1, Ascending: true})
	if err != nil || !res.Logs[0].Timestamp.Equal(t0.Add(1780*time.Hour)) {
		t.Fatalf("oldest kept: %+v %v", res.Logs, err)
	}
	// A second run finds nothing; ids of pruned records are gone too.
	if n, _ := lg.Prune(ctx); n != 0 {
		t.Fatalf("second prune %d", n)
	}
}

func TestRetentionZeroKeepsForever(t *testing.T) {
	lg, err := logs.New(logs.Options{Store: openStore(t, t.TempDir(), ""), Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	lg.Record(&logs.Record{Timestamp: time.Unix(1, 0)})
	_ = lg.Flush(context.Background())
	if n, _ := lg.Prune(context.Background()); n != 0 {
		t.Fatalf("pruned %d with no retention", n)
	}
}

// TestScanCapTruncates: a query never examines more than MaxScanRecords;
// it says so and hands a cursor that continues the walk.
func TestScanCapTruncates(t *testing.T) {
	lg, err := logs.New(logs.Options{Store: openStore(t, t.TempDir(), ""), Log: quiet, MaxScanRecords: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	data := dataset(200)
	for i := range data {
		r := data[i]
		lg.Record(&r)
	}
	ctx := context.Background()
	_ = lg.Flush(ctx)
	// Only every 4th record is openai: 50 examined hold 12 or 13 matches.
	f := logs.Filter{Providers: []string{"openai"}}
	var got []string
	cursor := ""
	for pages := 0; pages < 10; pages++ {
		res, err := lg.Query(ctx, f, logs.Page{Limit: 100, After: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Truncated && res.HasMore {
			t.Fatalf("has_more without truncation: %+v", res)
		}
		for _, r := range res.Logs {
			got = append(got, r.ID)
		}
		if !res.HasMore {
			break
		}
		cursor = res.NextCursor
	}
	if len(got) != 50 {
		t.Fatalf("walked %d openai records, want 50", len(got))
	}
	s, _ := lg.Stats(ctx, logs.Filter{})
	if !s.Truncated || s.TotalRequests != 50 {
		t.Fatalf("stats cap: %+v", s)
	}
}

// TestRecordAfterCloseIsCountedNotLost: a record handed over after Close is
// reported as dropped, never silently discarded, and never panics.
func TestRecordAfterCloseIsCounted(t *testing.T) {
	lg, err := logs.New(logs.Options{Store: openStore(t, t.TempDir(), ""), Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	_ = lg.Close()
	lg.Record(&logs.Record{})
	if st := lg.WriterStats(); st.Dropped != 1 {
		t.Fatalf("stats %+v", st)
	}
	if err := lg.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestQueueFullDropIsCounted: with a writer that cannot keep up and a short
// enqueue timeout, the overflow is counted in the metric.
func TestQueueFullDropIsCounted(t *testing.T) {
	st := &slowStore{Store: openStore(t, t.TempDir(), ""), gate: make(chan struct{})}
	reg := prometheus.NewRegistry()
	lg, err := logs.New(logs.Options{Store: st, Log: quiet, QueueSize: 2, BatchSize: 1,
		EnqueueTimeout: time.Millisecond, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		lg.Record(&logs.Record{})
	}
	close(st.gate)
	_ = lg.Close()
	ws := lg.WriterStats()
	if ws.Dropped == 0 || ws.Dropped+ws.Written != 10 {
		t.Fatalf("written %d + dropped %d != 10", ws.Written, ws.Dropped)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "wasmgate_logs_records_dropped_total" &&
			mf.GetMetric()[0].GetCounter().GetValue() == float64(ws.Dropped) {
			return
		}
	}
	t.Fatal("drop metric missing")
}

// slowStore blocks every Update until gate closes.
type slowStore struct {
	store.Store
	gate chan struct{}
}

func (s *slowStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	<-s.gate
	return s.Store.Update(ctx, fn)
}

// TestRecordDoesNotAllocate guards the hot path: handing over a record
// costs no allocation beyond the record the caller built.
func TestRecordDoesNotAllocate(t *testing.T) {
	lg, err := logs.New(logs.Options{Store: openStore(t, t.TempDir(), ""), Log: quiet, QueueSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	recs := make([]logs.Record, 200)
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		lg.Record(&recs[i])
		i++
	})
	if allocs != 0 {
		t.Fatalf("Record allocates %.1f times per call", allocs)
	}
}

// TestGetByDerivedAndIndexedIDs: ids the gateway makes carry their
// record's millisecond and need no id index; ids chosen elsewhere (a
// client's, or a v7 id of another millisecond) are indexed. Get finds each
// record, also among many written in the same millisecond, and retention
// removes both kinds.
func TestGetByDerivedAndIndexedIDs(t *testing.T) {
	st := openStore(t, t.TempDir(), "")
	var clk clock
	clk.set(t0.Add(123 * time.Microsecond))
	lg, err := logs.New(logs.Options{Store: st, Log: quiet, Now: clk.now, Retention: time.Hour, PruneInterval: -1,
		Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	ctx := context.Background()
	var ids []string
	for i := 0; i < 200; i++ { // one millisecond, 200 records
		id := reqid.New(clk.now())
		ids = append(ids, id)
		lg.Record(&logs.Record{ID: id, Timestamp: clk.now().Add(time.Duration(i) * time.Nanosecond), Model: fmt.Sprint(i)})
	}
	foreign := []string{"client-chosen-1", reqid.New(t0.Add(5 * time.Second))}
	for i, id := range foreign {
		ids = append(ids, id)
		lg.Record(&logs.Record{ID: id, Timestamp: clk.now(), Model: fmt.Sprint(200 + i)})
	}
	if err := lg.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		r, err := lg.Get(ctx, id)
		if err != nil || r.ID != id || r.Model != fmt.Sprint(i) {
			t.Fatalf("Get(%s) = %+v, %v; want model %d", id, r, err, i)
		}
	}
	if _, err := lg.Get(ctx, reqid.New(clk.now())); !errors.Is(err, logs.ErrNotFound) {
		t.Fatalf("Get(unknown id of a busy millisecond) = %v, want ErrNotFound", err)
	}
	indexed := 0
	_ = st.View(ctx, func(tx store.Tx) error {
		return tx.Scan("logs_id", store.ScanOptions{}, func(string, []byte) error { indexed++; return nil })
	})
	if indexed != len(foreign) {
		t.Fatalf("id index holds %d entries, want %d (only the foreign ids)", indexed, len(foreign))
	}
	clk.add(2 * time.Hour)
	if n, err := lg.Prune(ctx); err != nil || n != len(ids) {
		t.Fatalf("pruned %d (%v), want %d", n, err, len(ids))
	}
	indexed = 0
	_ = st.View(ctx, func(tx store.Tx) error {
		return tx.Scan("logs_id", store.ScanOptions{}, func(string, []byte) error { indexed++; return nil })
	})
	if indexed != 0 {
		t.Fatalf("id index holds %d entries after pruning everything", indexed)
	}
	if _, err := lg.Get(ctx, foreign[0]); !errors.Is(err, logs.ErrNotFound) {
		t.Fatalf("Get(pruned foreign id) = %v, want ErrNotFound", err)
	}
}
