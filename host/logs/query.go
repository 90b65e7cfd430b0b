package logs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/wasmgate/gateway/host/reqid"
	"github.com/wasmgate/gateway/store"
)

// Filter selects records. Zero fields match everything; list fields match
// any of their values.
type Filter struct {
	// Start and End bound the timestamp, both inclusive.
	Start, End    time.Time
	Providers     []string
	Models        []string
	Objects       []string
	Status        string
	VirtualKeyIDs []string
	KeyIDs        []string
	// MinLatency and MaxLatency bound LatencyMS when not nil.
	MinLatency, MaxLatency *float64
	// ContentSearch matches, case-insensitively, the captured input and
	// output and the error message.
	ContentSearch string
}

// onlyTime reports whether the filter needs no decoded record.
func (f *Filter) onlyTime() bool {
	return len(f.Providers) == 0 && len(f.Models) == 0 && len(f.Objects) == 0 && f.Status == "" &&
		len(f.VirtualKeyIDs) == 0 && len(f.KeyIDs) == 0 && f.MinLatency == nil && f.MaxLatency == nil &&
		f.ContentSearch == ""
}

func (f *Filter) match(r *Record) bool {
	if !in(f.Providers, r.Provider) || !in(f.Models, r.Model, r.ResolvedModel) || !in(f.Objects, r.Object) ||
		!in(f.VirtualKeyIDs, r.VirtualKeyID) || !in(f.KeyIDs, r.KeyID) {
		return false
	}
	if f.Status != "" && r.Status != f.Status {
		return false
	}
	if f.MinLatency != nil && r.LatencyMS < *f.MinLatency {
		return false
	}
	if f.MaxLatency != nil && r.LatencyMS > *f.MaxLatency {
		return false
	}
	if f.ContentSearch != "" {
		q := strings.ToLower(f.ContentSearch)
		hit := containsFold(r.Input, q) || containsFold(r.Output, q)
		if !hit && r.Error != nil {
			hit = containsFold(r.Error.Message, q)
		}
		if !hit {
			return false
		}
	}
	return true
}

// needles builds a cheap necessary condition on the stored JSON: for each
// exact-match filter, one of its `"field":"value"` byte strings must occur.
// json.Marshal's output is canonical and quotes inside string values are
// escaped, so a record that matches always contains the needle; a needle
// hit is only a candidate (it may sit in metadata), which match confirms.
// Rejecting most records without decoding them makes selective filters
// several times cheaper.
func (f *Filter) needles() [][][]byte {
	var groups [][][]byte
	add := func(vals []string, fields ...string) {
		if len(vals) == 0 {
			return
		}
		var g [][]byte
		for _, v := range vals {
			enc, err := json.Marshal(v)
			if err != nil {
				return // no prefilter for this field; match still decides
			}
			for _, field := range fields {
				g = append(g, append([]byte(`"`+field+`":`), enc...))
			}
		}
		groups = append(groups, g)
	}
	add(f.Providers, "provider")
	add(f.Models, "model", "resolved_model")
	add(f.Objects, "object")
	add(f.VirtualKeyIDs, "virtual_key_id")
	add(f.KeyIDs, "key_id")
	if f.Status != "" {
		add([]string{f.Status}, "status")
	}
	return groups
}

func candidate(val []byte, groups [][][]byte) bool {
	for _, g := range groups {
		hit := false
		for _, n := range g {
			if bytes.Contains(val, n) {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	return true
}

func in(set []string, vals ...string) bool {
	if len(set) == 0 {
		return true
	}
	for _, s := range set {
		for _, v := range vals {
			if v != "" && s == v {
				return true
			}
		}
	}
	return false
}

func containsFold(s, lowerQ string) bool {
	return s != "" && strings.Contains(strings.ToLower(s), lowerQ)
}

// Page selects one page of a filtered scan.
type Page struct {
	Limit  int
	Offset int
	// After is the cursor of the last record of the previous page.
	After string
	// Ascending returns oldest first; the default is newest first.
	Ascending bool
}

// Result is one page of records.
type Result struct {
	Logs []*Record
	// TotalCount is the number of matches in the scanned window. It is
	// exact unless Truncated.
	TotalCount int
	HasMore    bool
	// NextCursor continues after the last record returned (or, when the
	// scan was truncated before the page filled, after the last record
	// examined).
	NextCursor string
	// Truncated means the scan stopped at MaxScanRecords: TotalCount is a
	// lower bound and the page may be short; continue from NextCursor.
	Truncated bool
}

// ErrBadCursor means the cursor was not produced by this store.
var ErrBadCursor = errors.New("logs: malformed cursor")

// scan walks the records of the filter's time window in the given order,
// starting after cursor, calling fn for each record that matches. r is the
// decoded record, or nil when the filter needed none (a pure time window):
// fn then decodes val itself only if it needs the record. It stops when fn
// says so or after max records examined, reporting the last key examined
// and whether it hit the cap.
func (l *Logger) scan(ctx context.Context, f *Filter, asc bool, cursor string, max int,
	fn func(key string, val []byte, r *Record) (bool, error)) (lastKey string, truncated bool, err error) {
	if cursor != "" {
		if _, ok := keyTime(cursor); !ok {
			return "", false, ErrBadCursor
		}
	}
	var startNs, endNs int64 = 0, math.MaxInt64
	if !f.Start.IsZero() {
		startNs = f.Start.UnixNano()
	}
	if !f.End.IsZero() {
		endNs = f.End.UnixNano()
	}
	opts := store.ScanOptions{Reverse: !asc, After: cursor}
	if opts.After == "" {
		if asc && startNs > 0 {
			// Just below every key of startNs: the first key examined is the
			// first of the window.
			opts.After = tsKey(startNs-1) + "\xff"
		} else if !asc && endNs < math.MaxInt64 {
			opts.After = tsKey(endNs + 1)
		}
	}
	decode := !f.onlyTime()
	groups := f.needles()
	examined := 0
	err = l.st.View(ctx, func(tx store.Tx) error {
		return tx.Scan(nsLogs, opts, func(key string, val []byte) error {
			ts, ok := keyTime(key)
			if !ok {
				return nil
			}
			if (asc && ts > endNs) || (!asc && ts < startNs) {
				return store.ErrStopScan
			}
			if ts < startNs || ts > endNs {
				return nil // a cursor from outside the window
			}
			if examined >= max {
				truncated = true
				return store.ErrStopScan
			}
			if examined%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			examined++
			lastKey = key
			var r *Record
			if decode {
				if !candidate(val, groups) {
					return nil
				}
				var err error
				if r, err = decodeRecord(key, val); err != nil {
					return err
				}
				if !f.match(r) {
					return nil
				}
			}
			more, err := fn(key, val, r)
			if err != nil {
				return err
			}
			if !more {
				return store.ErrStopScan
			}
			return nil
		})
	})
	return lastKey, truncated, err
}

func decodeRecord(key string, val []byte) (*Record, error) {
	r := new(Record)
	if err := json.Unmarshal(val, r); err != nil {
		return nil, fmt.Errorf("logs: decode %s: %w", key, err)
	}
	return r, nil
}

// Query returns one page of records matching f. Every call examines at
// most MaxScanRecords records; see Result.Truncated.
func (l *Logger) Query(ctx context.Context, f Filter, p Page) (*Result, error) {
	res := &Result{Logs: []*Record{}}
	skipped := 0
	var lastReturned string
	lastKey, truncated, err := l.scan(ctx, &f, p.Ascending, p.After, l.opts.MaxScanRecords, func(key string, val []byte, r *Record) (bool, error) {
		res.TotalCount++
		switch {
		case skipped < p.Offset:
			skipped++
		case len(res.Logs) < p.Limit:
			if r == nil {
				var err error
				if r, err = decodeRecord(key, val); err != nil {
					return false, err
				}
			}
			res.Logs = append(res.Logs, r)
			lastReturned = key
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	res.Truncated = truncated
	res.HasMore = res.TotalCount > p.Offset+len(res.Logs) || truncated
	switch {
	case len(res.Logs) == p.Limit && lastReturned != "":
		res.NextCursor = lastReturned
	case truncated:
		res.NextCursor = lastKey
	}
	if !res.HasMore {
		res.NextCursor = ""
	}
	return res, nil
}

// ErrNotFound is returned by Get for an unknown id.
var ErrNotFound = errors.New("logs: record not found")

// Get returns the record with id.
func (l *Logger) Get(ctx context.Context, id string) (*Record, error) {
	var r Record
	err := l.st.View(ctx, func(tx store.Tx) error {
		raw, err := findDerived(tx, id)
		if errors.Is(err, store.ErrNotFound) {
			var key []byte
			if key, err = tx.Get(nsByID, id); err == nil {
				raw, err = tx.Get(nsLogs, string(key))
			}
		}
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &r)
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("logs: get %s: %w", id, err)
	}
	return &r, nil
}

// findDerived reads the record of an id that carries its millisecond (see
// derivedID) by scanning that millisecond's keys: a handful at any load.
func findDerived(tx store.Tx, id string) ([]byte, error) {
	ms, ok := reqid.Millis(id)
	if !ok || ms < 0 || ms > math.MaxInt64/int64(time.Millisecond)-1 {
		return nil, store.ErrNotFound
	}
	from, to := tsKey(ms*int64(time.Millisecond)), tsKey((ms+1)*int64(time.Millisecond))
	var found []byte
	err := tx.Scan(nsLogs, store.ScanOptions{After: from}, func(key string, val []byte) error {
		if key >= to {
			return store.ErrStopScan
		}
		if keyID(key) == id {
			found = val
			return store.ErrStopScan
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, store.ErrNotFound
	}
	return found, nil
}

// Count returns the number of stored records (tests and benchmarks).
func (l *Logger) Count(ctx context.Context) (int, error) {
	n := 0
	err := l.st.View(ctx, func(tx store.Tx) error {
		return tx.Scan(nsLogs, store.ScanOptions{}, func(string, []byte) error { n++; return nil })
	})
	return n, err
}

// Breakdown aggregates one group of records.
type Breakdown struct {
	Requests         int     `json:"requests"`
	SuccessRate      float64 `json:"success_rate"`
	AverageLatencyMS float64 `json:"average_latency_ms"`
	TotalTokens      int64   `json:"total_tokens"`
	TotalCost        float64 `json:"total_cost"`
	successes        int
	latencySum       float64
}

func (b *Breakdown) add(r *Record) {
	b.Requests++
	if r.Status == StatusSuccess {
		b.successes++
	}
	b.latencySum += r.LatencyMS
	b.TotalTokens += r.TotalTokens
	b.TotalCost += r.Cost
}

func (b *Breakdown) finish() {
	if b.Requests > 0 {
		b.SuccessRate = float64(b.successes) / float64(b.Requests)
		b.AverageLatencyMS = b.latencySum / float64(b.Requests)
	}
}

// Summary is the answer of GET /api/logs/stats.
type Summary struct {
	TotalRequests    int                   `json:"total_requests"`
	SuccessCount     int                   `json:"success_count"`
	ErrorCount       int                   `json:"error_count"`
	SuccessRate      float64               `json:"success_rate"`
	AverageLatencyMS float64               `json:"average_latency_ms"`
	P50LatencyMS     float64               `json:"p50_latency_ms"`
	P95LatencyMS     float64               `json:"p95_latency_ms"`
	P99LatencyMS     float64               `json:"p99_latency_ms"`
	TotalTokens      int64                 `json:"total_tokens"`
	PromptTokens     int64                 `json:"prompt_tokens"`
	CompletionTokens int64                 `json:"completion_tokens"`
	TotalCost        float64               `json:"total_cost"`
	ByProvider       map[string]*Breakdown `json:"by_provider"`
	ByModel          map[string]*Breakdown `json:"by_model"`
	// Truncated means MaxScanRecords stopped the scan: the figures cover
	// the newest records of the window only.
	Truncated bool `json:"truncated"`
}

// Stats aggregates the records matching f (newest first, at most
// MaxScanRecords of them).
func (l *Logger) Stats(ctx context.Context, f Filter) (*Summary, error) {
	s := &Summary{ByProvider: map[string]*Breakdown{}, ByModel: map[string]*Breakdown{}}
	var lat latencies
	var latSum float64
	_, truncated, err := l.scan(ctx, &f, false, "", l.opts.MaxScanRecords, func(key string, val []byte, r *Record) (bool, error) {
		if r == nil {
			var err error
			if r, err = decodeRecord(key, val); err != nil {
				return false, err
			}
		}
		s.TotalRequests++
		if r.Status == StatusSuccess {
			s.SuccessCount++
		} else {
			s.ErrorCount++
		}
		lat.add(r.LatencyMS)
		latSum += r.LatencyMS
		s.TotalTokens += r.TotalTokens
		s.PromptTokens += r.PromptTokens
		s.CompletionTokens += r.CompletionTokens
		s.TotalCost += r.Cost
		group(s.ByProvider, r.Provider).add(r)
		group(s.ByModel, r.Model).add(r)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	s.Truncated = truncated
	if s.TotalRequests > 0 {
		s.SuccessRate = float64(s.SuccessCount) / float64(s.TotalRequests)
		s.AverageLatencyMS = latSum / float64(s.TotalRequests)
		ps := lat.percentiles(50, 95, 99)
		s.P50LatencyMS, s.P95LatencyMS, s.P99LatencyMS = ps[0], ps[1], ps[2]
	}
	for _, b := range s.ByProvider {
		b.finish()
	}
	for _, b := range s.ByModel {
		b.finish()
	}
	return s, nil
}

func group(m map[string]*Breakdown, k string) *Breakdown {
	if k == "" {
		k = "unknown"
	}
	b := m[k]
	if b == nil {
		b = &Breakdown{}
		m[k] = b
	}
	return b
}

// deleteBatch bounds each delete transaction so deleting or pruning a large
// window neither builds a huge transaction nor blocks the writer for long:
// two tombstones per record, each costing about what batchCost counts for a
// key, keep a batch under maxBatchBytes.
const deleteBatch = 256

// Delete removes the records matching f, in bounded batches, and returns how
// many it removed.
func (l *Logger) Delete(ctx context.Context, f Filter) (int, error) {
	return l.deleteWhere(ctx, f, nil)
}

// deleteWhere deletes in batches of deleteBatch, calling progress after each.
func (l *Logger) deleteWhere(ctx context.Context, f Filter, progress func(total int)) (int, error) {
	total := 0
	cursor := ""
	for {
		var keys []string
		last, truncated, err := l.scan(ctx, &f, true, cursor, deleteBatch*10, func(key string, _ []byte, _ *Record) (bool, error) {
			keys = append(keys, key)
			return len(keys) < deleteBatch, nil
		})
		if err != nil {
			return total, err
		}
		if err := l.deleteKeys(ctx, keys); err != nil {
			return total, err
		}
		total += len(keys)
		if progress != nil && len(keys) > 0 {
			progress(total)
		}
		if len(keys) < deleteBatch && !truncated {
			return total, nil
		}
		if len(keys) == deleteBatch {
			last = keys[len(keys)-1]
		}
		cursor = last
	}
}

func (l *Logger) deleteKeys(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	return l.st.Update(ctx, func(tx store.Tx) error {
		for _, k := range keys {
			if err := tx.Delete(nsLogs, k); err != nil {
				return err
			}
			if err := tx.Delete(nsByID, keyID(k)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Prune deletes records older than the retention period and returns how
// many it removed; without a retention period it does nothing.
func (l *Logger) Prune(ctx context.Context) (int, error) {
	if l.opts.Retention <= 0 {
		return 0, nil
	}
	cutoff := l.opts.Now().Add(-l.opts.Retention)
	n, err := l.deleteWhere(ctx, Filter{End: cutoff.Add(-time.Nanosecond)}, func(total int) {
		if total%(deleteBatch*10) == 0 {
			l.log.Info("request-log retention in progress", "deleted", total, "cutoff", cutoff)
		}
	})
	l.mPruned.Add(float64(n))
	return n, err
}

func (l *Logger) pruneLoop() {
	defer close(l.pruneDone)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-l.stopPrune
		cancel()
	}()
	t := time.NewTicker(l.opts.PruneInterval)
	defer t.Stop()
	for {
		l.pruneOnce(ctx)
		select {
		case <-l.stopPrune:
			return
		case <-t.C:
		}
	}
}

func (l *Logger) pruneOnce(ctx context.Context) {
	start := time.Now()
	n, err := l.Prune(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		l.log.Warn("request-log retention failed", "deleted", n, "error", err)
	case n > 0:
		l.log.Info("request-log retention", "deleted", n, "retention", l.opts.Retention, "took", time.Since(start))
	}
}
