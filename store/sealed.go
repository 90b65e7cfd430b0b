package store

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Walker is implemented by backends that can enumerate every record; the
// sealing layer needs it to encrypt data written before a key was set.
type Walker interface {
	Walk(fn func(ns, key string, value []byte) error) error
}

// metaNS holds the store's own bookkeeping; it is never sealed because it
// tells how to unseal everything else.
const metaNS = "_meta"

const (
	tagPlain  byte = 0x00
	tagSealed byte = 0x01
)

// ErrEncryptionKeyMissing means the data was sealed but no key was given.
var ErrEncryptionKeyMissing = errors.New("the data directory holds data encrypted at rest, but GATEWAY_ENCRYPTION_KEY is not set: start the gateway with the key the data was written with")

// ErrEncryptionKeyWrong means the given key does not open the sealed data.
var ErrEncryptionKeyWrong = errors.New("GATEWAY_ENCRYPTION_KEY does not match the key the data directory was encrypted with")

type sealMeta struct {
	Mode  string `json:"mode"` // "none" or "aes-256-gcm"
	Salt  string `json:"salt,omitempty"`
	Check string `json:"check,omitempty"`
}

const checkPlaintext = "wasmgate-encryption-check-v1"

// Sealed wraps a Store so that every value is encrypted with AES-256-GCM
// before it reaches the backend. Sealing sits above the backend so the same
// guarantee holds for any implementation of Store.
type Sealed struct {
	inner Store
	aead  cipher.AEAD // nil when no key is configured
}

// OpenSealed checks the configured key against the data already in inner and
// returns the wrapped store. rawKey is GATEWAY_ENCRYPTION_KEY: 32 bytes as
// base64 or hex, or a passphrase of at least 16 characters stretched with
// Argon2id and a per-store salt. An empty rawKey disables encryption, which
// is refused when the store already holds encrypted data. Existing plain data
// is encrypted in place when a key is set for the first time.
func OpenSealed(ctx context.Context, inner Store, rawKey string, log *slog.Logger) (*Sealed, error) {
	if log == nil {
		log = slog.Default()
	}
	var meta sealMeta
	found := true
	err := inner.View(ctx, func(tx Tx) error {
		raw, err := tx.Get(metaNS, "encryption")
		if errors.Is(err, ErrNotFound) {
			found = false
			return nil
		}
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &meta)
	})
	if err != nil {
		return nil, fmt.Errorf("read encryption metadata: %w", err)
	}
	if !found {
		meta.Mode = "none"
	}

	if rawKey == "" {
		if meta.Mode != "none" {
			return nil, ErrEncryptionKeyMissing
		}
		if !found {
			if err := putMeta(ctx, inner, meta); err != nil {
				return nil, err
			}
		}
		return &Sealed{inner: inner}, nil
	}

	if meta.Mode == "aes-256-gcm" {
		salt, _ := base64.StdEncoding.DecodeString(meta.Salt)
		aead, err := newAEAD(rawKey, salt)
		if err != nil {
			return nil, err
		}
		s := &Sealed{inner: inner, aead: aead}
		check, err := base64.StdEncoding.DecodeString(meta.Check)
		if err != nil {
			return nil, fmt.Errorf("corrupt encryption metadata: %w", err)
		}
		pt, err := s.open(check)
		if err != nil || string(pt) != checkPlaintext {
			return nil, ErrEncryptionKeyWrong
		}
		return s, nil
	}

	// First use of a key: seal a check value, then encrypt existing records.
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("generate salt: %w", err)
	}
	aead, err := newAEAD(rawKey, salt)
	if err != nil {
		return nil, err
	}
	s := &Sealed{inner: inner, aead: aead}
	if err := s.migrate(ctx, log); err != nil {
		return nil, fmt.Errorf("encrypt existing data: %w", err)
	}
	meta = sealMeta{Mode: "aes-256-gcm", Salt: base64.StdEncoding.EncodeToString(salt),
		Check: base64.StdEncoding.EncodeToString(s.seal([]byte(checkPlaintext)))}
	if err := putMeta(ctx, inner, meta); err != nil {
		return nil, err
	}
	return s, nil
}

func putMeta(ctx context.Context, inner Store, meta sealMeta) error {
	raw, _ := json.Marshal(meta)
	if err := inner.Update(ctx, func(tx Tx) error { return tx.Put(metaNS, "encryption", raw) }); err != nil {
		return fmt.Errorf("write encryption metadata: %w", err)
	}
	return nil
}

// migrate seals every plain record in batches, logging progress, so turning
// encryption on for a populated store leaves nothing in clear.
func (s *Sealed) migrate(ctx context.Context, log *slog.Logger) error {
	w, ok := s.inner.(Walker)
	if !ok {
		return nil
	}
	type rec struct{ ns, key string }
	var pending []rec
	err := w.Walk(func(ns, key string, value []byte) error {
		if ns != metaNS && (len(value) == 0 || value[0] != tagSealed) {
			pending = append(pending, rec{ns, key})
		}
		return nil
	})
	if err != nil || len(pending) == 0 {
		return err
	}
	log.Info("encrypting existing records at rest", "records", len(pending))
	for start := 0; start < len(pending); start += 500 {
		end := min(start+500, len(pending))
		err := s.inner.Update(ctx, func(tx Tx) error {
			for _, r := range pending[start:end] {
				v, err := tx.Get(r.ns, r.key)
				if err != nil {
					if errors.Is(err, ErrNotFound) {
						continue
					}
					return err
				}
				if len(v) > 0 && v[0] == tagSealed {
					continue
				}
				if err := tx.Put(r.ns, r.key, s.seal(stripPlain(v))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		log.Info("encrypting existing records at rest", "done", end, "of", len(pending))
	}
	return nil
}

// newAEAD derives the AES-256 key from the configured string.
func newAEAD(rawKey string, salt []byte) (cipher.AEAD, error) {
	key, err := deriveKey(rawKey, salt)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("encryption key: %w", err)
	}
	return cipher.NewGCM(block)
}

func deriveKey(rawKey string, salt []byte) ([]byte, error) {
	rawKey = strings.TrimSpace(rawKey)
	if b, err := base64.StdEncoding.DecodeString(rawKey); err == nil && len(b) == 32 {
		return b, nil
	}
	if b, err := hex.DecodeString(rawKey); err == nil && len(b) == 32 {
		return b, nil
	}
	if len(rawKey) < 16 {
		return nil, errors.New("GATEWAY_ENCRYPTION_KEY must be 32 bytes as base64 or hex, or a passphrase of at least 16 characters")
	}
	if len(salt) == 0 {
		sum := sha256.Sum256([]byte("wasmgate"))
		salt = sum[:16]
	}
	return argon2.IDKey([]byte(rawKey), salt, 3, 64*1024, 2, 32), nil
}

// Encrypted reports whether values are sealed.
func (s *Sealed) Encrypted() bool { return s.aead != nil }

func (s *Sealed) seal(pt []byte) []byte {
	ns := s.aead.NonceSize()
	out := make([]byte, 1+ns, 1+ns+len(pt)+s.aead.Overhead())
	out[0] = tagSealed
	if _, err := rand.Read(out[1 : 1+ns]); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // the OS RNG failing is unrecoverable
	}
	return s.aead.Seal(out, out[1:1+ns], pt, nil)
}

func (s *Sealed) open(v []byte) ([]byte, error) {
	if len(v) == 0 || v[0] != tagSealed {
		return stripPlain(v), nil
	}
	if s.aead == nil {
		return nil, ErrEncryptionKeyMissing
	}
	ns := s.aead.NonceSize()
	if len(v) < 1+ns {
		return nil, errors.New("store: sealed value too short")
	}
	pt, err := s.aead.Open(nil, v[1:1+ns], v[1+ns:], nil)
	if err != nil {
		return nil, fmt.Errorf("store: decrypt: %w", err)
	}
	return pt, nil
}

func stripPlain(v []byte) []byte {
	if len(v) > 0 && v[0] == tagPlain {
		return v[1:]
	}
	return v
}

func (s *Sealed) wrap(v []byte) []byte {
	if s.aead != nil {
		return s.seal(v)
	}
	out := make([]byte, 1+len(v))
	out[0] = tagPlain
	copy(out[1:], v)
	return out
}

// View implements Store.
func (s *Sealed) View(ctx context.Context, fn func(Tx) error) error {
	return s.inner.View(ctx, func(tx Tx) error { return fn(sealedTx{tx, s}) })
}

// Update implements Store.
func (s *Sealed) Update(ctx context.Context, fn func(Tx) error) error {
	return s.inner.Update(ctx, func(tx Tx) error { return fn(sealedTx{tx, s}) })
}

// Ping implements Store.
func (s *Sealed) Ping(ctx context.Context) error { return s.inner.Ping(ctx) }

// Close implements Store.
func (s *Sealed) Close() error { return s.inner.Close() }

type sealedTx struct {
	inner Tx
	s     *Sealed
}

func (t sealedTx) Get(ns, key string) ([]byte, error) {
	v, err := t.inner.Get(ns, key)
	if err != nil {
		return nil, err
	}
	return t.s.open(v)
}

func (t sealedTx) Put(ns, key string, value []byte) error {
	if ns == metaNS {
		return fmt.Errorf("store: namespace %s is reserved", metaNS)
	}
	return t.inner.Put(ns, key, t.s.wrap(value))
}

func (t sealedTx) Delete(ns, key string) error { return t.inner.Delete(ns, key) }

func (t sealedTx) Scan(ns string, opts ScanOptions, fn func(key string, value []byte) error) error {
	return t.inner.Scan(ns, opts, func(key string, value []byte) error {
		pt, err := t.s.open(value)
		if err != nil {
			return err
		}
		return fn(key, pt)
	})
}
