package promptrepo

import (
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/listing"
	"github.com/wasmgate/gateway/store"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

type promptInput struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	FolderID    string `json:"folder_id"`
}

func (in *promptInput) normalize() *apierr.Error {
	var e *apierr.Error
	if in.Name, e = text("name", in.Name, maxName, true); e != nil {
		return e
	}
	if in.Description, e = text("description", in.Description, maxDescription, false); e != nil {
		return e
	}
	in.FolderID = strings.TrimSpace(in.FolderID)
	return nil
}

// checkFolder makes sure a referenced folder exists (400, not 404: the
// request is wrong, the prompt is not missing).
func checkFolder(tx store.Tx, id string) error {
	if id == "" {
		return nil
	}
	if _, err := tx.Get(nsFolders, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return apierr.BadRequest("invalid_value", "folder_id", "folder "+id+" does not exist")
		}
		return err
	}
	return nil
}

func (s *Service) listPrompts(c *fiber.Ctx) error {
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	folder := c.Query("folder_id")
	search := strings.ToLower(strings.TrimSpace(c.Query("search")))
	var all []Prompt
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		all, err = store.ListJSON[Prompt](tx, nsPrompts, store.ScanOptions{})
		return err
	})
	if err != nil {
		return storeErr(err)
	}
	matched := make([]Prompt, 0, len(all))
	for _, p := range all {
		if folder != "" && p.FolderID != folder {
			continue
		}
		if search != "" && !strings.Contains(strings.ToLower(p.Name), search) && !strings.Contains(strings.ToLower(p.Description), search) {
			continue
		}
		matched = append(matched, p)
	}
	// UUIDv7 ids: newest first is descending id order.
	sort.Slice(matched, func(i, j int) bool { return matched[i].ID > matched[j].ID })
	out := listing.Window(matched, limit, offset)
	return c.JSON(fiber.Map{"prompts": out, "count": len(out), "total_count": len(matched), "limit": limit, "offset": offset})
}

func (s *Service) createPrompt(c *fiber.Ctx) error {
	var in promptInput
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	if e := in.normalize(); e != nil {
		return e
	}
	now := s.now().UTC()
	p := Prompt{ID: newID(), Name: in.Name, Description: in.Description, FolderID: in.FolderID, CreatedAt: now, UpdatedAt: now}
	err := s.update(c.UserContext(), func(tx store.Tx) error {
		if err := checkFolder(tx, p.FolderID); err != nil {
			return err
		}
		return store.PutJSON(tx, nsPrompts, p.ID, p)
	})
	if err != nil {
		return storeErr(err)
	}
	return c.Status(http.StatusCreated).JSON(fiber.Map{"prompt": p})
}

func (s *Service) getPrompt(c *fiber.Ctx) error {
	var p Prompt
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		p, err = get[Prompt](tx, nsPrompts, "prompt", c.Params("id"))
		return err
	})
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(fiber.Map{"prompt": p})
}

func (s *Service) updatePrompt(c *fiber.Ctx) error {
	var in promptInput
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	if e := in.normalize(); e != nil {
		return e
	}
	var p Prompt
	err := s.update(c.UserContext(), func(tx store.Tx) error {
		var err error
		if p, err = get[Prompt](tx, nsPrompts, "prompt", c.Params("id")); err != nil {
			return err
		}
		if err := checkFolder(tx, in.FolderID); err != nil {
			return err
		}
		p.Name, p.Description, p.FolderID, p.UpdatedAt = in.Name, in.Description, in.FolderID, s.now().UTC()
		return store.PutJSON(tx, nsPrompts, p.ID, p)
	})
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(fiber.Map{"prompt": p})
}

// deletePrompt removes the prompt with its versions and sessions in one
// transaction: nothing of it is left half-deleted.
func (s *Service) deletePrompt(c *fiber.Ctx) error {
	id := c.Params("id")
	var versions, sessions int
	err := s.update(c.UserContext(), func(tx store.Tx) error {
		versions, sessions = 0, 0
		if _, err := get[Prompt](tx, nsPrompts, "prompt", id); err != nil {
			return err
		}
		var vkeys, idkeys, skeys []string
		err := tx.Scan(nsVersions, store.ScanOptions{Prefix: id + "/"}, func(k string, v []byte) error {
			var ver Version
			if err := jsonUnmarshal(v, &ver); err != nil {
				return err
			}
			vkeys = append(vkeys, k)
			idkeys = append(idkeys, versionIDKey(ver.ID))
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Scan(nsSessions, store.ScanOptions{}, func(k string, v []byte) error {
			var ses Session
			if err := jsonUnmarshal(v, &ses); err != nil {
				return err
			}
			if ses.PromptID == id {
				skeys = append(skeys, k)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i := range vkeys {
			if err := tx.Delete(nsVersions, vkeys[i]); err != nil {
				return err
			}
			if err := tx.Delete(nsVersionIDs, idkeys[i]); err != nil {
				return err
			}
		}
		for _, k := range skeys {
			if err := tx.Delete(nsSessions, k); err != nil {
				return err
			}
		}
		versions, sessions = len(vkeys), len(skeys)
		return tx.Delete(nsPrompts, id)
	})
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(fiber.Map{"status": "success", "message": "prompt deleted",
		"deleted_versions": versions, "deleted_sessions": sessions})
}
