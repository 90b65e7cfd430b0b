package promptrepo

import (
	"net/http"
	"sort"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/listing"
	"github.com/wasmgate/gateway/store"
)

type folderInput struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

func (in *folderInput) normalize() *apierr.Error {
	var e *apierr.Error
	if in.Name, e = text("name", in.Name, maxName, true); e != nil {
		return e
	}
	in.Description, e = text("description", in.Description, maxDescription, false)
	return e
}

func (s *Service) listFolders(c *fiber.Ctx) error {
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	var all []Folder
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		all, err = store.ListJSON[Folder](tx, nsFolders, store.ScanOptions{})
		return err
	})
	if err != nil {
		return storeErr(err)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	out := listing.Window(all, limit, offset)
	return c.JSON(fiber.Map{"folders": out, "count": len(out), "total_count": len(all), "limit": limit, "offset": offset})
}

func (s *Service) createFolder(c *fiber.Ctx) error {
	var in folderInput
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	if e := in.normalize(); e != nil {
		return e
	}
	now := s.now().UTC()
	f := Folder{ID: newID(), Name: in.Name, Description: in.Description, CreatedAt: now, UpdatedAt: now}
	if err := s.update(c.UserContext(), func(tx store.Tx) error { return store.PutJSON(tx, nsFolders, f.ID, f) }); err != nil {
		return storeErr(err)
	}
	return c.Status(http.StatusCreated).JSON(fiber.Map{"folder": f})
}

func (s *Service) getFolder(c *fiber.Ctx) error {
	var f Folder
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		f, err = get[Folder](tx, nsFolders, "folder", c.Params("id"))
		return err
	})
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(fiber.Map{"folder": f})
}

func (s *Service) updateFolder(c *fiber.Ctx) error {
	var in folderInput
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	if e := in.normalize(); e != nil {
		return e
	}
	var f Folder
	err := s.update(c.UserContext(), func(tx store.Tx) error {
		var err error
		if f, err = get[Folder](tx, nsFolders, "folder", c.Params("id")); err != nil {
			return err
		}
		f.Name, f.Description, f.UpdatedAt = in.Name, in.Description, s.now().UTC()
		return store.PutJSON(tx, nsFolders, f.ID, f)
	})
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(fiber.Map{"folder": f})
}

// deleteFolder refuses a folder that still holds prompts: deleting them
// with it would lose their history by surprise, and unfiling them silently
// is no better. Move or delete the prompts first.
func (s *Service) deleteFolder(c *fiber.Ctx) error {
	id := c.Params("id")
	err := s.update(c.UserContext(), func(tx store.Tx) error {
		if _, err := get[Folder](tx, nsFolders, "folder", id); err != nil {
			return err
		}
		n := 0
		err := tx.Scan(nsPrompts, store.ScanOptions{}, func(_ string, v []byte) error {
			var p Prompt
			if err := jsonUnmarshal(v, &p); err != nil {
				return err
			}
			if p.FolderID == id {
				n++
			}
			return nil
		})
		if err != nil {
			return err
		}
		if n > 0 {
			return apierr.Conflict("folder_not_empty", "the folder holds prompts; move or delete them first").WithParam("id")
		}
		return tx.Delete(nsFolders, id)
	})
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(fiber.Map{"status": "success", "message": "folder deleted"})
}
