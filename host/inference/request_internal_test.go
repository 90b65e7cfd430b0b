package inference

import (
	"encoding/json"
	"strings"
	"testing"

	segjson "github.com/segmentio/encoding/json"
)

// FuzzValidMatchesEncodingJSON holds admission's validator (segmentio's,
// for speed) to encoding/json's verdict: a body one accepts and the other
// rejects would either reach an upstream malformed or be refused wrongly.
func FuzzValidMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"openai/gpt-4o-mini","messages":[`,
		`{"a":1,}`, `{"a":1} x`, `{"a":"\u00e9\ud83d\ude00"}`, `{"a":"\x"}`, `{"a":"` + "\xff" + `"}`,
		`{"a":-0.5e+10,"b":[true,false,null],"c":{}}`, `{"a":01}`, `{"a":1.}`, `{"a":"tab	in string"}`,
		"{\"a\":1}\n", ` { } `, `{"a":[1,2,]}`, `{"a" 1}`, `{"a":tru}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := segjson.Valid(b), json.Valid(b); got != want {
			t.Fatalf("segmentio Valid=%t, encoding/json Valid=%t for %q", got, want, b)
		}
	})
}

// TestInvalidJSONNamesThePlace: the 400 says where the body breaks.
func TestInvalidJSONNamesThePlace(t *testing.T) {
	for body, want := range map[string]string{
		`{"model":"openai/x","messages":[`:    "unexpected end of JSON input",
		`{"model":"openai/x","messages":[],}`: "at byte 35",
		`{"model":"openai/x"} trailing`:       "at byte 22",
	} {
		_, aerr := parseRequest([]byte(body))
		if aerr == nil || aerr.Detail.Code != "invalid_json" {
			t.Fatalf("%s: got %v, want invalid_json", body, aerr)
		}
		if !strings.Contains(aerr.Detail.Message, want) {
			t.Errorf("%s: message %q, want it to contain %q", body, aerr.Detail.Message, want)
		}
	}
}
