package pricing

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/wasmgate/gateway/store"
)

// nsOverrides holds one record per override, keyed provider + "/" + model
// (lower case): provider ids never contain '/', model ids may.
const nsOverrides = "pricing_overrides"

// Override is an operator's price for one provider and model; it beats the
// bundled catalog.
type Override struct {
	Provider  string    `json:"provider"`
	Model     string    `json:"model"`
	Price     Price     `json:"price"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func overrideKey(provider, model string) string {
	return strings.ToLower(provider) + "/" + strings.ToLower(model)
}

// loadOverrides reads every override from st and publishes the snapshot.
func (c *Catalog) loadOverrides(ctx context.Context, st store.Store) error {
	var list []Override
	err := st.View(ctx, func(tx store.Tx) error {
		var err error
		list, err = store.ListJSON[Override](tx, nsOverrides, store.ScanOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("pricing: load overrides: %w", err)
	}
	c.publish(list)
	return nil
}

// publish replaces the override snapshot; lookups in flight keep the old one.
func (c *Catalog) publish(list []Override) {
	sort.Slice(list, func(i, j int) bool {
		if list[i].Provider != list[j].Provider {
			return list[i].Provider < list[j].Provider
		}
		return list[i].Model < list[j].Model
	})
	set := &overrideSet{rates: map[string]table{}, list: list}
	for i := range list {
		o := &list[i]
		t := set.rates[o.Provider]
		if t == nil {
			t = table{}
			set.rates[o.Provider] = t
		}
		t[strings.ToLower(o.Model)] = o.Price.rates()
	}
	c.over.Store(set)
}

// Overrides returns the current overrides sorted by provider and model.
func (c *Catalog) Overrides() []Override {
	return append([]Override(nil), c.over.Load().list...)
}

// override returns the override of provider and model, if any.
func (c *Catalog) override(provider, model string) (Override, bool) {
	for _, o := range c.over.Load().list {
		if o.Provider == provider && strings.EqualFold(o.Model, model) {
			return o, true
		}
	}
	return Override{}, false
}

// putOverride stores o (keeping the creation time of the one it replaces)
// and publishes the new snapshot. The store write is the commit point: a
// failed write changes nothing.
func (c *Catalog) putOverride(ctx context.Context, st store.Store, o Override, now time.Time) (Override, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := overrideKey(o.Provider, o.Model)
	err := st.Update(ctx, func(tx store.Tx) error {
		o.CreatedAt, o.UpdatedAt = now, now
		prev, err := store.GetJSON[Override](tx, nsOverrides, key)
		switch {
		case err == nil:
			o.CreatedAt = prev.CreatedAt
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		return store.PutJSON(tx, nsOverrides, key, o)
	})
	if err != nil {
		return Override{}, fmt.Errorf("pricing: store override %s: %w", key, err)
	}
	return o, c.reload(ctx, st)
}

// deleteOverride removes the override; false when there was none.
func (c *Catalog) deleteOverride(ctx context.Context, st store.Store, provider, model string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := overrideKey(provider, model)
	found := false
	err := st.Update(ctx, func(tx store.Tx) error {
		_, err := tx.Get(nsOverrides, key)
		if errors.Is(err, store.ErrNotFound) {
			found = false
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		return tx.Delete(nsOverrides, key)
	})
	if err != nil {
		return false, fmt.Errorf("pricing: delete override %s: %w", key, err)
	}
	if !found {
		return false, nil
	}
	return true, c.reload(ctx, st)
}

// reload re-reads the overrides after a write so the snapshot is exactly
// what the store holds (the caller holds c.mu, serialising writers).
func (c *Catalog) reload(ctx context.Context, st store.Store) error {
	return c.loadOverrides(ctx, st)
}
