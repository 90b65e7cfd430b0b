package jsonx

import (
	"encoding/json"
	"reflect"
	"testing"
)

// readAny decodes the next value through the Reader alone (scalars go
// through encoding/json), so comparing it with json.Unmarshal checks
// that the Reader finds every member and element.
func readAny(r *Reader) (any, bool) {
	switch r.Kind() {
	case '{':
		r.Object()
		m := map[string]any{}
		for k, ok := r.Member(); ok; k, ok = r.Member() {
			key, ok := AppendUnescaped(nil, k)
			if !ok {
				return nil, false
			}
			v, ok := readAny(r)
			if !ok {
				return nil, false
			}
			m[string(key)] = v
		}
		return m, !r.Failed()
	case '[':
		r.Array()
		a := []any{}
		for r.Element() {
			v, ok := readAny(r)
			if !ok {
				return nil, false
			}
			a = append(a, v)
		}
		return a, !r.Failed()
	}
	raw := r.Value()
	var v any
	if raw == nil || json.Unmarshal(raw, &v) != nil {
		return nil, false
	}
	return v, true
}

func TestReaderDecodes(t *testing.T) {
	for _, doc := range readerSeeds {
		var want any
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			continue
		}
		r := NewReader([]byte(doc))
		got, ok := readAny(&r)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v (%v)", doc, got, ok)
		}
	}
}

// Values left unread are skipped, at any depth.
func TestReaderSkipsUnread(t *testing.T) {
	doc := []byte(`{"a":{"x":[1,{"y":"}"}]},"b":[[],{}],"c":"s\"","d":{"e":1,"f":2}}`)
	r := NewReader(doc)
	var got []string
	r.Object()
	for k, ok := r.Member(); ok; k, ok = r.Member() {
		switch string(k) {
		case "c":
			got = append(got, string(r.Value()))
		case "d":
			r.Object()
			for k2, ok := r.Member(); ok; k2, ok = r.Member() {
				if string(k2) == "f" {
					got = append(got, string(r.Value()))
				}
			}
		case "b":
			for r.Array(); r.Element(); {
				got = append(got, string([]byte{r.Kind()}))
			}
		}
	}
	if r.Failed() || !reflect.DeepEqual(got, []string{"[", "{", `"s\""`, "2"}) {
		t.Fatalf("got %q failed=%v", got, r.Failed())
	}
	// Object on a non-object reads nothing; the value is then skipped.
	r = NewReader([]byte(`{"a":"str","b":1}`))
	r.Object()
	r.Member()
	if r.Object() || r.Array() {
		t.Fatal("entered a string")
	}
	if k, ok := r.Member(); !ok || string(k) != "b" || string(r.Value()) != "1" {
		t.Fatalf("after an unread string: %q %v", k, ok)
	}
}

func TestReaderMalformed(t *testing.T) {
	for _, doc := range []string{``, `{`, `{"a"`, `{"a":`, `{"a":1`, `{"a" 1}`, `{1:2}`, `[1`, `[1}`, `{"a":[}`, `"abc`, `{"a":"b}`} {
		r := NewReader([]byte(doc))
		if _, ok := readAny(&r); ok {
			t.Errorf("%q read without failure", doc)
		}
	}
}

var readerSeeds = []string{
	`{}`, `[]`, `""`, `0`, `-1.5e3`, `true`, `null`,
	` { "a" : [ 1 , 2 ] , "b" : { } } `,
	`{"messages":[{"role":"user","content":"say \"hi\" \\"},{"role":"assistant","content":[{"type":"text","text":"x"}]}],"n":3}`,
	`[[[]],[{}],{"":""},"\u00e9\ud83d\ude00"]`,
	`{"a":1,"a":2}`,
}

// FuzzReader: on valid JSON the Reader sees what encoding/json sees; on
// anything it terminates without panicking.
func FuzzReader(f *testing.F) {
	for _, s := range readerSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"a":[1,{"b":`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		r := NewReader(doc)
		got, ok := readAny(&r)
		var want any
		if json.Unmarshal(doc, &want) != nil {
			return
		}
		if !ok {
			t.Fatalf("valid %s not read", doc)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: got %v want %v", doc, got, want)
		}
		// Reading nothing below the top level must also get through.
		r = NewReader(doc)
		if r.Object() {
			for _, ok := r.Member(); ok; _, ok = r.Member() {
			}
		} else if r.Array() {
			for r.Element() {
			}
		} else {
			r.Value()
		}
		if r.Failed() {
			t.Fatalf("valid %s failed when skipped", doc)
		}
	})
}
