package promptrepo

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/store"
)

// Namespaces of the main store.
const (
	nsFolders  = "promptrepo_folders"
	nsPrompts  = "promptrepo_prompts"
	nsSessions = "promptrepo_sessions"
	// nsVersions is keyed prompt id + "/" + zero-padded version number,
	// so one prefix scan lists a prompt's versions in order.
	nsVersions = "promptrepo_versions"
	// nsVersionIDs maps a version's integer id (zero-padded) to its key
	// in nsVersions, for GET /versions/{id}.
	nsVersionIDs = "promptrepo_version_ids"
	// nsSeq holds the integer id sequences of versions and messages.
	nsSeq = "promptrepo_seq"
)

func versionKey(promptID string, number int64) string {
	return fmt.Sprintf("%s/%012d", promptID, number)
}

func versionIDKey(id int64) string { return fmt.Sprintf("%019d", id) }

// nextIDs reserves n ids of sequence name inside tx and returns the first.
// Two transactions reserving at once conflict on the sequence key, so ids
// are never handed out twice.
func nextIDs(tx store.Tx, name string, n int64) (int64, error) {
	var cur int64
	raw, err := tx.Get(nsSeq, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return 0, err
	default:
		if cur, err = strconv.ParseInt(string(raw), 10, 64); err != nil {
			return 0, fmt.Errorf("sequence %s is corrupt: %w", name, err)
		}
	}
	if err := tx.Put(nsSeq, name, []byte(strconv.FormatInt(cur+n, 10))); err != nil {
		return 0, err
	}
	return cur + 1, nil
}

// get reads ns/id into a T, or a 404 naming what.
func get[T any](tx store.Tx, ns, what, id string) (T, error) {
	v, err := store.GetJSON[T](tx, ns, id)
	if errors.Is(err, store.ErrNotFound) {
		return v, apierr.NotFound(what, id)
	}
	return v, err
}
