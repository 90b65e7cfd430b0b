// Package store defines the gateway's persistence interfaces.
//
// Everything above this package talks to these interfaces only; the embedded
// Badger implementation lives in store/badgerstore and a networked backend
// (PostgreSQL) can implement the same contract later without changes to the
// capabilities that use it.
//
// The model is deliberately small: records are opaque byte values addressed by
// a namespace and a key, read and written inside transactions. Capabilities
// encode their own records (JSON) and own their namespaces.
package store

import (
	"context"
	"errors"
)

// ErrNotFound is returned when a record does not exist.
var ErrNotFound = errors.New("store: record not found")

// ErrConflict is returned when a transaction lost a race with another writer;
// Update retries such transactions itself, so callers rarely see it.
var ErrConflict = errors.New("store: transaction conflict")

// Store is a transactional namespaced key-value store. Implementations must
// make a committed Update durable before it returns: anything the gateway
// acknowledged to a client survives a kill -9.
type Store interface {
	// View runs fn in a read-only, consistent snapshot.
	View(ctx context.Context, fn func(Tx) error) error
	// Update runs fn in a read-write transaction and commits it atomically.
	// fn may be run more than once when the transaction conflicts.
	Update(ctx context.Context, fn func(Tx) error) error
	// Ping reports whether the store can serve reads and writes.
	Ping(ctx context.Context) error
	// Close flushes and releases the store.
	Close() error
}

// Tx is one transaction. Values returned by Get and passed to Scan callbacks
// are only valid until the callback or transaction ends unless copied; the
// Badger implementation returns copies, but callers must not rely on that.
type Tx interface {
	// Get returns the value stored under ns/key or ErrNotFound.
	Get(ns, key string) ([]byte, error)
	// Put stores value under ns/key, replacing any previous value.
	Put(ns, key string, value []byte) error
	// Delete removes ns/key; deleting a missing record is not an error.
	Delete(ns, key string) error
	// Scan calls fn for each record of ns whose key starts with opts.Prefix,
	// in ascending key order (descending with opts.Reverse), beginning after
	// opts.After when set. Returning ErrStopScan from fn ends the scan early
	// without error.
	Scan(ns string, opts ScanOptions, fn func(key string, value []byte) error) error
}

// ErrStopScan ends a Scan early without reporting an error.
var ErrStopScan = errors.New("store: stop scan")

// ScanOptions narrows a Scan.
type ScanOptions struct {
	// Prefix restricts the scan to keys starting with it.
	Prefix string
	// After, when set, skips keys up to and including it (exclusive cursor).
	After string
	// Reverse scans in descending key order.
	Reverse bool
}
