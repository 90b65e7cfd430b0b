// Package promptrepo is the prompt repository: prompts (optionally filed in
// folders), editing sessions holding a working state, and immutable prompt
// versions committed from a session. Everything lives in the main store;
// a commit is one transaction.
package promptrepo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/auth"
	"github.com/wasmgate/gateway/store"
)

// Options configure the prompt repository.
type Options struct {
	// Store is the main (fsync'd, sealed) store.
	Store store.Store
	// Now is the clock stamping records; time.Now when nil.
	Now func() time.Time
}

// Service is the prompt repository capability.
type Service struct {
	st  store.Store
	now func() time.Time
	// commitMu serialises commits in this process. The transaction alone
	// is correct (a conflicting commit is retried by the store), but many
	// concurrent commits of one prompt would exhaust the store's retries;
	// queuing them here makes each commit one attempt.
	commitMu sync.Mutex
}

// New returns the prompt repository on o.Store.
func New(o Options) (*Service, error) {
	if o.Store == nil {
		return nil, errors.New("promptrepo: a store is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{st: o.Store, now: o.Now}, nil
}

// Routes registers /api/prompt-repo.
func (s *Service) Routes(api *auth.Router) {
	const res = "PromptRepository"
	view, create := auth.Perm(res, "View"), auth.Perm(res, "Create")
	upd, del := auth.Perm(res, "Update"), auth.Perm(res, "Delete")

	api.Get("/prompt-repo/folders", view, s.listFolders)
	api.Post("/prompt-repo/folders", create, s.createFolder)
	api.Get("/prompt-repo/folders/:id", view, s.getFolder)
	api.Put("/prompt-repo/folders/:id", upd, s.updateFolder)
	api.Delete("/prompt-repo/folders/:id", del, s.deleteFolder)

	api.Get("/prompt-repo/prompts", view, s.listPrompts)
	api.Post("/prompt-repo/prompts", create, s.createPrompt)
	api.Get("/prompt-repo/prompts/:id", view, s.getPrompt)
	api.Put("/prompt-repo/prompts/:id", upd, s.updatePrompt)
	api.Delete("/prompt-repo/prompts/:id", del, s.deletePrompt)
	api.Get("/prompt-repo/prompts/:id/versions", view, s.listVersions)
	api.Get("/prompt-repo/prompts/:id/versions/:number", view, s.getVersionByNumber)
	api.Get("/prompt-repo/versions/:id", view, s.getVersion)

	api.Get("/prompt-repo/sessions", view, s.listSessions)
	api.Post("/prompt-repo/sessions", create, s.createSession)
	api.Get("/prompt-repo/sessions/:id", view, s.getSession)
	api.Put("/prompt-repo/sessions/:id", upd, s.updateSession)
	api.Delete("/prompt-repo/sessions/:id", del, s.deleteSession)
	// Commit creates a version: the Create permission, like creating a prompt.
	api.Post("/prompt-repo/sessions/:id/commit", create, s.commit)
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// update runs fn in a write transaction, turning a lost race that outlived
// the store's retries into a 409 the client can retry.
func (s *Service) update(ctx context.Context, fn func(tx store.Tx) error) error {
	err := s.st.Update(ctx, fn)
	if errors.Is(err, store.ErrConflict) {
		return apierr.Conflict("concurrent_update", "the record changed concurrently; retry the request")
	}
	return err
}

// storeErr maps a store or validation error to the envelope.
func storeErr(err error) error {
	var e *apierr.Error
	if errors.As(err, &e) {
		return e
	}
	return apierr.Internal(fmt.Errorf("promptrepo: %w", err))
}
