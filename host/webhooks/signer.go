package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix starts every signing secret (Standard Webhooks format).
const SecretPrefix = "whsec_"

// NewSecret returns a fresh signing secret: the prefix and 32 random bytes
// in padded standard base64, the form the Standard Webhooks libraries read.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms.
	return SecretPrefix + base64.StdEncoding.EncodeToString(b[:])
}

// ParseSecret checks a whsec_ secret and returns its key bytes. Keys of 24
// to 64 bytes are accepted, the range the Standard Webhooks spec allows.
func ParseSecret(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("signing secret must start with %q", SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("signing secret is not %s followed by standard base64: %w", SecretPrefix, err)
	}
	if len(key) < 24 || len(key) > 64 {
		return nil, fmt.Errorf("signing secret key must decode to 24..64 bytes (got %d)", len(key))
	}
	return key, nil
}

// Signer signs deliveries with one endpoint key.
type Signer struct {
	key []byte
}

// NewSigner parses secret into a Signer.
func NewSigner(secret string) (*Signer, error) {
	key, err := ParseSecret(secret)
	if err != nil {
		return nil, err
	}
	return &Signer{key: key}, nil
}

// Sign returns the webhook-signature header value for one attempt:
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>".
func (s *Signer) Sign(id string, ts time.Time, body []byte) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
