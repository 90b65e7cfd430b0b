package promptrepo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/providers"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// Folder groups prompts; filing a prompt in one is optional.
type Folder struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Prompt is a named prompt whose content lives in its versions.
type Prompt struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	FolderID    string `json:"folder_id,omitempty"`
	// LatestVersionID and LatestVersionNumber point at the version marked
	// is_latest (0 before the first commit). Versions do not store
	// is_latest: it is derived from this pointer, which the commit moves
	// in the same transaction that writes the version, so exactly one
	// version is ever the latest and versions stay immutable.
	LatestVersionID     int64     `json:"latest_version_id"`
	LatestVersionNumber int64     `json:"latest_version_number"`
	CreatedAt           time.Time `json:"created_at"`
	UpdatedAt           time.Time `json:"updated_at"`
}

// State is the editable content of a prompt: what a session holds and a
// version freezes.
type State struct {
	// Messages are chat messages ({"role": ..., "content": ...}) kept as
	// sent, so any content shape the inference API takes is preserved.
	Messages []json.RawMessage `json:"messages"`
	// ModelParams are request parameters (temperature, max_tokens, ...).
	ModelParams json.RawMessage `json:"model_params"`
	Provider    string          `json:"provider"`
	Model       string          `json:"model"`
}

// Session is a working copy of a prompt being edited.
type Session struct {
	ID       string `json:"id"`
	PromptID string `json:"prompt_id"`
	Name     string `json:"name"`
	State
	// BaseVersionNumber is the version the session started from (0: none).
	BaseVersionNumber int64     `json:"base_version_number"`
	CreatedAt         time.Time `json:"created_at"`
	UpdatedAt         time.Time `json:"updated_at"`
}

// VersionMessage is one message of a version, with its own id.
type VersionMessage struct {
	ID         int64           `json:"id"`
	OrderIndex int             `json:"order_index"`
	Message    json.RawMessage `json:"message"`
}

// Version is an immutable snapshot of a session's state (the spec's
// Prompt version).
type Version struct {
	ID            int64            `json:"id"`
	PromptID      string           `json:"prompt_id"`
	VersionNumber int64            `json:"version_number"`
	CommitMessage string           `json:"commit_message"`
	ModelParams   json.RawMessage  `json:"model_params"`
	Provider      string           `json:"provider"`
	Model         string           `json:"model"`
	IsLatest      bool             `json:"is_latest"`
	CreatedAt     time.Time        `json:"created_at"`
	Messages      []VersionMessage `json:"messages"`
	// SessionID is the session it was committed from.
	SessionID string `json:"session_id,omitempty"`
}

// Limits on what a client may store.
const (
	maxName        = 200
	maxDescription = 2000
	maxCommitMsg   = 2000
	maxModel       = 256
	maxMessages    = 1000
)

// text trims s and checks its length; required says whether it may be empty.
func text(field, s string, max int, required bool) (string, *apierr.Error) {
	s = strings.TrimSpace(s)
	if required && s == "" {
		return "", apierr.BadRequest("missing_field", field, field+" is required")
	}
	if len(s) > max {
		return "", apierr.BadRequest("invalid_value", field, fmt.Sprintf("%s must be at most %d characters", field, max))
	}
	return s, nil
}

// normalize checks a state and fills defaults: messages must be JSON
// objects with a string role, model_params an object, provider a known
// provider id.
func (st *State) normalize() *apierr.Error {
	if st.Messages == nil {
		st.Messages = []json.RawMessage{}
	}
	if len(st.Messages) > maxMessages {
		return apierr.BadRequest("invalid_value", "messages", fmt.Sprintf("at most %d messages", maxMessages))
	}
	for i, m := range st.Messages {
		field := fmt.Sprintf("messages[%d]", i)
		m = bytes.TrimSpace(m)
		if len(m) == 0 || m[0] != '{' {
			return apierr.BadRequest("invalid_type", field, field+" must be an object")
		}
		role, ok := jsonx.StringField(m, "role")
		if !ok || len(role) == 0 {
			return apierr.BadRequest("missing_field", field+".role", field+".role is required (system, user, assistant, tool, ...)")
		}
		st.Messages[i] = m
	}
	mp := bytes.TrimSpace(st.ModelParams)
	switch {
	case len(mp) == 0 || bytes.Equal(mp, []byte("null")):
		st.ModelParams = json.RawMessage(`{}`)
	case mp[0] != '{':
		return apierr.BadRequest("invalid_type", "model_params", "model_params must be an object")
	default:
		st.ModelParams = mp
	}
	st.Provider = strings.ToLower(strings.TrimSpace(st.Provider))
	if st.Provider != "" {
		if _, ok := providers.Lookup(st.Provider); !ok {
			return apierr.BadRequest("invalid_value", "provider", fmt.Sprintf("unknown provider %q", st.Provider))
		}
	}
	var e *apierr.Error
	st.Model, e = text("model", st.Model, maxModel, false)
	return e
}
