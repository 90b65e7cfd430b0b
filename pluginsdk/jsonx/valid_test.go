package jsonx

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var validSeeds = []string{``, ` `, `1`, `-0.5e+3`, `01`, `1.`, `-`, `"\u00e9\ud83d"`, `"\x"`, "\"\x01\"", `[1,]`, `{"a":1,}`,
	`{"a" 1}`, `[[[]]]`, `{"a":[{"b":null}]}`, `tru`, `true false`, `[1 2]`, `{,}`, `"abc`, `"\u12"`, "\xff", `["\xff"]`,
	`"0123456789abcdef\"0123456789"`, "\"0123456789abcde\x1f\"", `"01234567\\\\"`, `"01234567\\"`,
	`"` + strings.Repeat("é", 20) + `"`, `{"k":"` + strings.Repeat("x", 40) + `\n` + strings.Repeat("y", 9) + `"}`}

func TestValid(t *testing.T) {
	for _, s := range validSeeds {
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%q) = %v, json.Valid = %v", s, got, want)
		}
	}
}

// Valid must agree with encoding/json on every input.
func FuzzValid(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob("testdata/*.json")
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid = %v", b, got, want)
		}
	})
}
