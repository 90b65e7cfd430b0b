package webhooks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/secret"
	"github.com/wasmgate/gateway/store"
)

// configEntry is one element of the config file's `webhooks` array. It is
// the only input that may carry a signing secret.
type configEntry struct {
	Input
	Secret *secret.Value `json:"secret"`
}

// syncConfig reconciles config-file endpoints into the store by name. An
// entry whose config_hash matches the stored one is left alone, so edits
// made through the API survive restarts; a changed entry overwrites the
// endpoint's settings (the file wins) but keeps its id, history and, when
// the entry names no secret, its signing secret. Endpoints missing from the
// file are kept: they may have been created through the API.
func (s *Service) syncConfig(ctx context.Context, raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return fmt.Errorf("config: webhooks: must be an array of endpoint objects: %w", err)
	}
	type planned struct {
		in     Endpoint
		secret *secret.Value
		hash   string
	}
	plans := make([]planned, 0, len(items))
	names := map[string]int{}
	for i, item := range items {
		bad := func(field, msg string) error {
			if field == "" {
				return fmt.Errorf("config: webhooks[%d]: %s", i, msg)
			}
			return fmt.Errorf("config: webhooks[%d].%s: %s", i, field, msg)
		}
		var ce configEntry
		if e := apierr.DecodeJSON(item, &ce); e != nil {
			return bad(e.Detail.Param, e.Detail.Message)
		}
		ep, ferr := ce.normalize()
		if ferr != nil {
			return bad(ferr.field, ferr.msg)
		}
		if j, dup := names[ep.Name]; dup {
			return bad("name", fmt.Sprintf("duplicate name %q (also webhooks[%d])", ep.Name, j))
		}
		names[ep.Name] = i
		for name, v := range ep.Headers {
			// Resolve now so a missing variable fails the start, not every delivery.
			if _, err := s.secrets.Resolve(ctx, v); err != nil {
				return bad("headers."+name, err.Error())
			}
		}
		if ce.Secret != nil && !ce.Secret.IsZero() {
			val, err := s.secrets.Resolve(ctx, *ce.Secret)
			if err != nil {
				return bad("secret", err.Error())
			}
			if _, err := ParseSecret(val); err != nil {
				return bad("secret", err.Error())
			}
		} else {
			ce.Secret = nil
		}
		plans = append(plans, planned{in: ep, secret: ce.Secret, hash: configHash(item)})
	}
	return s.update(ctx, func(tx store.Tx) error {
		for _, p := range plans {
			now := s.now().UTC()
			var r record
			old, err := getEndpointByName(tx, p.in.Name)
			switch {
			case err == nil && old.ConfigHash == p.hash:
				continue
			case err == nil:
				r = old
				applySettings(&r.Endpoint, &p.in)
			case errors.Is(err, store.ErrNotFound):
				r = record{Endpoint: p.in}
				r.ID, r.CreatedAt = newEndpointID(), now
				r.Secret = secret.MustPlain(NewSecret())
			default:
				return err
			}
			if p.secret != nil {
				r.Secret = *p.secret
			}
			r.ConfigHash, r.UpdatedAt = p.hash, now
			if err := putEndpoint(tx, &r, old.Name); err != nil {
				return fmt.Errorf("config: webhooks: %s: %w", p.in.Name, err)
			}
			s.log.Info("webhooks: endpoint synced from config", "name", r.Name, "id", r.ID)
		}
		return nil
	})
}

// getEndpointByName loads the endpoint holding name.
func getEndpointByName(tx store.Tx, name string) (record, error) {
	id, err := tx.Get(nsNames, name)
	if err != nil {
		return record{}, err
	}
	return store.GetJSON[record](tx, nsEndpoints, string(id))
}

// applySettings copies the writable settings of src onto dst, leaving
// identity, stats and bookkeeping alone.
func applySettings(dst, src *Endpoint) {
	dst.Name, dst.URL, dst.Events, dst.Headers = src.Name, src.URL, src.Events, src.Headers
	dst.IncludeResponse, dst.AllowPrivateNetwork, dst.Disabled = src.IncludeResponse, src.AllowPrivateNetwork, src.Disabled
	dst.Tuning = src.Tuning
}

// configHash is the sha256 of the entry's canonical JSON (object keys
// sorted, insignificant whitespace dropped), so reformatting the file or
// reordering keys does not count as a change.
func configHash(item json.RawMessage) string {
	var v any
	canon := []byte(item)
	if json.Unmarshal(item, &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			canon = b
		}
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}
