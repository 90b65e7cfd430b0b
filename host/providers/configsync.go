package providers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/google/uuid"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/store"
)

// fileProvider is one entry of the config file's providers section.
type fileProvider struct {
	NetworkConfig            NetworkConfig            `json:"network_config"`
	ConcurrencyAndBufferSize ConcurrencyAndBufferSize `json:"concurrency_and_buffer_size"`
	ProxyConfig              ProxyConfig              `json:"proxy_config"`
	Keys                     []json.RawMessage        `json:"keys"`
}

type plannedKey struct {
	key  Key
	hash string
}

type plannedProvider struct {
	p    Provider
	hash string
	keys []plannedKey
}

// SyncConfig reconciles the config file's providers section (an object
// keyed by provider id) with the store. Entries are matched by provider id
// and key name and carry a config_hash, the sha256 of the entry's canonical
// JSON (a provider's hash leaves its keys out). An entry whose stored hash
// equals the file's is left alone, so API edits survive restarts; a new or
// changed entry creates or overwrites the stored one; stored entries the
// file does not mention are untouched. Any invalid entry fails the whole
// sync with errors naming their paths, before anything is written.
func (s *Service) SyncConfig(ctx context.Context, raw json.RawMessage) error {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return fmt.Errorf("providers: must be an object keyed by provider id: %w", err)
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)

	var plan []plannedProvider
	var errs []error
	for _, name := range names {
		pp, err := planProvider(name, entries[name])
		if err != nil {
			errs = append(errs, err...)
			continue
		}
		plan = append(plan, pp)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}

	created, updated := 0, 0
	err := s.write(ctx, func(tx store.Tx) error {
		created, updated = 0, 0
		now := s.now().UTC()
		for _, pp := range plan {
			cur, err := store.GetJSON[Provider](tx, nsProviders, pp.p.Name)
			switch {
			case errors.Is(err, store.ErrNotFound):
				p := pp.p
				p.ConfigHash, p.CreatedAt, p.UpdatedAt = pp.hash, now, now
				if err := store.PutJSON(tx, nsProviders, p.Name, p); err != nil {
					return err
				}
				created++
			case err != nil:
				return err
			case cur.ConfigHash != pp.hash:
				p := pp.p
				p.ConfigHash, p.CreatedAt, p.UpdatedAt = pp.hash, cur.CreatedAt, now
				if err := store.PutJSON(tx, nsProviders, p.Name, p); err != nil {
					return err
				}
				updated++
			}
			stored := map[string]Key{}
			if err := tx.Scan(nsKeys, store.ScanOptions{Prefix: pp.p.Name + "/"}, func(_ string, raw []byte) error {
				k, err := decodeKey(raw)
				if err == nil {
					stored[k.Name] = k
				}
				return err
			}); err != nil {
				return err
			}
			for _, pk := range pp.keys {
				k := pk.key
				k.Provider, k.ConfigHash, k.UpdatedAt = pp.p.Name, pk.hash, now
				if old, ok := stored[k.Name]; ok {
					if old.ConfigHash == pk.hash {
						continue
					}
					k.ID, k.CreatedAt, k.Status, k.Description = old.ID, old.CreatedAt, old.Status, old.Description
					updated++
				} else {
					k.ID, k.CreatedAt = uuid.Must(uuid.NewV7()).String(), now
					created++
				}
				if err := store.PutJSON(tx, nsKeys, keyRecordID(k.Provider, k.ID), k); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("providers: sync config: %w", err)
	}
	s.log.Info("providers synced from config", "entries", len(plan), "created", created, "updated", updated)
	return nil
}

// planProvider decodes and validates one file entry.
func planProvider(name string, raw json.RawMessage) (plannedProvider, []error) {
	at := "providers." + name
	if _, ok := Lookup(name); !ok {
		return plannedProvider{}, []error{fmt.Errorf("%s: unknown provider id; must be one of %s", at, catalogIDs())}
	}
	var fp fileProvider
	if e := decodeBody(raw, &fp, providerSecretPaths()); e != nil {
		return plannedProvider{}, []error{pathError(at, e)}
	}
	hash, err := canonicalHash(raw, true)
	if err != nil {
		return plannedProvider{}, []error{fmt.Errorf("%s: %w", at, err)}
	}
	p := Provider{Name: name, NetworkConfig: fp.NetworkConfig, ConcurrencyAndBufferSize: fp.ConcurrencyAndBufferSize, ProxyConfig: fp.ProxyConfig}
	if e := validateProvider(&p); e != nil {
		return plannedProvider{}, []error{pathError(at, e)}
	}
	pp := plannedProvider{p: p, hash: hash}
	info, _ := Lookup(name)
	seen := map[string]int{}
	var errs []error
	for i, kraw := range fp.Keys {
		kat := fmt.Sprintf("%s.keys[%d]", at, i)
		var in keyInput
		if e := decodeBody(kraw, &in, keySecretPaths()); e != nil {
			errs = append(errs, pathError(kat, e))
			continue
		}
		if f := readOnlyKeyField(&in.Key); f != "" {
			errs = append(errs, fmt.Errorf("%s.%s: is set by the gateway and may not appear in the config file", kat, f))
			continue
		}
		k := in.toKey()
		if e := validateKey(info, &p, &k); e != nil {
			errs = append(errs, pathError(kat, e))
			continue
		}
		if j, dup := seen[k.Name]; dup {
			errs = append(errs, fmt.Errorf("%s.name: duplicate key name %q (also %s.keys[%d])", kat, k.Name, at, j))
			continue
		}
		seen[k.Name] = i
		kh, err := canonicalHash(kraw, false)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", kat, err))
			continue
		}
		pp.keys = append(pp.keys, plannedKey{key: k, hash: kh})
	}
	return pp, errs
}

func readOnlyKeyField(k *Key) string {
	switch {
	case k.ID != "":
		return "id"
	case k.Provider != "":
		return "provider"
	case k.ConfigHash != "":
		return "config_hash"
	case k.Status != "":
		return "status"
	case k.Description != "":
		return "description"
	case !k.CreatedAt.IsZero():
		return "created_at"
	case !k.UpdatedAt.IsZero():
		return "updated_at"
	}
	return ""
}

// pathError turns an API validation error into "path.field: message".
func pathError(at string, e *apierr.Error) error {
	if e.Detail.Param != "" {
		return fmt.Errorf("%s.%s: %s", at, e.Detail.Param, e.Detail.Message)
	}
	return fmt.Errorf("%s: %s", at, e.Detail.Message)
}

// canonicalHash is the sha256 of the entry's canonical JSON (object keys
// sorted, insignificant whitespace removed), so re-formatting the config
// file does not count as a change. dropKeys leaves a provider's keys out:
// they carry their own hashes.
func canonicalHash(raw json.RawMessage, dropKeys bool) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("canonical JSON: %w", err)
	}
	if m, ok := v.(map[string]any); ok && dropKeys {
		delete(m, "keys")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("canonical JSON: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
