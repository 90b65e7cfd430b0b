package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/store"
)

// APIKey is a management API key. The secret is stored only as a hash and
// shown once, in the create response.
type APIKey struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	Scopes     []string   `json:"scopes"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	Hash       string     `json:"hash,omitempty"`
}

func (k APIKey) public() APIKey { k.Hash = ""; return k }

type createAPIKeyRequest struct {
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	ExpiresAt *time.Time `json:"expires_at"`
}

func (s *Service) apiKeyPrincipal(ctx context.Context, tok string) *Principal {
	var key *APIKey
	_ = s.st.View(ctx, func(tx store.Tx) error {
		id, err := tx.Get(nsAPIKeyIndex, tokenHash(tok))
		if err != nil {
			return nil
		}
		k, err := store.GetJSON[APIKey](tx, nsAPIKeys, string(id))
		if err == nil && constantTimeEqual(k.Hash, tokenHash(tok)) {
			key = &k
		}
		return nil
	})
	if key == nil || (key.ExpiresAt != nil && !s.now().Before(*key.ExpiresAt)) {
		return nil
	}
	return &Principal{Kind: KindAPIKey, Subject: key.ID, Scopes: key.Scopes}
}

// IsAPIKey reports whether the request authenticated with a management API
// key (some routes accept only that).
func IsAPIKey(c *fiber.Ctx) bool {
	p := FromCtx(c)
	return p != nil && p.Kind == KindAPIKey
}

func validScope(s string) bool {
	if s == "*" {
		return true
	}
	res, op, ok := strings.Cut(s, ":")
	return ok && res != "" && op != "" && !strings.ContainsAny(s, " \t")
}

// scopeWithin reports whether holder may hand out scope sc: a key minted by a
// user or another key never carries more than its creator. Wildcards need
// the same or a wider wildcard, conservatively.
func scopeWithin(holder []string, sc string) bool {
	if slices.Contains(holder, "*") {
		return true
	}
	if sc == "*" {
		return false
	}
	res, op, _ := strings.Cut(sc, ":")
	if op == "*" {
		return slices.ContainsFunc(holder, func(h string) bool { return strings.EqualFold(h, res+":*") })
	}
	return Allows(holder, Perm(res, op))
}

func (s *Service) createAPIKey(c *fiber.Ctx) error {
	var req createAPIKeyRequest
	if e := apierr.DecodeJSON(c.Body(), &req); e != nil {
		return e
	}
	req.Name = strings.TrimSpace(req.Name)
	if req.Name == "" {
		return apierr.BadRequest("missing_field", "name", "name is required")
	}
	if len(req.Scopes) == 0 {
		return apierr.BadRequest("missing_field", "scopes", `scopes is required: a list of "Resource:Operation", "Resource:*" or "*"`)
	}
	for i, sc := range req.Scopes {
		if !validScope(sc) {
			return apierr.BadRequest("invalid_value", fmt.Sprintf("scopes[%d]", i),
				fmt.Sprintf(`scope %q must be "Resource:Operation", "Resource:*" or "*"`, sc))
		}
	}
	if p := FromCtx(c); p != nil && !p.Bypass {
		for i, sc := range req.Scopes {
			if !scopeWithin(p.Scopes, sc) {
				return apierr.Forbidden("privilege_escalation",
					fmt.Sprintf("scope %q is not within this credential's own permissions", sc)).WithParam(fmt.Sprintf("scopes[%d]", i))
			}
		}
	}
	if req.ExpiresAt != nil && !req.ExpiresAt.After(s.now()) {
		return apierr.BadRequest("invalid_value", "expires_at", "expires_at must be in the future")
	}
	tok := APIKeyPrefix + randomToken(32)
	key := APIKey{
		ID: uuid.Must(uuid.NewV7()).String(), Name: req.Name, Prefix: tok[:len(APIKeyPrefix)+6],
		Scopes: req.Scopes, CreatedAt: s.now().UTC(), ExpiresAt: req.ExpiresAt, Hash: tokenHash(tok),
	}
	err := s.st.Update(c.UserContext(), func(tx store.Tx) error {
		if err := store.PutJSON(tx, nsAPIKeys, key.ID, key); err != nil {
			return err
		}
		return tx.Put(nsAPIKeyIndex, key.Hash, []byte(key.ID))
	})
	if err != nil {
		return apierr.Internal(err)
	}
	return c.Status(http.StatusCreated).JSON(fiber.Map{"api_key": key.public(), "key": tok,
		"message": "store the key now: it is not shown again"})
}

func (s *Service) listAPIKeys(c *fiber.Ctx) error {
	var keys []APIKey
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		keys, err = store.ListJSON[APIKey](tx, nsAPIKeys, store.ScanOptions{})
		return err
	})
	if err != nil {
		return apierr.Internal(err)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ID < keys[j].ID })
	out := make([]APIKey, 0, len(keys))
	for _, k := range keys {
		out = append(out, k.public())
	}
	return c.JSON(fiber.Map{"api_keys": out, "count": len(out), "total_count": len(out)})
}

func (s *Service) deleteAPIKey(c *fiber.Ctx) error {
	id := c.Params("id")
	err := s.st.Update(c.UserContext(), func(tx store.Tx) error {
		k, err := store.GetJSON[APIKey](tx, nsAPIKeys, id)
		if err != nil {
			return err
		}
		if err := tx.Delete(nsAPIKeyIndex, k.Hash); err != nil {
			return err
		}
		return tx.Delete(nsAPIKeys, id)
	})
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("api key", id)
	}
	if err != nil {
		return apierr.Internal(err)
	}
	return c.JSON(fiber.Map{"status": "success", "message": "api key deleted"})
}
