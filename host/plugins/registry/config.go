package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/store"
)

// planned is one validated config-file entry.
type planned struct {
	rec  Record
	hash string
}

// planConfig decodes and validates the config file's `plugins` array. Any
// invalid entry fails start-up with an error naming plugins[i].field; a
// module that is missing or fails to load is not invalid config (it may be
// deployed later) and only shows as status error.
func (s *Service) planConfig(raw json.RawMessage) ([]planned, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(t, &items); err != nil {
		return nil, fmt.Errorf("config: plugins: must be an array of plugin objects: %w", err)
	}
	var errs []error
	names := map[string]int{}
	plan := make([]planned, 0, len(items))
	for i, item := range items {
		bad := func(e *apierr.Error) {
			if e.Detail.Param == "" {
				errs = append(errs, fmt.Errorf("config: plugins[%d]: %s", i, e.Detail.Message))
				return
			}
			errs = append(errs, fmt.Errorf("config: plugins[%d].%s: %s", i, e.Detail.Param, e.Detail.Message))
		}
		var in Input
		if e := apierr.DecodeJSON(item, &in); e != nil {
			bad(e)
			continue
		}
		r, e := s.normalize(in)
		if e != nil {
			bad(e)
			continue
		}
		if j, dup := names[r.Name]; dup {
			bad(apierr.BadRequest("duplicate_name", "name", fmt.Sprintf("duplicate name %q (also plugins[%d])", r.Name, j)))
			continue
		}
		names[r.Name] = i
		plan = append(plan, planned{rec: r, hash: configHash(item)})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return plan, nil
}

// syncConfig reconciles planned entries with the store by name, like every
// config entity: a stored plugin whose config_hash equals the entry's is
// left alone (API edits survive restarts); a new entry is created; a changed
// entry overwrites the stored settings (the file wins). Stored plugins the
// file does not mention are untouched.
func (s *Service) syncConfig(ctx context.Context, plan []planned) error {
	if len(plan) == 0 {
		return nil
	}
	created, updated := 0, 0
	err := s.st.Update(ctx, func(tx store.Tx) error {
		created, updated = 0, 0
		now := s.now().UTC()
		for _, p := range plan {
			r := p.rec
			r.ConfigHash, r.CreatedAt, r.UpdatedAt = p.hash, now, now
			cur, err := store.GetJSON[Record](tx, nsPlugins, r.Name)
			switch {
			case errors.Is(err, store.ErrNotFound):
				created++
			case err != nil:
				return err
			case cur.ConfigHash == p.hash:
				continue
			default:
				r.CreatedAt = cur.CreatedAt
				updated++
			}
			if err := store.PutJSON(tx, nsPlugins, r.Name, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("plugins: sync config: %w", err)
	}
	s.log.Info("plugins synced from config", "entries", len(plan), "created", created, "updated", updated)
	return nil
}

// configHash is the sha256 of the entry's canonical JSON (keys sorted,
// whitespace dropped), so reformatting the file is not a change.
func configHash(item json.RawMessage) string {
	canon := []byte(item)
	dec := json.NewDecoder(bytes.NewReader(item))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) == nil {
		if b, err := json.Marshal(v); err == nil {
			canon = b
		}
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}
