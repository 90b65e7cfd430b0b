package jsonx

import (
	"encoding/binary"
	"math/bits"
)

// skipStringWords is skipStringIndex crossing the string eight bytes at a
// time, looking for the quote and the backslash in one pass. Under wasm,
// bytes.IndexByte is an assembly loop four bytes at a time behind two
// calls, and Go calls are costly there: for the short strings that make up
// most of a document (keys, roles, ids) and the long ones alike this is
// faster. Natively IndexByte's vector loop wins on long strings.
func skipStringWords(b []byte, i int) int {
	for i++; ; {
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			q := x ^ ('"' * lsb)
			s := x ^ ('\\' * lsb)
			if m := ((q-lsb)&^q | (s-lsb)&^s) & msb; m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		for i < len(b) && b[i] != '"' && b[i] != '\\' {
			i++
		}
		if i >= len(b) {
			return -1
		}
		if b[i] == '"' {
			return i + 1
		}
		i += 2 // a backslash and the byte it escapes
	}
}
