package users

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/listing"
	"github.com/wasmgate/gateway/store"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// Member is one row of a team's member listing (spec: Team member).
type Member struct {
	UserID    string `json:"user_id"`
	UserName  string `json:"user_name"`
	UserEmail string `json:"user_email"`
	Source    string `json:"source"`
}

// teamMembers lists the users holding a membership of the team, in user
// creation order. Users are scanned rather than indexed by team: this is a
// management listing and users number in the thousands at most.
func (s *Service) teamMembers(c *fiber.Ctx) error {
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	teamID := strings.TrimSpace(c.Params("team_id"))
	ok, err := s.teamExists(c.UserContext(), teamID)
	if err != nil {
		return apierr.Internal(err)
	}
	if !ok {
		return apierr.NotFound("team", teamID)
	}
	var members []Member
	err = s.st.View(c.UserContext(), func(tx store.Tx) error {
		return tx.Scan(nsUsers, store.ScanOptions{}, func(_ string, v []byte) error {
			var u userRecord
			if err := jsonUnmarshal(v, &u); err != nil {
				return err
			}
			for _, m := range u.Teams {
				if m.TeamID == teamID {
					members = append(members, Member{UserID: u.ID, UserName: u.Name, UserEmail: u.Email, Source: m.Source})
				}
			}
			return nil
		})
	})
	if err != nil {
		return apierr.Internal(err)
	}
	page := listing.Window(members, limit, offset)
	return c.JSON(fiber.Map{"members": page, "count": len(page), "total_count": len(members), "limit": limit, "offset": offset})
}

// virtualKeyUsers lists the users a virtual key is attached to.
func (s *Service) virtualKeyUsers(c *fiber.Ctx) error {
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	vkID := strings.TrimSpace(c.Params("vk_id"))
	ok, err := s.virtualKeyExists(c.UserContext(), vkID)
	if err != nil {
		return apierr.Internal(err)
	}
	if !ok {
		return apierr.NotFound("virtual key", vkID)
	}
	var users []User
	total := 0
	err = s.st.View(c.UserContext(), func(tx store.Tx) error {
		recs, err := store.ListJSON[userRecord](tx, nsUsers, store.ScanOptions{})
		if err != nil {
			return err
		}
		var match []userRecord
		for _, r := range recs {
			if slices.Contains(r.VirtualKeyIDs, vkID) {
				match = append(match, r)
			}
		}
		total = len(match)
		users = []User{}
		for _, r := range listing.Window(match, limit, offset) {
			u, err := s.view(c.UserContext(), tx, r)
			if err != nil {
				return err
			}
			users = append(users, u)
		}
		return nil
	})
	if err != nil {
		return apierr.Internal(err)
	}
	return c.JSON(fiber.Map{"users": users, "count": len(users), "total_count": total, "limit": limit, "offset": offset})
}

// TeamDeleted removes every user's membership of team id. Governance calls
// it inside the transaction that deletes the team (both live in the same
// store), so no user is left a member of a team that no longer exists and a
// team created later never inherits old members.
func (s *Service) TeamDeleted(tx store.Tx, id string) error {
	return s.dropRefs(tx, func(r *userRecord) bool {
		n := len(r.Teams)
		r.Teams = slices.DeleteFunc(r.Teams, func(m Membership) bool { return m.TeamID == id })
		return len(r.Teams) != n
	})
}

// VirtualKeyDeleted detaches virtual key id from every user, inside the
// transaction that deletes the key (see TeamDeleted).
func (s *Service) VirtualKeyDeleted(tx store.Tx, id string) error {
	return s.dropRefs(tx, func(r *userRecord) bool {
		n := len(r.VirtualKeyIDs)
		r.VirtualKeyIDs = slices.DeleteFunc(r.VirtualKeyIDs, func(v string) bool { return v == id })
		return len(r.VirtualKeyIDs) != n
	})
}

// dropRefs rewrites the users that drop changes. Users are scanned, like
// the member listings: a deletion is a rare management action and users
// number in the thousands at most. Writes wait for the scan to end.
func (s *Service) dropRefs(tx store.Tx, drop func(*userRecord) bool) error {
	var changed []userRecord
	err := tx.Scan(nsUsers, store.ScanOptions{}, func(_ string, v []byte) error {
		var u userRecord
		if err := jsonUnmarshal(v, &u); err != nil {
			return err
		}
		if drop(&u) {
			changed = append(changed, u)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("users: scan for references: %w", err)
	}
	now := s.now().UTC()
	for i := range changed {
		changed[i].UpdatedAt = now
		if err := store.PutJSON(tx, nsUsers, changed[i].ID, changed[i]); err != nil {
			return fmt.Errorf("users: drop references of %s: %w", changed[i].ID, err)
		}
	}
	return nil
}
