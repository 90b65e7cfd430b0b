package promptrepo

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/listing"
	"github.com/wasmgate/gateway/store"
)

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// listVersions pages a prompt's versions, newest first. Messages are
// included: a version is small and clients list versions to show them.
func (s *Service) listVersions(c *fiber.Ctx) error {
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	id := c.Params("id")
	var all []Version
	var p Prompt
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		if p, err = get[Prompt](tx, nsPrompts, "prompt", id); err != nil {
			return err
		}
		all, err = store.ListJSON[Version](tx, nsVersions, store.ScanOptions{Prefix: id + "/", Reverse: true})
		return err
	})
	if err != nil {
		return storeErr(err)
	}
	for i := range all {
		all[i].IsLatest = all[i].VersionNumber == p.LatestVersionNumber
	}
	out := listing.Window(all, limit, offset)
	return c.JSON(fiber.Map{"versions": out, "count": len(out), "total_count": len(all), "limit": limit, "offset": offset})
}

func (s *Service) getVersionByNumber(c *fiber.Ctx) error {
	n, err := strconv.ParseInt(c.Params("number"), 10, 64)
	if err != nil || n < 1 {
		return apierr.BadRequest("invalid_parameter", "number", "version number must be a positive integer")
	}
	return s.sendVersion(c, func(tx store.Tx) (string, error) {
		return versionKey(c.Params("id"), n), nil
	}, "version "+itoa(n)+" of prompt "+c.Params("id"))
}

func (s *Service) getVersion(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return apierr.BadRequest("invalid_parameter", "id", "version id must be a positive integer")
	}
	return s.sendVersion(c, func(tx store.Tx) (string, error) {
		key, err := tx.Get(nsVersionIDs, versionIDKey(id))
		return string(key), err
	}, "version "+itoa(id))
}

// sendVersion answers {version} for the key keyOf finds, with is_latest
// read from the prompt in the same snapshot.
func (s *Service) sendVersion(c *fiber.Ctx, keyOf func(store.Tx) (string, error), what string) error {
	var v Version
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		key, err := keyOf(tx)
		if err == nil {
			v, err = store.GetJSON[Version](tx, nsVersions, key)
		}
		if isNotFound(err) {
			return apierr.New(404, apierr.TypeNotFound, "not_found", what+" not found")
		}
		if err != nil {
			return err
		}
		p, err := store.GetJSON[Prompt](tx, nsPrompts, v.PromptID)
		if err != nil {
			return err
		}
		v.IsLatest = p.LatestVersionNumber == v.VersionNumber
		return nil
	})
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(fiber.Map{"version": v})
}
