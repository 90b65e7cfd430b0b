package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/store"
)

// syncConfig reconciles the config file's `mcp_clients` into the store by
// name, like providers and webhooks: an entry whose config_hash matches
// the stored one is left alone (API edits survive restarts); a changed
// entry overwrites the client's settings and keeps its id. Clients missing
// from the file are kept. OAuth clients need an interactive authorization
// and are created through the API only.
func (s *Service) syncConfig(ctx context.Context, raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return fmt.Errorf("config: mcp_clients: must be an array of client objects: %w", err)
	}
	type planned struct {
		c    Client
		hash string
	}
	plans := make([]planned, 0, len(items))
	names := map[string]int{}
	for i, item := range items {
		badf := func(field, msg string) error {
			if field == "" {
				return fmt.Errorf("config: mcp_clients[%d]: %s", i, msg)
			}
			return fmt.Errorf("config: mcp_clients[%d].%s: %s", i, field, msg)
		}
		var in Input
		if e := apierr.DecodeJSON(item, &in); e != nil {
			return badf(e.Detail.Param, e.Detail.Message)
		}
		c, ferr := in.normalize(s.o.AllowStdio)
		if ferr != nil {
			return badf(ferr.field, ferr.msg)
		}
		if c.AuthType == AuthOAuth {
			return badf("auth_type", "OAuth clients need an interactive authorization: create them with POST /api/mcp/client")
		}
		if j, dup := names[c.Name]; dup {
			return badf("name", fmt.Sprintf("duplicate name %q (also mcp_clients[%d])", c.Name, j))
		}
		names[c.Name] = i
		for k, v := range c.Headers {
			if _, err := s.secrets.Resolve(ctx, v); err != nil {
				return badf("headers."+k, err.Error())
			}
		}
		plans = append(plans, planned{c: c, hash: configHash(item)})
	}
	return s.update(ctx, func(tx store.Tx) error {
		for _, p := range plans {
			now := s.now().UTC()
			c := p.c
			oldName := ""
			id, err := tx.Get(nsNames, c.Name)
			switch {
			case err == nil:
				old, err := store.GetJSON[Client](tx, nsClients, string(id))
				if err != nil {
					return err
				}
				if old.ConfigHash == p.hash {
					continue
				}
				if old.ConnectionType != c.ConnectionType || old.AuthType != c.AuthType {
					return fmt.Errorf("config: mcp_clients: %s: connection_type and auth_type cannot change (delete the client first)", c.Name)
				}
				c.ID, c.CreatedAt, oldName = old.ID, old.CreatedAt, old.Name
			case errors.Is(err, store.ErrNotFound):
				c.ID, c.CreatedAt = newID(), now
			default:
				return err
			}
			c.ConfigHash, c.UpdatedAt = p.hash, now
			if err := putClient(tx, &c, oldName); err != nil {
				return fmt.Errorf("config: mcp_clients: %s: %w", c.Name, err)
			}
			s.log.Info("mcp: client synced from config", "name", c.Name, "id", c.ID)
		}
		return nil
	})
}

// configHash is the sha256 of the entry's canonical JSON, so reformatting
// the file does not count as a change.
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

// pruneFlows drops authorization flows past their expiry (abandoned
// authorize URLs).
func (s *Service) pruneFlows(ctx context.Context) {
	now := s.now()
	err := s.update(ctx, func(tx store.Tx) error {
		var expired []string
		err := tx.Scan(nsFlows, store.ScanOptions{}, func(k string, v []byte) error {
			var f flow
			if json.Unmarshal(v, &f) == nil && now.After(f.ExpiresAt.Add(time.Hour)) {
				expired = append(expired, k)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range expired {
			if err := tx.Delete(nsFlows, k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		s.log.Warn("mcp: prune OAuth flows", "error", err)
	}
}
