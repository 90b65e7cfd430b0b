package reqid

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestNewCarriesItsMillisecond(t *testing.T) {
	for _, ts := range []time.Time{time.Unix(0, 0), time.Date(2026, 11, 25, 17, 30, 0, 999_999_999, time.UTC), time.Now()} {
		id := New(ts)
		ms, ok := Millis(id)
		if !ok || ms != ts.UnixMilli() {
			t.Fatalf("Millis(New(%v)) = %d, %v; want %d", ts, ms, ok, ts.UnixMilli())
		}
		u := uuid.MustParse(id)
		if u.Version() != 7 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("%s is not an RFC 4122 UUIDv7", id)
		}
	}
	if a, b := New(time.Unix(5, 0)), New(time.Unix(5, int64(time.Millisecond))); !(a < b) {
		t.Fatalf("ids do not sort like their times: %s >= %s", a, b)
	}
	if New(time.Now()) == New(time.Now()) {
		t.Fatal("two ids in the same millisecond are equal")
	}
}

func TestMillisRejectsOtherIDs(t *testing.T) {
	for _, id := range []string{"", "req-1", uuid.NewString(), "0190e89a-9be9-4000-819c-2660bd007be7" /* v4 nibble */, "zzzzzzzz-zzzz-7zzz-8zzz-zzzzzzzzzzzz"} {
		if ms, ok := Millis(id); ok {
			t.Errorf("Millis(%q) = %d, true; want false", id, ms)
		}
	}
	// The library's own v7 ids are accepted too.
	v7 := uuid.Must(uuid.NewV7())
	if _, ok := Millis(v7.String()); !ok {
		t.Errorf("Millis(%s) = false for a v7 id", v7)
	}
}

func BenchmarkNew(b *testing.B) {
	now := time.Now()
	for b.Loop() {
		_ = New(now)
	}
}
