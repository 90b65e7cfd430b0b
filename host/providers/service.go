// Package providers owns the upstream provider catalog, the configured
// providers and their keys: the management API under /api/providers and
// /api/keys, start-up reconciliation with the config file, and the
// read-only snapshot inference uses to pick keys and resolve their secrets.
package providers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/secret"
	"github.com/wasmgate/gateway/store"
)

// Store namespaces owned by this package.
const (
	nsProviders = "providers"
	// nsKeys holds keys under "<provider>/<key id>", so one provider's keys
	// are a prefix scan and list in id (creation) order.
	nsKeys = "provider_keys"
)

// Options configures a Service.
type Options struct {
	Store   store.Store
	Secrets *secret.Resolver
	Log     *slog.Logger
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
}

// Service manages providers and keys. Reads are served from an immutable
// snapshot swapped atomically after every write, so the inference hot path
// never touches the store or takes a lock.
type Service struct {
	st      store.Store
	secrets *secret.Resolver
	log     *slog.Logger
	now     func() time.Time

	// mu serialises writers so each snapshot reload sees every committed write.
	mu   sync.Mutex
	snap atomic.Pointer[snapshot]
}

type snapshot struct {
	// providers maps a provider id to its record with Keys filled.
	providers map[string]*Provider
	// names is the sorted list of configured provider ids.
	names []string
}

// New loads the stored providers and keys.
func New(ctx context.Context, o Options) (*Service, error) {
	if o.Store == nil {
		return nil, errors.New("providers: a store is required")
	}
	s := &Service{st: o.Store, secrets: o.Secrets, log: o.Log, now: o.Now}
	if s.secrets == nil {
		s.secrets = &secret.Resolver{}
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if err := s.reload(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// reload rebuilds the snapshot from the store.
func (s *Service) reload(ctx context.Context) error {
	next := &snapshot{providers: map[string]*Provider{}}
	err := s.st.View(ctx, func(tx store.Tx) error {
		ps, err := store.ListJSON[Provider](tx, nsProviders, store.ScanOptions{})
		if err != nil {
			return err
		}
		for i := range ps {
			p := ps[i]
			p.Keys = nil
			next.providers[p.Name] = &p
			next.names = append(next.names, p.Name)
		}
		keys, err := store.ListJSON[Key](tx, nsKeys, store.ScanOptions{})
		if err != nil {
			return err
		}
		for _, k := range keys {
			if p := next.providers[k.Provider]; p != nil {
				p.Keys = append(p.Keys, k)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("providers: load: %w", err)
	}
	sort.Strings(next.names)
	s.snap.Store(next)
	return nil
}

// write runs fn in a store transaction and refreshes the snapshot.
func (s *Service) write(ctx context.Context, fn func(tx store.Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.st.Update(ctx, fn); err != nil {
		return err
	}
	return s.reload(ctx)
}

// Providers returns every configured provider with its keys, sorted by id.
// Returned values share memory with the snapshot: treat them as read-only.
func (s *Service) Providers() []Provider {
	sn := s.snap.Load()
	out := make([]Provider, 0, len(sn.names))
	for _, n := range sn.names {
		out = append(out, *sn.providers[n])
	}
	return out
}

// Provider returns the configured provider name with its keys (unredacted,
// read-only).
func (s *Service) Provider(name string) (Provider, bool) {
	p, ok := s.snap.Load().providers[name]
	if !ok {
		return Provider{}, false
	}
	return *p, true
}

// Keys returns the keys of provider name in creation order, unresolved and
// unredacted (read-only). Use ResolveKey to get usable secrets.
func (s *Service) Keys(name string) []Key {
	if p, ok := s.snap.Load().providers[name]; ok {
		return p.Keys
	}
	return nil
}

// Key returns one key of a provider.
func (s *Service) Key(provider, id string) (Key, bool) {
	for _, k := range s.Keys(provider) {
		if k.ID == id {
			return k, true
		}
	}
	return Key{}, false
}

// AllKeys returns every key of every provider.
func (s *Service) AllKeys() []Key {
	var out []Key
	for _, p := range s.Providers() {
		out = append(out, p.Keys...)
	}
	return out
}

// ResolvedKey is a key whose secret-capable fields (value and key config)
// all hold plain text resolved from env or vault references.
type ResolvedKey struct {
	Key
	// BaseURL is where requests with this key go: the key config's url for
	// self-hosted servers, else the provider's base URL.
	BaseURL string
}

// Secret is the resolved API key value.
func (r ResolvedKey) Secret() string { return r.Value.Value }

// ResolveKey resolves every secret-capable field of k through the secret
// resolver (environment and Vault). The error names the failing field and
// wraps secret.ErrUnresolved.
func (s *Service) ResolveKey(ctx context.Context, k Key) (ResolvedKey, error) {
	k = k.clone()
	for _, f := range k.secretFields() {
		if f.v.IsZero() {
			continue
		}
		v, err := s.secrets.Resolve(ctx, *f.v)
		if err != nil {
			return ResolvedKey{}, fmt.Errorf("provider %s key %q: %s: %w", k.Provider, k.Name, f.path, err)
		}
		*f.v = secret.MustPlain(v)
	}
	rk := ResolvedKey{Key: k}
	if u := k.selfHostedURL(); !u.IsZero() {
		rk.BaseURL = u.Value
	} else if p, ok := s.Provider(k.Provider); ok {
		rk.BaseURL = p.BaseURL()
	}
	return rk, nil
}

// ResolvedKeys returns the enabled keys of provider name with resolved
// secrets. A key whose references do not resolve is skipped and reported
// in the joined error, so one broken key does not take the provider down.
func (s *Service) ResolvedKeys(ctx context.Context, name string) ([]ResolvedKey, error) {
	var out []ResolvedKey
	var errs []error
	for _, k := range s.Keys(name) {
		if !k.Enabled {
			continue
		}
		rk, err := s.ResolveKey(ctx, k)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, rk)
	}
	return out, errors.Join(errs...)
}

// ResolveProxyPassword resolves the provider's proxy password.
func (s *Service) ResolveProxyPassword(ctx context.Context, p Provider) (string, error) {
	if p.ProxyConfig.Password.IsZero() {
		return "", nil
	}
	v, err := s.secrets.Resolve(ctx, p.ProxyConfig.Password)
	if err != nil {
		return "", fmt.Errorf("provider %s: proxy_config.password: %w", p.Name, err)
	}
	return v, nil
}

// SetKeyStatus records the outcome of using or checking a key (for
// example "success" or "list_models_failed") with a description.
func (s *Service) SetKeyStatus(ctx context.Context, provider, keyID, status, description string) error {
	err := s.write(ctx, func(tx store.Tx) error {
		k, err := store.GetJSON[Key](tx, nsKeys, keyRecordID(provider, keyID))
		if err != nil {
			return err
		}
		k.Status, k.Description = status, description
		return store.PutJSON(tx, nsKeys, keyRecordID(provider, keyID), k)
	})
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("key", keyID)
	}
	if err != nil {
		return fmt.Errorf("providers: set status of key %s/%s: %w", provider, keyID, err)
	}
	return nil
}

func keyRecordID(provider, id string) string { return provider + "/" + id }

// CreateProvider validates and stores a new provider (its keys field is ignored).
func (s *Service) CreateProvider(ctx context.Context, p Provider) (Provider, error) {
	if e := validateProvider(&p); e != nil {
		return Provider{}, e
	}
	now := s.now().UTC()
	p.Keys, p.ConfigHash, p.CreatedAt, p.UpdatedAt = nil, "", now, now
	err := s.write(ctx, func(tx store.Tx) error {
		if _, err := tx.Get(nsProviders, p.Name); err == nil {
			return apierr.Conflict("provider_exists", fmt.Sprintf("provider %s already exists; update it with PUT /api/providers/%s", p.Name, p.Name))
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return store.PutJSON(tx, nsProviders, p.Name, p)
	})
	if err != nil {
		return Provider{}, wrapWrite("create provider "+p.Name, err)
	}
	out, _ := s.Provider(p.Name)
	return out, nil
}

// UpdateProvider replaces the writable fields of provider name. Masked
// secrets sent back keep their stored values; config_hash is kept so the
// edit survives restarts until the config file entry changes.
func (s *Service) UpdateProvider(ctx context.Context, name string, p Provider) (Provider, error) {
	if p.Name == "" {
		p.Name = name
	}
	if p.Name != name {
		return Provider{}, apierr.BadRequest("immutable_field", "name", fmt.Sprintf("name is immutable (provider %s)", name))
	}
	old, ok := s.Provider(name)
	if !ok {
		return Provider{}, apierr.NotFound("provider", name)
	}
	keepMaskedProviderSecrets(&p, old)
	if e := validateProvider(&p); e != nil {
		return Provider{}, e
	}
	if e := checkSelfHostedKeys(p, old.Keys); e != nil {
		return Provider{}, e
	}
	err := s.write(ctx, func(tx store.Tx) error {
		cur, err := store.GetJSON[Provider](tx, nsProviders, name)
		if err != nil {
			return err
		}
		p.Keys, p.ConfigHash, p.CreatedAt, p.UpdatedAt = nil, cur.ConfigHash, cur.CreatedAt, s.now().UTC()
		return store.PutJSON(tx, nsProviders, name, p)
	})
	if err != nil {
		return Provider{}, wrapWrite("update provider "+name, err)
	}
	out, _ := s.Provider(name)
	return out, nil
}

// checkSelfHostedKeys refuses a provider update that would leave a
// self-hosted key with no server URL.
func checkSelfHostedKeys(p Provider, keys []Key) *apierr.Error {
	info, _ := Lookup(p.Name)
	if !info.SelfHosted || p.NetworkConfig.BaseURL != "" {
		return nil
	}
	for _, k := range keys {
		if k.selfHostedURL().IsZero() {
			return apierr.BadRequest("invalid_value", "network_config.base_url",
				fmt.Sprintf("network_config.base_url is required: key %q of self-hosted provider %s has no url", k.Name, p.Name))
		}
	}
	return nil
}

// DeleteProvider removes a provider and all its keys.
func (s *Service) DeleteProvider(ctx context.Context, name string) error {
	err := s.write(ctx, func(tx store.Tx) error {
		if _, err := tx.Get(nsProviders, name); err != nil {
			return err
		}
		var ids []string
		if err := tx.Scan(nsKeys, store.ScanOptions{Prefix: name + "/"}, func(key string, _ []byte) error {
			ids = append(ids, key)
			return nil
		}); err != nil {
			return err
		}
		for _, id := range ids {
			if err := tx.Delete(nsKeys, id); err != nil {
				return err
			}
		}
		return tx.Delete(nsProviders, name)
	})
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("provider", name)
	}
	return wrapWrite("delete provider "+name, err)
}

// CreateKey validates and adds a key to provider; the id is generated.
func (s *Service) CreateKey(ctx context.Context, provider string, k Key) (Key, error) {
	p, ok := s.Provider(provider)
	if !ok {
		return Key{}, apierr.NotFound("provider", provider)
	}
	if e := checkKeyIdentity(provider, "", &k); e != nil {
		return Key{}, e
	}
	info, _ := Lookup(provider)
	if e := validateKey(info, &p, &k); e != nil {
		return Key{}, e
	}
	now := s.now().UTC()
	k.ID, k.Provider, k.ConfigHash, k.Status, k.Description = uuid.Must(uuid.NewV7()).String(), provider, "", "", ""
	k.CreatedAt, k.UpdatedAt = now, now
	err := s.write(ctx, func(tx store.Tx) error {
		if err := uniqueKeyName(tx, provider, k.Name, k.ID); err != nil {
			return err
		}
		return store.PutJSON(tx, nsKeys, keyRecordID(provider, k.ID), k)
	})
	if err != nil {
		return Key{}, wrapWrite("create key for "+provider, err)
	}
	out, _ := s.Key(provider, k.ID)
	return out, nil
}

// UpdateKey replaces the writable fields of a key. Secrets sent back masked
// (or left empty) keep their stored values; status, description and
// config_hash are kept.
func (s *Service) UpdateKey(ctx context.Context, provider, id string, k Key) (Key, error) {
	p, ok := s.Provider(provider)
	if !ok {
		return Key{}, apierr.NotFound("provider", provider)
	}
	old, ok := s.Key(provider, id)
	if !ok {
		return Key{}, apierr.NotFound("key", id)
	}
	if e := checkKeyIdentity(provider, id, &k); e != nil {
		return Key{}, e
	}
	keepMaskedSecrets(&k, old)
	info, _ := Lookup(provider)
	if e := validateKey(info, &p, &k); e != nil {
		return Key{}, e
	}
	err := s.write(ctx, func(tx store.Tx) error {
		cur, err := store.GetJSON[Key](tx, nsKeys, keyRecordID(provider, id))
		if err != nil {
			return err
		}
		if err := uniqueKeyName(tx, provider, k.Name, id); err != nil {
			return err
		}
		k.ID, k.Provider, k.ConfigHash, k.Status, k.Description = id, provider, cur.ConfigHash, cur.Status, cur.Description
		k.CreatedAt, k.UpdatedAt = cur.CreatedAt, s.now().UTC()
		return store.PutJSON(tx, nsKeys, keyRecordID(provider, id), k)
	})
	if errors.Is(err, store.ErrNotFound) {
		return Key{}, apierr.NotFound("key", id)
	}
	if err != nil {
		return Key{}, wrapWrite("update key "+id, err)
	}
	out, _ := s.Key(provider, id)
	return out, nil
}

// checkKeyIdentity rejects a body whose read-only id or provider
// contradicts the path: such a body was meant for another key.
func checkKeyIdentity(provider, id string, k *Key) *apierr.Error {
	if k.ID != "" && k.ID != id {
		if id == "" {
			return apierr.BadRequest("immutable_field", "id", "id is assigned by the gateway; omit it")
		}
		return apierr.BadRequest("immutable_field", "id", fmt.Sprintf("id is immutable (key %s)", id))
	}
	if k.Provider != "" && k.Provider != provider {
		return apierr.BadRequest("immutable_field", "provider", fmt.Sprintf("provider is immutable (key belongs to %s)", provider))
	}
	return nil
}

// DeleteKey removes one key.
func (s *Service) DeleteKey(ctx context.Context, provider, id string) error {
	err := s.write(ctx, func(tx store.Tx) error {
		if _, err := tx.Get(nsKeys, keyRecordID(provider, id)); err != nil {
			return err
		}
		return tx.Delete(nsKeys, keyRecordID(provider, id))
	})
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("key", id)
	}
	return wrapWrite("delete key "+id, err)
}

func uniqueKeyName(tx store.Tx, provider, name, selfID string) error {
	return tx.Scan(nsKeys, store.ScanOptions{Prefix: provider + "/"}, func(_ string, raw []byte) error {
		k, err := decodeKey(raw)
		if err != nil {
			return err
		}
		if k.Name == name && k.ID != selfID {
			return apierr.Conflict("key_name_exists", fmt.Sprintf("provider %s already has a key named %q", provider, name))
		}
		return nil
	})
}

// wrapWrite passes API errors through and gives store failures context.
func wrapWrite(what string, err error) error {
	if err == nil {
		return nil
	}
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	return fmt.Errorf("providers: %s: %w", what, err)
}

// validName reports whether name is a catalog id (path parameters).
func validName(name string) *apierr.Error {
	if _, ok := Lookup(name); !ok {
		return apierr.BadRequest("unknown_provider", "provider",
			fmt.Sprintf("unknown provider %q: must be one of %s", name, catalogIDs()))
	}
	return nil
}
