package users

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/auth"
	"github.com/wasmgate/gateway/host/listing"
	"github.com/wasmgate/gateway/store"
)

// Routes registers the management API.
func (s *Service) Routes(api *auth.Router) {
	api.Get("/permissions", auth.Perm("Roles", "View"), s.listPermissions)

	api.Get("/users", auth.Perm("Users", "View"), s.listUsers)
	api.Post("/users", auth.Perm("Users", "Create"), s.createUser)
	api.Get("/users/:id", auth.Perm("Users", "View"), s.getUser)
	api.Put("/users/:id", auth.Perm("Users", "Update"), s.updateUser)
	api.Delete("/users/:id", auth.Perm("Users", "Delete"), s.deleteUser)

	api.Get("/roles", auth.Perm("Roles", "View"), s.listRolesHandler)
	api.Post("/roles", auth.Perm("Roles", "Create"), s.createRole)
	api.Get("/roles/:id", auth.Perm("Roles", "View"), s.getRoleHandler)
	api.Put("/roles/:id", auth.Perm("Roles", "Update"), s.updateRole)
	api.Delete("/roles/:id", auth.Perm("Roles", "Delete"), s.deleteRole)

	// GET /governance/access-profiles/audit-logs is the audit log's, mounted
	// before this; its GET never reaches /:id.
	api.Get("/governance/access-profiles", auth.Perm("AccessProfiles", "View"), s.listProfiles)
	api.Post("/governance/access-profiles", auth.Perm("AccessProfiles", "Create"), s.createProfile)
	api.Get("/governance/access-profiles/:id", auth.Perm("AccessProfiles", "View"), s.getProfile)
	api.Put("/governance/access-profiles/:id", auth.Perm("AccessProfiles", "Update"), s.updateProfile)
	api.Delete("/governance/access-profiles/:id", auth.Perm("AccessProfiles", "Delete"), s.deleteProfileHandler)

	api.Get("/governance/teams/:team_id/members", auth.Perm("Teams", "View"), s.teamMembers)
	// Deprecated alias, removed in the next major version (spec Versioning 4).
	api.Get("/teams/:team_id/members", auth.Perm("Teams", "View"),
		deprecated("/api/governance/teams/{team_id}/members"), s.teamMembers)
	api.Get("/governance/virtual-keys/:vk_id/users", auth.Perm("VirtualKeys", "View"), s.virtualKeyUsers)
}

func deprecated(replacement string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		c.Set("Deprecation", "true")
		c.Set("Link", "<"+replacement+`>; rel="successor-version"`)
		return c.Next()
	}
}

// callerScopes returns the permissions of a caller subject to checks, or
// nil with bypass true for the local admin and setup-lock callers.
func callerScopes(c *fiber.Ctx) (scopes []string, bypass bool) {
	p := auth.FromCtx(c)
	if p == nil || p.Bypass {
		return nil, true
	}
	return p.Scopes, false
}

// checkGrant refuses to let a caller hand out permissions it does not hold
// itself (a user with Roles:Create must not mint an admin-equivalent role).
func (s *Service) checkGrant(c *fiber.Ctx, what string, grants []string) *apierr.Error {
	scopes, bypass := callerScopes(c)
	if bypass {
		return nil
	}
	if p := s.catalog.get().notHeld(scopes, grants); p != "" {
		return apierr.Forbidden("privilege_escalation",
			fmt.Sprintf("%s would grant %s, which this credential does not hold", what, p))
	}
	return nil
}

// checkUserGrant refuses changes to a user who holds more than the caller:
// their role's permissions plus what their live access profiles grant, the
// same set a session of theirs gets.
func (s *Service) checkUserGrant(c *fiber.Ctx, tx store.Tx, rec userRecord) *apierr.Error {
	if _, bypass := callerScopes(c); bypass {
		return nil
	}
	var grants []string
	roleName := ""
	role, err := s.getRole(tx, rec.RoleID)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return apierr.Internal(err)
	default:
		grants, roleName = append(grants, role.Permissions...), role.Name
	}
	profiles, err := s.userProfiles(tx, rec.ID)
	if err != nil {
		return apierr.Internal(err)
	}
	now := s.now()
	for _, p := range profiles {
		grants = append(grants, s.profileGrants(tx, p, now)...)
	}
	return s.checkGrant(c, fmt.Sprintf("changing user %q (role %q and access profiles)", rec.Email, roleName), grants)
}

func pathID(c *fiber.Ctx, name string) (int64, *apierr.Error) {
	id, err := strconv.ParseInt(c.Params(name), 10, 64)
	if err != nil || id <= 0 {
		return 0, apierr.BadRequest("invalid_parameter", name, fmt.Sprintf("%s must be a positive integer", name))
	}
	return id, nil
}

func (s *Service) listPermissions(c *fiber.Ctx) error {
	perms := s.catalog.get().perms
	return c.JSON(fiber.Map{"permissions": perms, "count": len(perms)})
}

// ---- users ----

func (s *Service) listUsers(c *fiber.Ctx) error {
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	email := strings.ToLower(strings.TrimSpace(c.Query("email")))
	name := strings.ToLower(strings.TrimSpace(c.Query("name")))
	roleName := strings.TrimSpace(c.Query("role"))
	var roleID int64
	if v := c.Query("role_id"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return apierr.BadRequest("invalid_parameter", "role_id", "role_id must be a positive integer")
		}
		roleID = n
	}
	var page []User
	total := 0
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		recs, err := store.ListJSON[userRecord](tx, nsUsers, store.ScanOptions{})
		if err != nil {
			return err
		}
		var match []userRecord
		for _, r := range recs {
			if email != "" && !strings.Contains(strings.ToLower(r.Email), email) ||
				name != "" && !strings.Contains(strings.ToLower(r.Name), name) ||
				roleID != 0 && r.RoleID != roleID {
				continue
			}
			if roleName != "" {
				role, err := s.getRole(tx, r.RoleID)
				if err != nil || !strings.EqualFold(role.Name, roleName) {
					continue
				}
			}
			match = append(match, r)
		}
		total = len(match)
		page = make([]User, 0, limit)
		for _, r := range listing.Window(match, limit, offset) {
			u, err := s.view(c.UserContext(), tx, r)
			if err != nil {
				return err
			}
			page = append(page, u)
		}
		return nil
	})
	if err != nil {
		return apierr.Internal(err)
	}
	return c.JSON(fiber.Map{"users": page, "count": len(page), "total_count": total, "limit": limit, "offset": offset})
}

func (s *Service) createUser(c *fiber.Ctx) error {
	var in userInput
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	now := s.now().UTC()
	rec := userRecord{ID: uuid.Must(uuid.NewV7()).String(), CreatedAt: now, UpdatedAt: now}
	return s.saveUser(c, rec, in, true, http.StatusCreated)
}

func (s *Service) updateUser(c *fiber.Ctx) error {
	var in userInput
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	var rec userRecord
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		rec, err = store.GetJSON[userRecord](tx, nsUsers, c.Params("id"))
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("user", c.Params("id"))
	}
	if err != nil {
		return apierr.Internal(err)
	}
	rec.UpdatedAt = s.now().UTC()
	return s.saveUser(c, rec, in, false, http.StatusOK)
}

// saveUser applies in to base and writes it in one transaction; on update
// the record is re-read inside the transaction so a concurrent change of
// another field is not lost.
func (s *Service) saveUser(c *fiber.Ctx, base userRecord, in userInput, create bool, status int) error {
	var out User
	var ae *apierr.Error
	err := s.st.Update(c.UserContext(), func(tx store.Tx) error {
		ae = nil
		rec := base
		if !create {
			cur, err := store.GetJSON[userRecord](tx, nsUsers, base.ID)
			if err != nil {
				return err
			}
			cur.UpdatedAt = base.UpdatedAt
			rec = cur
			// Changing a user (say, their password) is as good as being
			// them: only for callers holding everything the user holds.
			if ae = s.checkUserGrant(c, tx, cur); ae != nil {
				return ae
			}
		}
		if ae = s.applyUser(c.UserContext(), tx, &rec, in, create); ae != nil {
			return ae
		}
		if create || in.RoleID != nil {
			role, err := s.getRole(tx, rec.RoleID)
			if err != nil {
				return err
			}
			if ae = s.checkGrant(c, fmt.Sprintf("role %q", role.Name), role.Permissions); ae != nil {
				return ae
			}
		}
		if err := store.PutJSON(tx, nsUsers, rec.ID, rec); err != nil {
			return err
		}
		var err error
		out, err = s.view(c.UserContext(), tx, rec)
		return err
	})
	if ae != nil {
		return ae
	}
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("user", base.ID)
	}
	if err != nil {
		return apierr.Internal(err)
	}
	return c.Status(status).JSON(out)
}

func (s *Service) getUser(c *fiber.Ctx) error {
	var out User
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		rec, err := store.GetJSON[userRecord](tx, nsUsers, c.Params("id"))
		if err != nil {
			return err
		}
		out, err = s.view(c.UserContext(), tx, rec)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("user", c.Params("id"))
	}
	if err != nil {
		return apierr.Internal(err)
	}
	return c.JSON(out)
}

// deleteUser removes the user, their email index and their access profiles;
// their sessions stop working at once because auth resolves them per request.
func (s *Service) deleteUser(c *fiber.Ctx) error {
	id := c.Params("id")
	err := s.st.Update(c.UserContext(), func(tx store.Tx) error {
		rec, err := store.GetJSON[userRecord](tx, nsUsers, id)
		if err != nil {
			return err
		}
		if ae := s.checkUserGrant(c, tx, rec); ae != nil {
			return ae
		}
		ps, err := s.userProfiles(tx, id)
		if err != nil {
			return err
		}
		for i := range ps {
			if err := deleteProfile(tx, &ps[i]); err != nil {
				return err
			}
		}
		if err := tx.Delete(nsEmails, emailKey(rec.Email)); err != nil {
			return err
		}
		return tx.Delete(nsUsers, id)
	})
	if ae := apierr.As(err); err != nil && ae.StatusCode < 500 {
		return ae
	}
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("user", id)
	}
	if err != nil {
		return apierr.Internal(err)
	}
	return c.JSON(fiber.Map{"status": "success", "message": "user deleted"})
}
