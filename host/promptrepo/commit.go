package promptrepo

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/store"
)

type commitInput struct {
	CommitMessage string `json:"commit_message"`
}

// commit freezes the session's working state as the prompt's next version.
// One transaction reads the session and prompt, reserves the version and
// message ids, writes the version and its id index and moves the prompt's
// latest pointer: a crash leaves either all of it or none, and two commits
// can never take the same version number (the second conflicts on the
// prompt record and is retried on the new state).
func (s *Service) commit(c *fiber.Ctx) error {
	var in commitInput
	// The body is optional: an empty one commits without a message.
	if len(bytes.TrimSpace(c.Body())) > 0 {
		if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
			return e
		}
	}
	var e *apierr.Error
	if in.CommitMessage, e = text("commit_message", in.CommitMessage, maxCommitMsg, false); e != nil {
		return e
	}
	id := c.Params("id")
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	var v Version
	err := s.update(c.UserContext(), func(tx store.Tx) error {
		ses, err := store.GetJSON[Session](tx, nsSessions, id)
		if err != nil {
			if isNotFound(err) {
				return apierr.New(http.StatusNotFound, apierr.TypeNotFound, "session_not_found", "prompt session "+strconv.Quote(id)+" not found")
			}
			return err
		}
		if len(ses.Messages) == 0 {
			return apierr.BadRequest("empty_session", "messages", "the session has no messages to commit; add messages with PUT /api/prompt-repo/sessions/"+id)
		}
		p, err := store.GetJSON[Prompt](tx, nsPrompts, ses.PromptID)
		if err != nil {
			if isNotFound(err) {
				return apierr.New(http.StatusNotFound, apierr.TypeNotFound, "prompt_not_found", "the session's prompt "+strconv.Quote(ses.PromptID)+" no longer exists")
			}
			return err
		}
		vid, err := nextIDs(tx, "version", 1)
		if err != nil {
			return err
		}
		mid, err := nextIDs(tx, "message", int64(len(ses.Messages)))
		if err != nil {
			return err
		}
		now := s.now().UTC()
		v = Version{ID: vid, PromptID: p.ID, VersionNumber: p.LatestVersionNumber + 1, CommitMessage: in.CommitMessage,
			ModelParams: ses.ModelParams, Provider: ses.Provider, Model: ses.Model, CreatedAt: now,
			Messages: make([]VersionMessage, len(ses.Messages)), SessionID: ses.ID}
		for i, m := range ses.Messages {
			v.Messages[i] = VersionMessage{ID: mid + int64(i), OrderIndex: i, Message: m}
		}
		key := versionKey(p.ID, v.VersionNumber)
		if err := store.PutJSON(tx, nsVersions, key, v); err != nil {
			return err
		}
		if err := tx.Put(nsVersionIDs, versionIDKey(v.ID), []byte(key)); err != nil {
			return err
		}
		p.LatestVersionID, p.LatestVersionNumber, p.UpdatedAt = v.ID, v.VersionNumber, now
		if err := store.PutJSON(tx, nsPrompts, p.ID, p); err != nil {
			return err
		}
		// The session now continues from the version it produced.
		ses.BaseVersionNumber, ses.UpdatedAt = v.VersionNumber, now
		return store.PutJSON(tx, nsSessions, ses.ID, ses)
	})
	if err != nil {
		return storeErr(err)
	}
	v.IsLatest = true
	return c.JSON(fiber.Map{"version": v})
}
