package governance

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"strings"
	"sync"
)

// KeyPrefix starts every virtual key.
const KeyPrefix = "sk-gw-"

// newKeyValue returns a fresh virtual key: the prefix and 256 random bits.
func newKeyValue() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return KeyPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// maskKey keeps only a short prefix of a value, for listings.
func maskKey(v string) string {
	if len(v) > len(KeyPrefix)+4 {
		return v[:len(KeyPrefix)+4] + "..."
	}
	return KeyPrefix + "..."
}

// hashPool pools HMAC states: a new one per request would allocate on the
// hot path.
type hashPool struct {
	once sync.Once
	pool sync.Pool
}

var errBadHash = errors.New("stored key hash is not 32 hex bytes")

// keyHash is the keyed hash (HMAC-SHA256) of a virtual key value.
func (s *Service) keyHash(v string, out *[32]byte) {
	h := s.hmacs().Get().(hash.Hash)
	h.Reset()
	_, _ = h.Write([]byte(v))
	h.Sum(out[:0])
	s.hmacs().Put(h)
}

func (s *Service) hmacs() *sync.Pool {
	s.hashPool.once.Do(func() {
		key := s.hashKey
		s.hashPool.pool.New = func() any { return hmac.New(sha256.New, key) }
	})
	return &s.hashPool.pool
}

func (s *Service) keyHashHex(v string) string {
	var h [32]byte
	s.keyHash(v, &h)
	return hex.EncodeToString(h[:])
}

func hexDecode32(s string, out *[32]byte) (int, error) {
	if len(s) != 64 {
		return 0, errBadHash
	}
	return hex.Decode(out[:], []byte(s))
}

// isVirtualKey reports whether a presented credential is a virtual key
// (anything else may be a provider key and is left alone).
func isVirtualKey(v string) bool { return strings.HasPrefix(v, KeyPrefix) }
