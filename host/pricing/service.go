package pricing

import (
	"context"
	"errors"
	"time"

	"github.com/wasmgate/gateway/store"
)

// Options configure the pricing capability.
type Options struct {
	// Store is the main (fsync'd, sealed) store; overrides live there.
	Store store.Store
	// Now is the clock stamping overrides; time.Now when nil.
	Now func() time.Time
}

// Service is the pricing capability: the catalog with its overrides, and
// the /api/governance/pricing routes managing them.
type Service struct {
	*Catalog
	st  store.Store
	now func() time.Time
}

// New loads the bundled catalog and the stored overrides.
func New(ctx context.Context, o Options) (*Service, error) {
	if o.Store == nil {
		return nil, errors.New("pricing: a store is required")
	}
	c, err := NewCatalog()
	if err != nil {
		return nil, err
	}
	if err := c.loadOverrides(ctx, o.Store); err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{Catalog: c, st: o.Store, now: o.Now}, nil
}
