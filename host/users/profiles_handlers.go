package users

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/listing"
	"github.com/wasmgate/gateway/store"
)

func (s *Service) listProfiles(c *fiber.Ctx) error {
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	userID := c.Query("user_id")
	var active *bool
	if v := c.Query("is_active"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return apierr.BadRequest("invalid_parameter", "is_active", "is_active must be true or false")
		}
		active = &b
	}
	var all []AccessProfile
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		all, err = store.ListJSON[AccessProfile](tx, nsProfiles, store.ScanOptions{})
		return err
	})
	if err != nil {
		return apierr.Internal(err)
	}
	match := make([]AccessProfile, 0, len(all))
	for _, p := range all {
		if (userID == "" || p.UserID == userID) && (active == nil || p.IsActive == *active) {
			match = append(match, p)
		}
	}
	page := listing.Window(match, limit, offset)
	return c.JSON(fiber.Map{"access_profiles": page, "count": len(page), "total_count": len(match), "limit": limit, "offset": offset})
}

func (s *Service) getProfile(c *fiber.Ctx) error {
	id, e := pathID(c, "id")
	if e != nil {
		return e
	}
	var p AccessProfile
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		p, err = store.GetJSON[AccessProfile](tx, nsProfiles, intKey(id))
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("access profile", c.Params("id"))
	}
	if err != nil {
		return apierr.Internal(err)
	}
	return c.JSON(p)
}

func (s *Service) createProfile(c *fiber.Ctx) error {
	return s.saveProfile(c, 0)
}

func (s *Service) updateProfile(c *fiber.Ctx) error {
	id, e := pathID(c, "id")
	if e != nil {
		return e
	}
	return s.saveProfile(c, id)
}

// saveProfile creates (id 0) or replaces a profile: PUT takes the same body
// as POST and every writable field is replaced.
func (s *Service) saveProfile(c *fiber.Ctx, id int64) error {
	var in profileInput
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	var p AccessProfile
	var ae *apierr.Error
	err := s.st.Update(c.UserContext(), func(tx store.Tx) error {
		ae = nil
		var old *AccessProfile
		p = AccessProfile{ID: id}
		if id != 0 {
			cur, err := store.GetJSON[AccessProfile](tx, nsProfiles, intKey(id))
			if err != nil {
				return err
			}
			old = &cur
			if ae = s.checkGrant(c, "changing this access profile", s.chainGrants(tx, cur)); ae != nil {
				return ae
			}
		}
		if ae = s.applyProfile(tx, &p, in, old); ae != nil {
			return ae
		}
		if ae = s.checkGrant(c, "this access profile", s.chainGrants(tx, p)); ae != nil {
			return ae
		}
		if id == 0 {
			var err error
			if p.ID, err = nextID(tx, "profile", 1); err != nil {
				return err
			}
		}
		return putProfile(tx, &p, old)
	})
	if ae != nil {
		return ae
	}
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("access profile", c.Params("id"))
	}
	if err != nil {
		return apierr.Internal(err)
	}
	status := http.StatusOK
	if id == 0 {
		status = http.StatusCreated
	}
	return c.Status(status).JSON(p)
}

// deleteProfileHandler deletes a profile. Profiles naming it as parent stay
// and simply stop inheriting from it.
func (s *Service) deleteProfileHandler(c *fiber.Ctx) error {
	id, e := pathID(c, "id")
	if e != nil {
		return e
	}
	var ae *apierr.Error
	err := s.st.Update(c.UserContext(), func(tx store.Tx) error {
		ae = nil
		p, err := store.GetJSON[AccessProfile](tx, nsProfiles, intKey(id))
		if err != nil {
			return err
		}
		if ae = s.checkGrant(c, "deleting this access profile", s.chainGrants(tx, p)); ae != nil {
			return ae
		}
		return deleteProfile(tx, &p)
	})
	if ae != nil {
		return ae
	}
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("access profile", c.Params("id"))
	}
	if err != nil {
		return apierr.Internal(err)
	}
	return c.JSON(fiber.Map{"status": "success", "message": "access profile deleted"})
}
