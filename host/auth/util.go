package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
)

// constantTimeEqual compares secrets without leaking their length through
// timing by comparing fixed-size digests.
func constantTimeEqual(a, b string) bool {
	ha := sha256.Sum256([]byte(a))
	hb := sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
