// Package users owns dashboard users, RBAC roles and access profiles
// (spec: User, Team member, Authentication rules 3 and 4).
//
// A user logs in with email and password (POST /api/session/login) and gets
// a dashboard session whose permissions are those of the user's role plus
// the grants of the user's active, unexpired access profiles. The package
// implements auth.Accounts so auth resolves those permissions on every
// request, and serves /api/users, /api/roles, /api/permissions,
// /api/governance/access-profiles and the team-member and virtual-key-user
// listings.
package users

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/wasmgate/gateway/host/auth"
	"github.com/wasmgate/gateway/store"
)

// Store namespaces owned by this package.
const (
	nsUsers          = "users"                  // user id -> userRecord
	nsEmails         = "users_emails"           // emailKey(email) -> user id (uniqueness, login)
	nsRoles          = "users_roles"            // intKey(role id) -> Role (custom roles only)
	nsRoleNames      = "users_role_names"       // lower-case name -> role id (uniqueness)
	nsProfiles       = "users_profiles"         // intKey(profile id) -> AccessProfile
	nsProfilesByUser = "users_profiles_by_user" // user id/intKey(profile id) -> "" (a user's profiles)
	nsSeq            = "users_seq"              // sequence name -> last id
)

// Directory answers questions about teams and virtual keys, which the
// governance capability owns. The server wires it; with none, every team and
// virtual key is unknown (listings 404, assignments 400).
type Directory interface {
	// TeamName returns the team's name; ok is false for an unknown team.
	TeamName(ctx context.Context, id string) (name string, ok bool, err error)
	// VirtualKeyExists reports whether the virtual key id exists.
	VirtualKeyExists(ctx context.Context, id string) (bool, error)
}

// Options configures a Service.
type Options struct {
	// Store holds users, roles and profiles; sealed at rest by the server.
	Store store.Store
	// Routes is the management route table: the permission catalog (what a
	// role may grant) and the system roles' permissions derive from it.
	Routes *auth.Table
	// Directory resolves team names and virtual keys; may be nil.
	Directory Directory
	Log       *slog.Logger
	// Now is the clock (access profile expiry); time.Now when nil.
	Now func() time.Time
}

// Service is the users, roles and access profiles capability. It is safe
// for concurrent use.
type Service struct {
	st      store.Store
	dir     Directory
	log     *slog.Logger
	now     func() time.Time
	catalog *catalogCache
	// dummyHash is compared against when a login names an unknown email so
	// that answer takes as long as a wrong password (no user enumeration).
	dummyHash []byte
}

// New returns the capability.
func New(o Options) (*Service, error) {
	if o.Store == nil || o.Routes == nil {
		return nil, errors.New("users: a store and a route table are required")
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	dummy, err := bcrypt.GenerateFromPassword([]byte("wasmgate-no-such-user"), bcrypt.DefaultCost)
	if err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	return &Service{st: o.Store, dir: o.Directory, log: o.Log, now: o.Now,
		catalog: &catalogCache{table: o.Routes}, dummyHash: dummy}, nil
}

var _ auth.Accounts = (*Service)(nil)

// Login implements auth.Accounts: email (case-insensitive) and bcrypt password.
func (s *Service) Login(ctx context.Context, email, password string) (string, bool, error) {
	var rec userRecord
	found := false
	err := s.st.View(ctx, func(tx store.Tx) error {
		id, err := tx.Get(nsEmails, emailKey(strings.TrimSpace(email)))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		rec, err = store.GetJSON[userRecord](tx, nsUsers, string(id))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil {
		return "", false, fmt.Errorf("users: login: %w", err)
	}
	hash := s.dummyHash
	if found && rec.PasswordHash != "" {
		hash = []byte(rec.PasswordHash)
	}
	ok := bcrypt.CompareHashAndPassword(hash, []byte(password)) == nil
	if !found || rec.PasswordHash == "" || !ok {
		return "", false, nil
	}
	return rec.ID, true, nil
}

// Permissions implements auth.Accounts: the role's permissions plus the
// grants of the user's active, unexpired access profiles. A session created
// before the user's last password change is no longer valid.
func (s *Service) Permissions(ctx context.Context, userID string, sessionCreated time.Time) ([]string, bool, error) {
	var perms []string
	found := false
	err := s.st.View(ctx, func(tx store.Tx) error {
		rec, err := store.GetJSON[userRecord](tx, nsUsers, userID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if sessionCreated.Before(rec.SessionsNotBefore) {
			return nil
		}
		found = true
		role, err := s.getRole(tx, rec.RoleID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			// A role cannot be deleted while assigned; if it is gone
			// anyway the user keeps only profile grants.
		case err != nil:
			return err
		default:
			perms = append(perms, role.Permissions...)
		}
		profiles, err := s.userProfiles(tx, userID)
		if err != nil {
			return err
		}
		now := s.now()
		for _, p := range profiles {
			perms = append(perms, s.profileGrants(tx, p, now)...)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("users: permissions of %s: %w", userID, err)
	}
	return perms, found, nil
}
