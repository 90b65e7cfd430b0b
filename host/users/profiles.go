package users

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/store"
)

// maxProfileDepth bounds the parent chain walked for inherited grants.
const maxProfileDepth = 8

// AccessProfile grants its user extra permissions while it is active and
// unexpired (spec: Access profile, plus Permissions). A profile inherits the
// grants of its parent chain, each link counting only while it is itself
// active and unexpired. A profile without user_id is a template: it grants
// nothing directly and serves as a parent.
type AccessProfile struct {
	ID              int64      `json:"id"`
	UserID          string     `json:"user_id"`
	ParentProfileID *int64     `json:"parent_profile_id"`
	Name            string     `json:"name"`
	IsActive        bool       `json:"is_active"`
	ExpiresAt       *time.Time `json:"expires_at"`
	Permissions     []string   `json:"permissions"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
}

// live reports whether p currently grants anything.
func (p *AccessProfile) live(now time.Time) bool {
	return p.IsActive && (p.ExpiresAt == nil || now.Before(*p.ExpiresAt))
}

// profileInput is the create and replace body.
type profileInput struct {
	UserID          string     `json:"user_id"`
	ParentProfileID *int64     `json:"parent_profile_id"`
	Name            string     `json:"name"`
	IsActive        *bool      `json:"is_active"`
	ExpiresAt       *time.Time `json:"expires_at"`
	Permissions     []string   `json:"permissions"`
}

func profileUserKey(userID string, id int64) string { return userID + "/" + intKey(id) }

// userProfiles returns the profiles assigned to userID, by id.
func (s *Service) userProfiles(tx store.Tx, userID string) ([]AccessProfile, error) {
	var out []AccessProfile
	err := tx.Scan(nsProfilesByUser, store.ScanOptions{Prefix: userID + "/"}, func(k string, _ []byte) error {
		p, err := store.GetJSON[AccessProfile](tx, nsProfiles, strings.TrimPrefix(k, userID+"/"))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// profileGrants returns what p grants now: its permissions and its parent
// chain's, stopping at the first link that is inactive, expired, missing or
// already seen. Read errors end the chain: fail closed.
func (s *Service) profileGrants(tx store.Tx, p AccessProfile, now time.Time) []string {
	var out []string
	seen := map[int64]bool{}
	for depth := 0; depth < maxProfileDepth && !seen[p.ID] && p.live(now); depth++ {
		seen[p.ID] = true
		out = append(out, p.Permissions...)
		if p.ParentProfileID == nil {
			break
		}
		parent, err := store.GetJSON[AccessProfile](tx, nsProfiles, intKey(*p.ParentProfileID))
		if err != nil {
			break
		}
		p = parent
	}
	return out
}

// chainGrants is every permission p and its ancestors can grant, ignoring
// activity and expiry: what assigning p could ever give its user.
func (s *Service) chainGrants(tx store.Tx, p AccessProfile) []string {
	var out []string
	seen := map[int64]bool{}
	for depth := 0; depth < maxProfileDepth && !seen[p.ID]; depth++ {
		seen[p.ID] = true
		out = append(out, p.Permissions...)
		if p.ParentProfileID == nil {
			break
		}
		parent, err := store.GetJSON[AccessProfile](tx, nsProfiles, intKey(*p.ParentProfileID))
		if err != nil {
			break
		}
		p = parent
	}
	return out
}

// applyProfile validates in against the store and fills p (a new profile
// when p.ID is 0 and the id is allocated by the caller). old is the stored
// version on replace, nil on create.
func (s *Service) applyProfile(tx store.Tx, p *AccessProfile, in profileInput, old *AccessProfile) *apierr.Error {
	in.Name = strings.TrimSpace(in.Name)
	if in.Name == "" {
		return apierr.BadRequest("missing_field", "name", "name is required")
	}
	if len(in.Name) > maxNameLen {
		return apierr.BadRequest("invalid_value", "name", fmt.Sprintf("name must be at most %d characters", maxNameLen))
	}
	in.UserID = strings.TrimSpace(in.UserID)
	if in.UserID != "" {
		if _, err := tx.Get(nsUsers, in.UserID); errors.Is(err, store.ErrNotFound) {
			return apierr.BadRequest("invalid_value", "user_id", fmt.Sprintf("user %q not found", in.UserID))
		} else if err != nil {
			return apierr.Internal(err)
		}
	}
	if in.ParentProfileID != nil {
		pid := *in.ParentProfileID
		if old != nil && pid == old.ID {
			return apierr.BadRequest("invalid_value", "parent_profile_id", "a profile cannot be its own parent")
		}
		// Walk up from the parent: reaching this profile would close a cycle.
		cur := pid
		for depth := 0; ; depth++ {
			parent, err := store.GetJSON[AccessProfile](tx, nsProfiles, intKey(cur))
			if errors.Is(err, store.ErrNotFound) {
				if cur == pid {
					return apierr.BadRequest("invalid_value", "parent_profile_id", fmt.Sprintf("access profile %d not found", pid))
				}
				break
			}
			if err != nil {
				return apierr.Internal(err)
			}
			if depth >= maxProfileDepth-1 {
				return apierr.BadRequest("invalid_value", "parent_profile_id", fmt.Sprintf("profile chains are at most %d deep", maxProfileDepth))
			}
			if parent.ParentProfileID == nil {
				break
			}
			if old != nil && *parent.ParentProfileID == old.ID {
				return apierr.BadRequest("invalid_value", "parent_profile_id", "the parent chain would form a cycle")
			}
			cur = *parent.ParentProfileID
		}
	}
	now := s.now().UTC()
	if in.ExpiresAt != nil && !in.ExpiresAt.After(now) &&
		(old == nil || old.ExpiresAt == nil || !old.ExpiresAt.Equal(*in.ExpiresAt)) {
		return apierr.BadRequest("invalid_value", "expires_at", "expires_at must be in the future")
	}
	perms, e := s.catalog.get().normalize("permissions", in.Permissions)
	if e != nil {
		return e
	}
	p.UserID, p.ParentProfileID, p.Name, p.ExpiresAt, p.Permissions = in.UserID, in.ParentProfileID, in.Name, in.ExpiresAt, perms
	p.IsActive = in.IsActive == nil || *in.IsActive
	p.UpdatedAt = now
	if old == nil {
		p.CreatedAt = now
	} else {
		p.CreatedAt = old.CreatedAt
	}
	return nil
}

// putProfile writes p and keeps the by-user index in step with old.
func putProfile(tx store.Tx, p *AccessProfile, old *AccessProfile) error {
	if old != nil && old.UserID != "" && old.UserID != p.UserID {
		if err := tx.Delete(nsProfilesByUser, profileUserKey(old.UserID, old.ID)); err != nil {
			return err
		}
	}
	if p.UserID != "" {
		if err := tx.Put(nsProfilesByUser, profileUserKey(p.UserID, p.ID), []byte{}); err != nil {
			return err
		}
	}
	return store.PutJSON(tx, nsProfiles, intKey(p.ID), p)
}

func deleteProfile(tx store.Tx, p *AccessProfile) error {
	if p.UserID != "" {
		if err := tx.Delete(nsProfilesByUser, profileUserKey(p.UserID, p.ID)); err != nil {
			return err
		}
	}
	return tx.Delete(nsProfiles, intKey(p.ID))
}

// effectiveProfile is the profile the spec's User.access_profile shows: the
// newest one that currently grants permissions.
func effectiveProfile(ps []AccessProfile, now time.Time) *AccessProfile {
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].live(now) {
			p := ps[i]
			return &p
		}
	}
	return nil
}
