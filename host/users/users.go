package users

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/store"
)

// Field limits.
const (
	maxNameLen     = 200
	maxEmailLen    = 254
	minPasswordLen = 8
	maxPasswordLen = 72 // bcrypt's limit
	maxRefs        = 1000
)

// SourceDirect marks a team membership assigned through the API. Other
// sources (directory or SSO group sync) would name themselves the same way.
const SourceDirect = "direct"

// Membership is a user's membership of a team and where it came from.
type Membership struct {
	TeamID string `json:"team_id"`
	Source string `json:"source"`
}

// NamedRef is the spec's {id, name} pair (teams, business units).
type NamedRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// userRecord is the stored user. The password is only ever a bcrypt hash.
type userRecord struct {
	ID            string       `json:"id"`
	Name          string       `json:"name"`
	Email         string       `json:"email"`
	RoleID        int64        `json:"role_id"`
	PasswordHash  string       `json:"password_hash,omitempty"`
	Teams         []Membership `json:"teams,omitempty"`
	VirtualKeyIDs []string     `json:"virtual_key_ids,omitempty"`
	BusinessUnits []NamedRef   `json:"business_units,omitempty"`
	// SessionsNotBefore is the last password change: older sessions end.
	SessionsNotBefore time.Time `json:"sessions_not_before,omitzero"`
	CreatedAt         time.Time `json:"created_at"`
	UpdatedAt         time.Time `json:"updated_at"`
}

// User is the spec's User as the API shows it (never the password), plus
// virtual_key_ids and has_password.
type User struct {
	ID             string          `json:"id"`
	Name           string          `json:"name"`
	Email          string          `json:"email"`
	RoleID         int64           `json:"role_id"`
	Role           RoleRef         `json:"role"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	Teams          []NamedRef      `json:"teams"`
	BusinessUnits  []NamedRef      `json:"business_units"`
	AccessProfiles []AccessProfile `json:"access_profiles"`
	AccessProfile  *AccessProfile  `json:"access_profile"`
	VirtualKeyIDs  []string        `json:"virtual_key_ids"`
	HasPassword    bool            `json:"has_password"`
}

// userInput is the create body and the partial update body: on update,
// absent members keep their value and a sent list replaces the old one.
type userInput struct {
	Name          *string     `json:"name"`
	Email         *string     `json:"email"`
	Password      *string     `json:"password"`
	RoleID        *int64      `json:"role_id"`
	TeamIDs       *[]string   `json:"team_ids"`
	VirtualKeyIDs *[]string   `json:"virtual_key_ids"`
	BusinessUnits *[]NamedRef `json:"business_units"`
}

func validEmail(e string) bool {
	if e == "" || len(e) > maxEmailLen {
		return false
	}
	a, err := mail.ParseAddress(e)
	// Only a bare address: no display name, comments or angle brackets.
	return err == nil && a.Address == e && a.Name == "" && strings.Contains(e[strings.LastIndex(e, "@"):], ".")
}

// applyUser validates in against the store and writes the result into rec,
// keeping the email index in step. On create, name and email are required
// and the role defaults to viewer.
func (s *Service) applyUser(ctx context.Context, tx store.Tx, rec *userRecord, in userInput, create bool) *apierr.Error {
	if in.Name != nil {
		n := strings.TrimSpace(*in.Name)
		if n == "" {
			return apierr.BadRequest("missing_field", "name", "name is required")
		}
		if len(n) > maxNameLen {
			return apierr.BadRequest("invalid_value", "name", fmt.Sprintf("name must be at most %d characters", maxNameLen))
		}
		rec.Name = n
	} else if create {
		return apierr.BadRequest("missing_field", "name", "name is required")
	}
	if in.Email != nil {
		e := strings.TrimSpace(*in.Email)
		if !validEmail(e) {
			return apierr.BadRequest("invalid_value", "email", fmt.Sprintf("email %q is not a valid address (user@example.com)", e))
		}
		if !strings.EqualFold(e, rec.Email) {
			owner, err := tx.Get(nsEmails, emailKey(e))
			if err == nil && string(owner) != rec.ID {
				return apierr.Conflict("email_taken", fmt.Sprintf("a user with email %q already exists", e)).WithParam("email")
			}
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return apierr.Internal(err)
			}
			if rec.Email != "" {
				if err := tx.Delete(nsEmails, emailKey(rec.Email)); err != nil {
					return apierr.Internal(err)
				}
			}
			if err := tx.Put(nsEmails, emailKey(e), []byte(rec.ID)); err != nil {
				return apierr.Internal(err)
			}
		}
		rec.Email = e
	} else if create {
		return apierr.BadRequest("missing_field", "email", "email is required")
	}
	if in.Password != nil {
		pw := *in.Password
		if len(pw) < minPasswordLen || len(pw) > maxPasswordLen {
			return apierr.BadRequest("invalid_value", "password",
				fmt.Sprintf("password must be %d to %d bytes long", minPasswordLen, maxPasswordLen))
		}
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
		if err != nil {
			return apierr.Internal(fmt.Errorf("users: hash password: %w", err))
		}
		rec.PasswordHash = string(h)
		if !create {
			rec.SessionsNotBefore = s.now().UTC()
		}
	}
	if in.RoleID != nil {
		if _, err := s.getRole(tx, *in.RoleID); errors.Is(err, store.ErrNotFound) {
			return apierr.BadRequest("invalid_value", "role_id", fmt.Sprintf("role %d not found", *in.RoleID))
		} else if err != nil {
			return apierr.Internal(err)
		}
		rec.RoleID = *in.RoleID
	} else if create {
		// Least privilege when no role is named.
		rec.RoleID = RoleViewer
	}
	if in.TeamIDs != nil {
		ids, e := s.checkRefs(ctx, "team_ids", *in.TeamIDs, s.teamExists)
		if e != nil {
			return e
		}
		teams := make([]Membership, 0, len(ids))
		for _, id := range ids {
			teams = append(teams, Membership{TeamID: id, Source: SourceDirect})
		}
		rec.Teams = teams
	}
	if in.VirtualKeyIDs != nil {
		ids, e := s.checkRefs(ctx, "virtual_key_ids", *in.VirtualKeyIDs, s.virtualKeyExists)
		if e != nil {
			return e
		}
		rec.VirtualKeyIDs = ids
	}
	if in.BusinessUnits != nil {
		bus := *in.BusinessUnits
		if len(bus) > maxRefs {
			return apierr.BadRequest("invalid_value", "business_units", fmt.Sprintf("at most %d business units", maxRefs))
		}
		for i := range bus {
			bus[i].ID, bus[i].Name = strings.TrimSpace(bus[i].ID), strings.TrimSpace(bus[i].Name)
			if bus[i].ID == "" {
				return apierr.BadRequest("missing_field", fmt.Sprintf("business_units[%d].id", i), "a business unit needs an id")
			}
		}
		rec.BusinessUnits = bus
	}
	return nil
}

// checkRefs de-duplicates ids and checks each exists, naming field[i] otherwise.
func (s *Service) checkRefs(ctx context.Context, field string, ids []string, exists func(context.Context, string) (bool, error)) ([]string, *apierr.Error) {
	if len(ids) > maxRefs {
		return nil, apierr.BadRequest("invalid_value", field, fmt.Sprintf("at most %d entries", maxRefs))
	}
	out := make([]string, 0, len(ids))
	for i, id := range ids {
		id = strings.TrimSpace(id)
		if slices.Contains(out, id) {
			continue
		}
		ok, err := exists(ctx, id)
		if err != nil {
			return nil, apierr.Internal(err)
		}
		if !ok {
			return nil, apierr.BadRequest("invalid_value", fmt.Sprintf("%s[%d]", field, i), fmt.Sprintf("%q does not exist", id))
		}
		out = append(out, id)
	}
	return out, nil
}

func (s *Service) teamExists(ctx context.Context, id string) (bool, error) {
	if s.dir == nil || id == "" {
		return false, nil
	}
	_, ok, err := s.dir.TeamName(ctx, id)
	return ok, err
}

func (s *Service) virtualKeyExists(ctx context.Context, id string) (bool, error) {
	if s.dir == nil || id == "" {
		return false, nil
	}
	return s.dir.VirtualKeyExists(ctx, id)
}

// view builds the API form of rec inside tx: role summary, team names and
// access profiles. Team names come from the Directory; a team it no longer
// knows keeps its id with an empty name.
func (s *Service) view(ctx context.Context, tx store.Tx, rec userRecord) (User, error) {
	u := User{ID: rec.ID, Name: rec.Name, Email: rec.Email, RoleID: rec.RoleID,
		CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt, HasPassword: rec.PasswordHash != "",
		Teams: []NamedRef{}, BusinessUnits: []NamedRef{}, VirtualKeyIDs: []string{}}
	role, err := s.getRole(tx, rec.RoleID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return u, err
	}
	u.Role = role.ref()
	u.Role.ID = rec.RoleID
	for _, m := range rec.Teams {
		name := ""
		if s.dir != nil {
			if n, ok, err := s.dir.TeamName(ctx, m.TeamID); err == nil && ok {
				name = n
			}
		}
		u.Teams = append(u.Teams, NamedRef{ID: m.TeamID, Name: name})
	}
	u.BusinessUnits = append(u.BusinessUnits, rec.BusinessUnits...)
	u.VirtualKeyIDs = append(u.VirtualKeyIDs, rec.VirtualKeyIDs...)
	ps, err := s.userProfiles(tx, rec.ID)
	if err != nil {
		return u, err
	}
	u.AccessProfiles = append([]AccessProfile{}, ps...)
	u.AccessProfile = effectiveProfile(ps, s.now())
	return u, nil
}

// emailKey is the email index key: a digest of the lower-cased address,
// because the sealed store encrypts values but not keys and an address is
// personal data.
func emailKey(email string) string {
	h := sha256.Sum256([]byte(strings.ToLower(email)))
	return hex.EncodeToString(h[:])
}
