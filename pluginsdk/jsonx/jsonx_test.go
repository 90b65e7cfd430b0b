package jsonx

import (
	"encoding/json"
	"testing"
)

func TestFieldsAndSet(t *testing.T) {
	doc := []byte(`{ "messages":[{"role":"user","content":"say \"model\": x"}], "model" : "gpt-4o", "n":3, "stream":true, "x":{"model":"inner"}}`)
	if v, ok := StringField(doc, "model"); !ok || string(v) != "gpt-4o" {
		t.Fatalf("model: %q %v", v, ok)
	}
	if n, ok := IntField(doc, "n"); !ok || n != 3 {
		t.Fatal("n")
	}
	if v, ok := BoolField(doc, "stream"); !ok || !v {
		t.Fatal("stream")
	}
	out, ok := SetStringField(doc, "model", `a"b`)
	if !ok {
		t.Fatal("set")
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil || m["model"] != `a"b` || m["x"].(map[string]any)["model"] != "inner" {
		t.Fatalf("after set: %s %v", out, err)
	}
	out, _ = SetField([]byte(`{}`), "k", []byte(`1`))
	if string(out) != `{"k":1}` {
		t.Fatalf("insert into empty: %s", out)
	}
	out, _ = SetField([]byte(`{"a":1}`), "k", []byte(`2`))
	if string(out) != `{"k":2,"a":1}` {
		t.Fatalf("insert: %s", out)
	}
	if _, _, ok := Field([]byte(`{"a":`), "a"); ok {
		t.Fatal("truncated doc accepted")
	}
}

func TestWalkStrings(t *testing.T) {
	doc := []byte(`{"k1":"v1","arr":["a",{"k2":"b\\"},1,true,null],"o":{"k3":"c\"d"}}`)
	var got []string
	if !WalkStrings(doc, func(s, e int) { got = append(got, string(doc[s:e])) }) {
		t.Fatal("walk failed")
	}
	want := []string{"v1", "a", `b\\`, `c\"d`}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %q want %q", got, want)
		}
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"plain", "q\"b\\", "nl\n\t\x01", "üñí", "bad\xffutf"} {
		b := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q -> %s: %v", s, b, err)
		}
		if back != s && s != "bad\xffutf" {
			t.Fatalf("%q round trip %q", s, back)
		}
	}
}

func FuzzWalkStrings(f *testing.F) {
	f.Add([]byte(`{"a":["b",{"c":"d"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		WalkStrings(b, func(s, e int) {
			if s < 0 || e > len(b) || s > e {
				t.Fatalf("bad span %d %d", s, e)
			}
		})
		_, _, _ = Field(b, "model")
	})
}

func TestForEachMessageText(t *testing.T) {
	doc := []byte(`{"model":"m","tools":[{"description":"skip me"}],"messages":[{"role":"system","content":"a"},{"role":"user","content":[{"type":"text","text":"b"},{"type":"image_url","image_url":{"url":"x"}}]},{"role":"assistant","content":null}]}`)
	var got []string
	if !ForEachMessageText(doc, func(s, e int) { got = append(got, string(doc[s:e])) }) {
		t.Fatal("walk failed")
	}
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("got %q", got)
	}
}

// The two string skippers must agree wherever a string starts.
func FuzzSkipString(f *testing.F) {
	for _, s := range []string{`""`, `"abc"`, `"a\"b"`, `"a\\"b"`, `"\\\\\"x\""`, `"0123456789\"0123456789\\"`, `"abc`, `"abcdefgh\`, `"x\u0022"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for i := range b {
			if b[i] != '"' {
				continue
			}
			if w, x := skipStringWords(b, i), skipStringIndex(b, i); w != x {
				t.Fatalf("%q at %d: words %d, index %d", b, i, w, x)
			}
		}
	})
}
