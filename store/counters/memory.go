package counters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/wasmgate/gateway/store"
)

// ns is the store namespace persisted counters live in.
const ns = "governance_counters"

// Memory is the in-process Counters: every operation is one critical
// section over a map, so reservations are atomic and cost well under a
// microsecond. Changed counters are written to the store by a background
// flusher every FlushInterval and on Close.
//
// Durability trade: a kill -9 loses at most the usage settled in the last
// flush interval (the store write is off the request path on purpose: an
// fsync per request would cost milliseconds). A graceful shutdown loses
// nothing.
type Memory struct {
	st  store.Store
	log *slog.Logger

	mu    sync.Mutex
	cells map[string]*cell
	dirty map[string]struct{}

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

type cell struct {
	// Window is the window start in Unix nanoseconds.
	Window int64 `json:"w"`
	Used   int64 `json:"u"`
}

// MemoryOptions configures OpenMemory.
type MemoryOptions struct {
	// Store persists the counters; nil keeps them in memory only.
	Store store.Store
	// FlushInterval is how often changed counters are written (default 1s).
	FlushInterval time.Duration
	// Log receives flush failures.
	Log *slog.Logger
}

// OpenMemory loads persisted counters and starts the flusher; Close stops it.
func OpenMemory(ctx context.Context, o MemoryOptions) (*Memory, error) {
	m := &Memory{st: o.Store, log: o.Log, cells: map[string]*cell{}, dirty: map[string]struct{}{},
		stop: make(chan struct{}), done: make(chan struct{})}
	if m.log == nil {
		m.log = slog.Default()
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = time.Second
	}
	if m.st != nil {
		err := m.st.View(ctx, func(tx store.Tx) error {
			return tx.Scan(ns, store.ScanOptions{}, func(key string, value []byte) error {
				var c cell
				if err := json.Unmarshal(value, &c); err != nil {
					return fmt.Errorf("counters: decode %s: %w", key, err)
				}
				m.cells[key] = &c
				return nil
			})
		})
		if err != nil {
			return nil, err
		}
	}
	go m.flushLoop(o.FlushInterval)
	return m, nil
}

// Reserve implements Counters.
func (m *Memory) Reserve(_ context.Context, charges []Charge) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range charges {
		ch := &charges[i]
		if ch.Limit <= 0 {
			continue
		}
		used := int64(0)
		if c := m.cells[ch.Key]; c != nil && c.Window == ch.Window.UnixNano() {
			used = c.Used
		}
		if used >= ch.Limit || used+ch.Amount > ch.Limit {
			return i, nil
		}
	}
	for i := range charges {
		ch := &charges[i]
		w := ch.Window.UnixNano()
		c := m.cells[ch.Key]
		if c == nil {
			c = &cell{}
			m.cells[ch.Key] = c
		}
		if c.Window != w {
			c.Window, c.Used = w, 0
		}
		c.Used += ch.Amount
		m.dirty[ch.Key] = struct{}{}
	}
	return -1, nil
}

// Adjust implements Counters.
func (m *Memory) Adjust(_ context.Context, key string, window time.Time, delta int64) error {
	if delta == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cells[key]
	if c == nil || c.Window != window.UnixNano() {
		return nil
	}
	c.Used += delta
	if c.Used < 0 {
		c.Used = 0
	}
	m.dirty[key] = struct{}{}
	return nil
}

// Get implements Counters.
func (m *Memory) Get(_ context.Context, key string, window time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.cells[key]; c != nil && c.Window == window.UnixNano() {
		return c.Used, nil
	}
	return 0, nil
}

// Delete implements Counters.
func (m *Memory) Delete(ctx context.Context, prefix string) error {
	m.mu.Lock()
	var gone []string
	for k := range m.cells {
		if strings.HasPrefix(k, prefix) {
			delete(m.cells, k)
			delete(m.dirty, k)
			gone = append(gone, k)
		}
	}
	m.mu.Unlock()
	if m.st == nil || len(gone) == 0 {
		return nil
	}
	return m.st.Update(ctx, func(tx store.Tx) error {
		for _, k := range gone {
			if err := tx.Delete(ns, k); err != nil {
				return err
			}
		}
		return nil
	})
}

// Flush writes the counters changed since the last flush.
func (m *Memory) Flush(ctx context.Context) error {
	if m.st == nil {
		return nil
	}
	m.mu.Lock()
	if len(m.dirty) == 0 {
		m.mu.Unlock()
		return nil
	}
	batch := make(map[string]cell, len(m.dirty))
	for k := range m.dirty {
		if c := m.cells[k]; c != nil {
			batch[k] = *c
		}
	}
	clear(m.dirty)
	m.mu.Unlock()
	err := m.st.Update(ctx, func(tx store.Tx) error {
		for k, c := range batch {
			if err := store.PutJSON(tx, ns, k, c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		// Mark them dirty again so the next flush retries.
		m.mu.Lock()
		for k := range batch {
			m.dirty[k] = struct{}{}
		}
		m.mu.Unlock()
		return fmt.Errorf("counters: flush: %w", err)
	}
	return nil
}

func (m *Memory) flushLoop(every time.Duration) {
	defer close(m.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			if err := m.Flush(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
				m.log.Error("governance counters not persisted", "error", err)
			}
		}
	}
}

// Close stops the flusher and writes what is left; call it before the
// store closes.
func (m *Memory) Close() error {
	m.once.Do(func() { close(m.stop) })
	<-m.done
	return m.Flush(context.Background())
}

var _ Counters = (*Memory)(nil)
