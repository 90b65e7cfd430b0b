package jsonx

import (
	"encoding/json"
	"testing"
)

func TestForEachMember(t *testing.T) {
	b := []byte(` {"a":1, "b\"c":{"x":[1,2]},"d":"s"} `)
	var got []string
	ok := ForEachMember(b, 0, func(k []byte, s, e int) { got = append(got, string(k)+"="+string(b[s:e])) })
	want := []string{`a=1`, `b\"c={"x":[1,2]}`, `d="s"`}
	if !ok || len(got) != len(want) {
		t.Fatalf("%v %v", ok, got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("member %d: %s want %s", i, got[i], want[i])
		}
	}
	for _, bad := range []string{``, `[]`, `{"a"}`, `{"a":}`, `{"a":1`, `{1:2}`} {
		if ForEachMember([]byte(bad), 0, func([]byte, int, int) {}) {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestAppendUnescaped(t *testing.T) {
	for _, s := range []string{"plain", "q\"uote\\back/slash", "tab\tnl\n", "é€😀", "\u0001", "\ufffd"} {
		raw, _ := json.Marshal(s)
		got, ok := AppendUnescaped(nil, raw[1:len(raw)-1])
		if !ok || string(got) != s {
			t.Errorf("%q -> %q %v", raw, got, ok)
		}
	}
	got, ok := AppendUnescaped(nil, []byte(`\ud83d\ude00 \u00e9 \/`))
	if !ok || string(got) != "😀 é /" {
		t.Errorf("%q %v", got, ok)
	}
	for _, bad := range []string{`\`, `\x`, `\u12`, `\uzzzz`} {
		if _, ok := AppendUnescaped(nil, []byte(bad)); ok {
			t.Errorf("%q accepted", bad)
		}
	}
	if got, _ := AppendUnescaped(nil, []byte(`\ud83d!`)); string(got) != "\ufffd!" {
		t.Errorf("lone surrogate: %q", got)
	}
}

func FuzzAppendUnescaped(f *testing.F) {
	f.Add([]byte(`a\u00e9\ud83d\ude00\n`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := AppendUnescaped(nil, raw)
		var want string
		if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &want) == nil && ok && string(got) != want {
			t.Fatalf("%q: %q want %q", raw, got, want)
		}
	})
}
