// Package governance owns virtual keys, teams and customers, and admits
// every inference request against them: the virtual key must be valid and
// allow the model, and each level of the customer -> team -> virtual key
// hierarchy must have budget and rate-limit room. Admission reserves the
// estimated cost and tokens in store/counters before the upstream call and
// settles the real usage afterwards, so concurrent requests cannot overspend.
package governance

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"sort"
	"sync/atomic"
	"time"

	"github.com/wasmgate/gateway/host/inference"
	"github.com/wasmgate/gateway/host/mcpaccess"
	"github.com/wasmgate/gateway/store"
	"github.com/wasmgate/gateway/store/counters"
)

// Store namespaces owned by this package.
const (
	nsCustomers     = "governance_customers"      // id -> Customer
	nsTeams         = "governance_teams"          // id -> Team (CustomerIDs not stored here)
	nsTeamCustomers = "governance_team_customers" // team id/customer id -> "" (many-to-many)
	nsVirtualKeys   = "governance_virtual_keys"   // id -> VirtualKey (with Hash)
	nsKeyHashes     = "governance_vk_hashes"      // hash -> id
	nsMeta          = "governance_meta"           // "vk_hash_key" -> HMAC key
)

// Pricer prices usage in USD; host/pricing's Catalog implements it. known
// is false when the model has no price.
type Pricer interface {
	Cost(provider, model string, u inference.Usage) (usd float64, known bool)
}

// References are records outside governance that name its teams and
// virtual keys (host/users' team memberships and virtual-key attachments).
// They are told of a deletion inside the deleting transaction, so they go
// with the entity atomically; they must live in the same store.
type References interface {
	// TeamDeleted removes what refers to team id.
	TeamDeleted(tx store.Tx, id string) error
	// VirtualKeyDeleted removes what refers to virtual key id.
	VirtualKeyDeleted(tx store.Tx, id string) error
}

// Options configures the Service.
type Options struct {
	// Store is the main (fsync'd, sealed) store.
	Store store.Store
	// Counters hold budget and rate-limit usage.
	Counters counters.Counters
	// Pricer estimates and settles cost; nil makes every request cost 0,
	// so budgets then never fill (rate limits still apply).
	Pricer Pricer
	// RequireVirtualKey refuses inference requests without a virtual key.
	RequireVirtualKey bool
	// DefaultCompletionTokens is the completion estimate of a request that
	// names no max_tokens (default 1024).
	DefaultCompletionTokens int64
	// Now is the clock (windows, expiry); time.Now when nil.
	Now func() time.Time
	// References are cleaned when a team or virtual key is deleted; nil
	// when nothing refers to them.
	References References
	// MCPClients validates the MCP clients of mcp_configs; nil makes
	// every client unknown.
	MCPClients MCPClients
	// Rand returns a number in [0, 1) for weighted provider routing; nil
	// uses math/rand/v2 (safe for concurrent use). Tests inject a seeded
	// source; it must then be safe for concurrent use itself.
	Rand func() float64
	Log  *slog.Logger
}

// Service is the governance capability.
type Service struct {
	st         store.Store
	counters   counters.Counters
	pricer     Pricer
	log        *slog.Logger
	now        func() time.Time
	rnd        func() float64
	mcpClients MCPClients
	refs       References
	require    bool
	defTok     int64
	hashKey    []byte
	hashPool   hashPool
	snap       atomic.Pointer[snapshot]
	// refreshHook lets tests make the cache refresh fail.
	refreshHook func() error
}

// New loads governance entities into the admission cache.
func New(ctx context.Context, o Options) (*Service, error) {
	if o.Store == nil || o.Counters == nil {
		return nil, errors.New("governance: a store and counters are required")
	}
	s := &Service{st: o.Store, counters: o.Counters, pricer: o.Pricer, log: o.Log, now: o.Now, rnd: o.Rand, mcpClients: o.MCPClients, refs: o.References,
		require: o.RequireVirtualKey, defTok: o.DefaultCompletionTokens}
	if s.rnd == nil {
		s.rnd = mrand.Float64
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.defTok <= 0 {
		s.defTok = 1024
	}
	if err := s.loadHashKey(ctx); err != nil {
		return nil, err
	}
	if err := s.refresh(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// loadHashKey reads (or creates once) the key of the virtual-key hash: a
// keyed hash means a leaked store alone cannot be brute-forced offline.
func (s *Service) loadHashKey(ctx context.Context) error {
	return s.st.Update(ctx, func(tx store.Tx) error {
		k, err := tx.Get(nsMeta, "vk_hash_key")
		if err == nil && len(k) == 32 {
			s.hashKey = append([]byte(nil), k...)
			return nil
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("governance: read hash key: %w", err)
		}
		k = make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return err
		}
		s.hashKey = k
		return tx.Put(nsMeta, "vk_hash_key", k)
	})
}

// snapshot is the immutable admission cache, swapped whole on every change
// so the hot path reads it without locks.
type snapshot struct {
	byHash    map[[32]byte]*entry
	keys      map[string]*VirtualKey
	teams     map[string]*Team
	customers map[string]*Customer
	// mcpScoped is set when some key has mcp_configs: until then chat
	// requests skip the key lookup of ChatScope.
	mcpScoped bool
}

// entry is a virtual key with its hierarchy and rules resolved.
type entry struct {
	vk        *VirtualKey
	hash      [32]byte
	team      *Team
	customer  *Customer
	providers map[string]*providerRule // nil: every provider
	// routes are the provider configs in routing order (buildRoutes), for
	// requests that name a bare model.
	routes []route
	// mcp is the key's MCP tool policy; nil allows every tool.
	mcp *mcpaccess.Policy
	// counterKeys are the budget, requests and tokens counter names of the
	// key, its team and its customer, built once here rather than per request.
	counterKeys [3][3]string
}

func counterKeys(prefix string) [3]string {
	return [3]string{prefix + "/budget", prefix + "/requests", prefix + "/tokens"}
}

type providerRule struct {
	// models are allowed model names without the provider prefix (modelSet).
	models map[string]bool // nil: every model
	keys   map[string]bool // nil: every key
}

// refresh rebuilds the admission cache from the store.
func (s *Service) refresh(ctx context.Context) error {
	if s.refreshHook != nil {
		if err := s.refreshHook(); err != nil {
			return err
		}
	}
	sn := &snapshot{byHash: map[[32]byte]*entry{}, keys: map[string]*VirtualKey{}, teams: map[string]*Team{},
		customers: map[string]*Customer{}}
	err := s.st.View(ctx, func(tx store.Tx) error {
		cs, err := store.ListJSON[Customer](tx, nsCustomers, store.ScanOptions{})
		if err != nil {
			return err
		}
		for i := range cs {
			sn.customers[cs[i].ID] = &cs[i]
		}
		ts, err := store.ListJSON[Team](tx, nsTeams, store.ScanOptions{})
		if err != nil {
			return err
		}
		for i := range ts {
			sn.teams[ts[i].ID] = &ts[i]
		}
		vks, err := store.ListJSON[VirtualKey](tx, nsVirtualKeys, store.ScanOptions{})
		if err != nil {
			return err
		}
		for i := range vks {
			vk := &vks[i]
			sn.keys[vk.ID] = vk
			e := &entry{vk: vk}
			e.counterKeys[0] = counterKeys("vk/" + vk.ID)
			if _, err := hexDecode32(vk.Hash, &e.hash); err != nil {
				return fmt.Errorf("virtual key %s: %w", vk.ID, err)
			}
			if vk.TeamID != "" {
				e.team = sn.teams[vk.TeamID]
				if e.team != nil && e.team.CustomerID != "" {
					e.customer = sn.customers[e.team.CustomerID]
				}
			} else if vk.CustomerID != "" {
				e.customer = sn.customers[vk.CustomerID]
			}
			if e.team != nil {
				e.counterKeys[1] = counterKeys("team/" + e.team.ID)
			}
			if e.customer != nil {
				e.counterKeys[2] = counterKeys("customer/" + e.customer.ID)
			}
			if len(vk.ProviderConfigs) > 0 {
				e.providers = map[string]*providerRule{}
				for _, pc := range vk.ProviderConfigs {
					r := &providerRule{models: modelSet(pc.Provider, pc.AllowedModels)}
					if len(pc.KeyIDs) > 0 {
						r.keys = setOf(pc.KeyIDs)
					}
					e.providers[pc.Provider] = r
				}
				e.routes = buildRoutes(vk.ProviderConfigs)
			}
			if e.mcp = mcpPolicy(vk); e.mcp != nil {
				sn.mcpScoped = true
			}
			sn.byHash[e.hash] = e
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("governance: refresh cache: %w", err)
	}
	s.snap.Store(sn)
	return nil
}

// refreshAfterWrite refreshes after a committed change; a failure is
// logged (the change is durable, the cache catches up on the next change).
func (s *Service) refreshAfterWrite(ctx context.Context) error {
	err := s.refresh(context.WithoutCancel(ctx))
	if err != nil {
		s.log.Error("governance cache not refreshed after a change", "error", err)
	}
	return err
}

func setOf(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TeamName returns the name of team id; ok is false for an unknown team.
func (s *Service) TeamName(ctx context.Context, id string) (name string, ok bool, err error) {
	err = s.st.View(ctx, func(tx store.Tx) error {
		t, err := store.GetJSON[Team](tx, nsTeams, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		name, ok = t.Name, true
		return nil
	})
	return name, ok, err
}

// VirtualKeyExists reports whether virtual key id exists.
func (s *Service) VirtualKeyExists(ctx context.Context, id string) (bool, error) {
	var ok bool
	err := s.st.View(ctx, func(tx store.Tx) error {
		_, err := tx.Get(nsVirtualKeys, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		ok = err == nil
		return err
	})
	return ok, err
}
