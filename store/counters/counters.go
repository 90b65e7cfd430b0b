// Package counters holds windowed usage counters (spend, requests, tokens)
// that admission control reserves against and settles afterwards.
//
// Counters is the contract governance uses; Memory is the embedded
// implementation: atomic in memory (one lock around a map, so a reservation
// across several counters is all-or-nothing) and persisted to a store.Store
// off the hot path. A shared backend (Redis, PostgreSQL) can implement the
// same interface later so several gateway nodes share one budget without
// changes to governance.
package counters

import (
	"context"
	"time"
)

// Charge is one counter touched by a reservation.
type Charge struct {
	// Key names the counter, e.g. "vk/<id>/budget".
	Key string
	// Window is the start of the window the charge belongs to. A counter
	// whose stored window differs starts the new window at zero.
	Window time.Time
	// Limit is the most the counter may reach in the window; 0 or less
	// means unlimited (the charge is only counted).
	Limit int64
	// Amount is what the request reserves.
	Amount int64
}

// Counters reserves and settles windowed amounts.
type Counters interface {
	// Reserve adds every charge's Amount if none would pass its Limit, as
	// one atomic step: either all are added or none. It returns -1 when
	// the reservation was made, else the index of the first charge that
	// refused. A counter already at its limit refuses any new charge, even
	// of amount 0.
	Reserve(ctx context.Context, charges []Charge) (refused int, err error)
	// Adjust adds delta (negative to release) to the counter of key in
	// window. A window that is no longer the counter's current one is
	// ignored: its usage went with the window that reset.
	Adjust(ctx context.Context, key string, window time.Time, delta int64) error
	// Get returns the amount used in window (0 when the counter's current
	// window is another one).
	Get(ctx context.Context, key string, window time.Time) (int64, error)
	// Delete forgets every counter whose key starts with prefix.
	Delete(ctx context.Context, prefix string) error
}
