package eventstream

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzDecode: arbitrary bytes give messages or errors, never a panic or a
// hang, and whatever decodes re-encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	a, _ := Append(nil, Event("contentBlockDelta", []byte(`{"delta":{"text":"hi"}}`)))
	b, _ := Append(nil, Exception("throttlingException", []byte(`{"message":"x"}`)))
	e, _ := Append(nil, Message{})
	f.Add(append(append([]byte{}, a...), b...))
	f.Add(e)
	f.Add(a[:len(a)-1])
	f.Add([]byte{0, 0, 0, 0x10, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		d := NewDecoder(bytes.NewReader(in))
		consumed := 0
		for range len(in) + 1 {
			m, err := d.Decode()
			if err != nil {
				if err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrMalformed) {
					t.Fatalf("unexpected error class: %v", err)
				}
				return
			}
			re, err := Append(nil, m)
			if err != nil {
				t.Fatalf("decoded message does not re-encode: %v", err)
			}
			if !bytes.Equal(re, in[consumed:consumed+len(re)]) {
				t.Fatal("re-encoding differs from input")
			}
			consumed += len(re)
		}
		t.Fatal("decoder did not stop")
	})
}
