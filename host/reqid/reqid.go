// Package reqid makes the gateway's request ids: version-7 UUIDs whose time
// part is the request's start, so ids sort like timestamps and an id alone
// tells the request log where its record is (see host/logs).
package reqid

import (
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
)

// New returns a UUIDv7 whose time part is t's Unix milliseconds.
func New(t time.Time) string {
	var u uuid.UUID
	ms := uint64(t.UnixMilli())
	u[0], u[1], u[2], u[3], u[4], u[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	// math/rand/v2 is seeded from the OS per process and is much cheaper
	// than crypto/rand; ids need uniqueness, not secrecy. 74 random bits
	// make a collision within one millisecond vanishingly unlikely.
	a, b := rand.Uint64(), rand.Uint64()
	for i := 6; i < 16; i++ {
		if i < 14 {
			u[i] = byte(a >> (8 * (i - 6)))
		} else {
			u[i] = byte(b >> (8 * (i - 14)))
		}
	}
	u[6] = (u[6] & 0x0f) | 0x70 // version 7
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return u.String()
}

// Millis returns the Unix milliseconds in a version-7 UUID string; ok is
// false for anything else (ids a client or an older gateway chose).
func Millis(id string) (ms int64, ok bool) {
	if len(id) != 36 {
		return 0, false
	}
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 {
		return 0, false
	}
	for _, b := range u[:6] {
		ms = ms<<8 | int64(b)
	}
	return ms, true
}
