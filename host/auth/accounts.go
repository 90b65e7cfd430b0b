package auth

import (
	"context"
	"fmt"
	"time"
)

// KindUser is a dashboard session of a user account (host/users): its
// permissions come from the user's role and access profiles.
const KindUser Kind = "user"

// Accounts is a user directory taking part in login and session
// authentication (host/users implements it). auth depends on it through this
// interface so users can register its routes through auth.Router without an
// import cycle.
type Accounts interface {
	// Login checks an email and password and returns the user id when they
	// match; ok is false for an unknown email or a wrong password.
	Login(ctx context.Context, email, password string) (userID string, ok bool, err error)
	// Permissions returns the user's current Resource:Operation grants
	// (role plus active access profiles) for a session created at
	// sessionCreated; ok is false when the user no longer exists or the
	// session predates a password change, which ends the session.
	Permissions(ctx context.Context, userID string, sessionCreated time.Time) (perms []string, ok bool, err error)
}

// SetAccounts plugs a user directory into login and session checks. Call it
// during provisioning, before the server accepts requests.
func (s *Service) SetAccounts(a Accounts) { s.accounts.Store(&a) }

func (s *Service) userAccounts() Accounts {
	if p := s.accounts.Load(); p != nil {
		return *p
	}
	return nil
}

// userPrincipal resolves a user session. Permissions are read on every
// request so a role change or a deleted user takes effect at once.
func (s *Service) userPrincipal(ctx context.Context, sess *session) (*Principal, error) {
	acc := s.userAccounts()
	if acc == nil {
		return nil, nil
	}
	perms, ok, err := acc.Permissions(ctx, sess.Subject, sess.CreatedAt)
	if err != nil {
		return nil, fmt.Errorf("auth: user permissions: %w", err)
	}
	if !ok {
		return nil, nil
	}
	return &Principal{Kind: KindUser, Subject: sess.Subject, Scopes: perms}, nil
}
