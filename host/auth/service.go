// Package auth authenticates management callers and enforces the
// Resource:Operation permission every /api route declares.
//
// Credentials accepted on management routes: Basic admin credentials; a
// Bearer management API key (gwm_...), dashboard session token (gws_...) or
// base64 of "user:password"; the dashboard session cookie. Virtual keys and
// x-api-key are refused. While dashboard auth is inactive the setup lock
// applies instead: X-Gateway-Setup-Token (or the gateway_setup_session cookie
// it was traded for) is required on every non-public route.
package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/wasmgate/gateway/store"
)

// Store namespaces owned by auth.
const (
	nsAuth        = "auth"
	nsSessions    = "auth_sessions"
	nsAPIKeys     = "auth_api_keys"
	nsAPIKeyIndex = "auth_api_key_index"
)

// adminState is the persisted dashboard auth configuration.
type adminState struct {
	Enabled      bool      `json:"enabled"`
	Username     string    `json:"username"`
	PasswordHash string    `json:"password_hash"`
	ConfigHash   string    `json:"config_hash,omitempty"`
	UpdatedAt    time.Time `json:"updated_at"`
}

func (a *adminState) active() bool { return a.Enabled && a.Username != "" && a.PasswordHash != "" }

// Options configures the Service.
type Options struct {
	Store store.Store
	Log   *slog.Logger
	// SetupToken is the configured setup token; when empty one is generated,
	// persisted and written to SetupTokenFile.
	SetupToken     string
	SetupTokenFile string
	SessionTTL     time.Duration
	// LoginAttemptsPerMinute bounds failed credential checks per client.
	LoginAttemptsPerMinute int
	// Now is the clock (tests inject one).
	Now func() time.Time
}

// Service holds auth state. It is safe for concurrent use.
type Service struct {
	st         store.Store
	log        *slog.Logger
	now        func() time.Time
	sessionTTL time.Duration
	setupToken string
	throttle   *throttle

	admin atomic.Pointer[adminState]
	// accounts is the user directory (SetAccounts); nil until set.
	accounts atomic.Pointer[Accounts]
	// basicOK caches successful password checks (bcrypt is deliberately
	// slow) under an HMAC of the credentials with a per-process key.
	cacheKey [32]byte
	basicMu  sync.Mutex
	basicOK  map[string]time.Time
}

// New loads auth state from the store and prepares the setup token.
func New(ctx context.Context, o Options) (*Service, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = 24 * time.Hour
	}
	if o.LoginAttemptsPerMinute <= 0 {
		o.LoginAttemptsPerMinute = 10
	}
	s := &Service{
		st: o.Store, log: o.Log, now: o.Now, sessionTTL: o.SessionTTL,
		throttle: newThrottle(o.LoginAttemptsPerMinute, time.Minute, o.Now),
		basicOK:  map[string]time.Time{},
	}
	if _, err := rand.Read(s.cacheKey[:]); err != nil {
		return nil, fmt.Errorf("auth: random: %w", err)
	}
	var st adminState
	err := s.st.View(ctx, func(tx store.Tx) error {
		v, err := store.GetJSON[adminState](tx, nsAuth, "admin")
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		st = v
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("auth: load admin state: %w", err)
	}
	s.admin.Store(&st)
	if err := s.initSetupToken(ctx, o.SetupToken, o.SetupTokenFile); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Service) initSetupToken(ctx context.Context, configured, file string) error {
	if configured != "" {
		s.setupToken = configured
		return nil
	}
	err := s.st.Update(ctx, func(tx store.Tx) error {
		v, err := tx.Get(nsAuth, "setup_token")
		if err == nil {
			s.setupToken = string(v)
			return nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		s.setupToken = "gwsetup_" + randomToken(24)
		return tx.Put(nsAuth, "setup_token", []byte(s.setupToken))
	})
	if err != nil {
		return fmt.Errorf("auth: setup token: %w", err)
	}
	if file != "" {
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			return fmt.Errorf("auth: setup token file: %w", err)
		}
		if err := os.WriteFile(file, []byte(s.setupToken+"\n"), 0o600); err != nil {
			return fmt.Errorf("auth: setup token file: %w", err)
		}
	}
	return nil
}

// SyncConfig reconciles the config file's auth_config with the stored state:
// the file wins only when its content changed since the last sync, so an
// admin password changed through the API survives a restart.
func (s *Service) SyncConfig(ctx context.Context, enabled *bool, username, password string) error {
	if username == "" && password == "" && enabled == nil {
		return nil
	}
	en := username != "" && password != ""
	if enabled != nil {
		en = *enabled && en
	}
	h := sha256.Sum256([]byte(fmt.Sprintf("%t\x00%s\x00%s", en, username, password)))
	hash := hex.EncodeToString(h[:])
	cur := s.admin.Load()
	if cur.ConfigHash == hash {
		return nil
	}
	next := &adminState{Enabled: en, Username: username, ConfigHash: hash, UpdatedAt: s.now().UTC()}
	if password != "" {
		ph, err := hashPassword(password)
		if err != nil {
			return err
		}
		next.PasswordHash = ph
	}
	return s.saveAdmin(ctx, next)
}

func (s *Service) saveAdmin(ctx context.Context, st *adminState) error {
	err := s.st.Update(ctx, func(tx store.Tx) error { return store.PutJSON(tx, nsAuth, "admin", st) })
	if err != nil {
		return fmt.Errorf("auth: save admin state: %w", err)
	}
	s.admin.Store(st)
	s.basicMu.Lock()
	clear(s.basicOK)
	s.basicMu.Unlock()
	return nil
}

// hashPassword bcrypts plain text; an existing bcrypt hash is kept as given
// so operators can keep only hashes in their config files.
func hashPassword(p string) (string, error) {
	if strings.HasPrefix(p, "$2a$") || strings.HasPrefix(p, "$2b$") || strings.HasPrefix(p, "$2y$") {
		if _, err := bcrypt.Cost([]byte(p)); err == nil {
			return p, nil
		}
	}
	if len(p) > 72 {
		return "", errors.New("admin_password must be at most 72 bytes")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(p), bcrypt.DefaultCost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// AuthEnabled reports whether dashboard auth is active (else the setup lock is).
func (s *Service) AuthEnabled() bool { return s.admin.Load().active() }

// SetupToken returns the setup token (for the startup log hint and tests).
func (s *Service) SetupToken() string { return s.setupToken }

// checkAdmin verifies admin credentials in constant time with respect to
// which part was wrong.
func (s *Service) checkAdmin(user, pass string) bool {
	st := s.admin.Load()
	if st.Username == "" || st.PasswordHash == "" {
		return false
	}
	mac := hmac.New(sha256.New, s.cacheKey[:])
	mac.Write([]byte(user + "\x00" + pass))
	ck := string(mac.Sum(nil))
	now := s.now()
	s.basicMu.Lock()
	exp, ok := s.basicOK[ck]
	s.basicMu.Unlock()
	if ok && now.Before(exp) {
		return true
	}
	userOK := subtle.ConstantTimeCompare([]byte(user), []byte(st.Username)) == 1
	passOK := bcrypt.CompareHashAndPassword([]byte(st.PasswordHash), []byte(pass)) == nil
	if !userOK || !passOK {
		return false
	}
	s.basicMu.Lock()
	if len(s.basicOK) > 1024 {
		clear(s.basicOK)
	}
	s.basicOK[ck] = now.Add(5 * time.Minute)
	s.basicMu.Unlock()
	return true
}

func randomToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err))
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func tokenHash(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:])
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
