package users

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/listing"
	"github.com/wasmgate/gateway/store"
)

// roleInput is the create body and the partial update body.
type roleInput struct {
	Name        *string   `json:"name"`
	Description *string   `json:"description"`
	Permissions *[]string `json:"permissions"`
}

func (s *Service) listRolesHandler(c *fiber.Ctx) error {
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	var roles []Role
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		roles, err = s.listRoles(tx)
		return err
	})
	if err != nil {
		return apierr.Internal(err)
	}
	page := listing.Window(roles, limit, offset)
	return c.JSON(fiber.Map{"roles": page, "count": len(page), "total_count": len(roles), "limit": limit, "offset": offset})
}

func (s *Service) getRoleHandler(c *fiber.Ctx) error {
	id, e := pathID(c, "id")
	if e != nil {
		return e
	}
	var r Role
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		r, err = s.getRole(tx, id)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("role", c.Params("id"))
	}
	if err != nil {
		return apierr.Internal(err)
	}
	return c.JSON(r)
}

func (s *Service) createRole(c *fiber.Ctx) error {
	var in roleInput
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	if in.Name == nil {
		return apierr.BadRequest("missing_field", "name", "name is required")
	}
	if in.Permissions == nil {
		return apierr.BadRequest("missing_field", "permissions", `permissions is required: a list of "Resource:Operation", "Resource:*" or "*"`)
	}
	return s.saveRole(c, 0, in)
}

func (s *Service) updateRole(c *fiber.Ctx) error {
	id, e := pathID(c, "id")
	if e != nil {
		return e
	}
	var in roleInput
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	return s.saveRole(c, id, in)
}

// saveRole creates (id 0) or updates a custom role.
func (s *Service) saveRole(c *fiber.Ctx, id int64, in roleInput) error {
	if _, ok := systemRole(id, s.catalog.get()); ok {
		return apierr.Conflict("system_role_immutable", "system roles cannot be changed; create a custom role instead")
	}
	var r Role
	if in.Name != nil {
		r.Name = strings.TrimSpace(*in.Name)
		if r.Name == "" {
			return apierr.BadRequest("missing_field", "name", "name is required")
		}
		if len(r.Name) > maxNameLen {
			return apierr.BadRequest("invalid_value", "name", fmt.Sprintf("name must be at most %d characters", maxNameLen))
		}
		if systemRoleNamed(r.Name) {
			return apierr.Conflict("role_name_taken", fmt.Sprintf("%q is a system role name", r.Name)).WithParam("name")
		}
	}
	var perms []string
	if in.Permissions != nil {
		var e *apierr.Error
		if perms, e = s.catalog.get().normalize("permissions", *in.Permissions); e != nil {
			return e
		}
		if e := s.checkGrant(c, "this role", perms); e != nil {
			return e
		}
	}
	var ae *apierr.Error
	err := s.st.Update(c.UserContext(), func(tx store.Tx) error {
		ae = nil
		cur := Role{ID: id, CreatedAt: s.now().UTC()}
		if id != 0 {
			var err error
			if cur, err = store.GetJSON[Role](tx, nsRoles, intKey(id)); err != nil {
				return err
			}
			// Editing a role changes what its holders may do: only for
			// callers holding what it grants today as well.
			if ae = s.checkGrant(c, fmt.Sprintf("changing role %q", cur.Name), cur.Permissions); ae != nil {
				return ae
			}
		} else {
			var err error
			if cur.ID, err = nextID(tx, "role", firstCustomRoleID); err != nil {
				return err
			}
		}
		if in.Name != nil && r.Name != cur.Name {
			key := strings.ToLower(r.Name)
			owner, err := tx.Get(nsRoleNames, key)
			switch {
			case err == nil && string(owner) != intKey(cur.ID):
				ae = apierr.Conflict("role_name_taken", fmt.Sprintf("a role named %q already exists", r.Name)).WithParam("name")
				return ae
			case err != nil && !errors.Is(err, store.ErrNotFound):
				return err
			}
			if cur.Name != "" {
				if err := tx.Delete(nsRoleNames, strings.ToLower(cur.Name)); err != nil {
					return err
				}
			}
			if err := tx.Put(nsRoleNames, key, []byte(intKey(cur.ID))); err != nil {
				return err
			}
		}
		if in.Name != nil {
			cur.Name = r.Name
		}
		if in.Description != nil {
			cur.Description = strings.TrimSpace(*in.Description)
		}
		if in.Permissions != nil {
			cur.Permissions = perms
		}
		cur.UpdatedAt = s.now().UTC()
		r = cur
		return store.PutJSON(tx, nsRoles, intKey(cur.ID), cur)
	})
	if ae != nil {
		return ae
	}
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("role", c.Params("id"))
	}
	if err != nil {
		return apierr.Internal(err)
	}
	status := http.StatusOK
	if id == 0 {
		status = http.StatusCreated
	}
	return c.Status(status).JSON(r)
}

// deleteRole removes a custom role that no user holds (409 otherwise, so
// nobody silently loses their permissions).
func (s *Service) deleteRole(c *fiber.Ctx) error {
	id, e := pathID(c, "id")
	if e != nil {
		return e
	}
	if _, ok := systemRole(id, s.catalog.get()); ok {
		return apierr.Conflict("system_role_immutable", "system roles cannot be deleted")
	}
	var ae *apierr.Error
	err := s.st.Update(c.UserContext(), func(tx store.Tx) error {
		ae = nil
		r, err := store.GetJSON[Role](tx, nsRoles, intKey(id))
		if err != nil {
			return err
		}
		holders := 0
		err = tx.Scan(nsUsers, store.ScanOptions{}, func(_ string, v []byte) error {
			var u struct {
				RoleID int64 `json:"role_id"`
			}
			if jerr := jsonUnmarshal(v, &u); jerr == nil && u.RoleID == id {
				holders++
			}
			return nil
		})
		if err != nil {
			return err
		}
		if holders > 0 {
			ae = apierr.Conflict("role_in_use", fmt.Sprintf("role %q is assigned to %d user(s); reassign them first", r.Name, holders))
			return ae
		}
		if err := tx.Delete(nsRoleNames, strings.ToLower(r.Name)); err != nil {
			return err
		}
		return tx.Delete(nsRoles, intKey(id))
	})
	if ae != nil {
		return ae
	}
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("role", c.Params("id"))
	}
	if err != nil {
		return apierr.Internal(err)
	}
	return c.JSON(fiber.Map{"status": "success", "message": "role deleted"})
}
