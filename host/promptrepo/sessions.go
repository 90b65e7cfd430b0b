package promptrepo

import (
	"encoding/json"
	"net/http"
	"sort"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/listing"
	"github.com/wasmgate/gateway/store"
)

// sessionInput creates a session. Without a state of its own the session
// starts from from_version, or from the prompt's latest version, or empty.
type sessionInput struct {
	PromptID    string            `json:"prompt_id"`
	Name        string            `json:"name"`
	FromVersion *int64            `json:"from_version"`
	Messages    []json.RawMessage `json:"messages"`
	ModelParams json.RawMessage   `json:"model_params"`
	Provider    string            `json:"provider"`
	Model       string            `json:"model"`
}

func (in *sessionInput) hasState() bool {
	return in.Messages != nil || len(in.ModelParams) > 0 || in.Provider != "" || in.Model != ""
}

// stateInput replaces a session's working state (PUT).
type stateInput struct {
	Name        string            `json:"name"`
	Messages    []json.RawMessage `json:"messages"`
	ModelParams json.RawMessage   `json:"model_params"`
	Provider    string            `json:"provider"`
	Model       string            `json:"model"`
}

func stateOfVersion(v *Version) State {
	st := State{Messages: make([]json.RawMessage, len(v.Messages)), ModelParams: v.ModelParams, Provider: v.Provider, Model: v.Model}
	for i, m := range v.Messages {
		st.Messages[i] = m.Message
	}
	return st
}

func (s *Service) createSession(c *fiber.Ctx) error {
	var in sessionInput
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	var e *apierr.Error
	if in.PromptID, e = text("prompt_id", in.PromptID, maxName, true); e != nil {
		return e
	}
	if in.Name, e = text("name", in.Name, maxName, false); e != nil {
		return e
	}
	if in.FromVersion != nil && in.hasState() {
		return apierr.BadRequest("invalid_value", "from_version", "give either from_version or a state (messages, model_params, provider, model), not both")
	}
	st := State{Messages: in.Messages, ModelParams: in.ModelParams, Provider: in.Provider, Model: in.Model}
	if e := st.normalize(); e != nil {
		return e
	}
	now := s.now().UTC()
	ses := Session{ID: newID(), Name: in.Name, CreatedAt: now, UpdatedAt: now}
	err := s.update(c.UserContext(), func(tx store.Tx) error {
		p, err := store.GetJSON[Prompt](tx, nsPrompts, in.PromptID)
		if err != nil {
			if isNotFound(err) {
				return apierr.BadRequest("invalid_value", "prompt_id", "prompt "+in.PromptID+" does not exist")
			}
			return err
		}
		ses.PromptID, ses.State, ses.BaseVersionNumber = p.ID, st, 0
		base := p.LatestVersionNumber
		if in.FromVersion != nil {
			base = *in.FromVersion
		} else if in.hasState() {
			base = 0
		}
		if base > 0 {
			v, err := store.GetJSON[Version](tx, nsVersions, versionKey(p.ID, base))
			if err != nil {
				if isNotFound(err) {
					return apierr.BadRequest("invalid_value", "from_version", "the prompt has no version "+itoa(base))
				}
				return err
			}
			ses.State, ses.BaseVersionNumber = stateOfVersion(&v), base
		}
		return store.PutJSON(tx, nsSessions, ses.ID, ses)
	})
	if err != nil {
		return storeErr(err)
	}
	return c.Status(http.StatusCreated).JSON(fiber.Map{"session": ses})
}

func (s *Service) listSessions(c *fiber.Ctx) error {
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	prompt := c.Query("prompt_id")
	var all []Session
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		all, err = store.ListJSON[Session](tx, nsSessions, store.ScanOptions{})
		return err
	})
	if err != nil {
		return storeErr(err)
	}
	matched := make([]Session, 0, len(all))
	for _, ses := range all {
		if prompt == "" || ses.PromptID == prompt {
			matched = append(matched, ses)
		}
	}
	sort.Slice(matched, func(i, j int) bool { return matched[i].ID > matched[j].ID })
	out := listing.Window(matched, limit, offset)
	return c.JSON(fiber.Map{"sessions": out, "count": len(out), "total_count": len(matched), "limit": limit, "offset": offset})
}

func (s *Service) getSession(c *fiber.Ctx) error {
	var ses Session
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		ses, err = get[Session](tx, nsSessions, "session", c.Params("id"))
		return err
	})
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(fiber.Map{"session": ses})
}

// updateSession replaces the working state: fields left out are emptied,
// so what the client sent is exactly what a commit will freeze.
func (s *Service) updateSession(c *fiber.Ctx) error {
	var in stateInput
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	var e *apierr.Error
	if in.Name, e = text("name", in.Name, maxName, false); e != nil {
		return e
	}
	st := State{Messages: in.Messages, ModelParams: in.ModelParams, Provider: in.Provider, Model: in.Model}
	if e := st.normalize(); e != nil {
		return e
	}
	var ses Session
	err := s.update(c.UserContext(), func(tx store.Tx) error {
		var err error
		if ses, err = get[Session](tx, nsSessions, "session", c.Params("id")); err != nil {
			return err
		}
		ses.Name, ses.State, ses.UpdatedAt = in.Name, st, s.now().UTC()
		return store.PutJSON(tx, nsSessions, ses.ID, ses)
	})
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(fiber.Map{"session": ses})
}

func (s *Service) deleteSession(c *fiber.Ctx) error {
	id := c.Params("id")
	err := s.update(c.UserContext(), func(tx store.Tx) error {
		if _, err := get[Session](tx, nsSessions, "session", id); err != nil {
			return err
		}
		return tx.Delete(nsSessions, id)
	})
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(fiber.Map{"status": "success", "message": "session deleted; its committed versions remain"})
}
