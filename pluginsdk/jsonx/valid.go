package jsonx

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// Valid reports whether b is exactly one well-formed JSON value, as
// json.Valid does (FuzzValid checks they agree). json.Valid drives a state
// machine through a function call per byte, which under wasm is the most
// expensive way to look at a byte; this scanner keeps its container stack
// in a small array (no recursion) and crosses strings eight bytes at a
// time. It started as the bedrock adapter's validJSON.
func Valid(b []byte) bool {
	var stackBuf [32]byte
	stack := stackBuf[:0]
	i := skipWS(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '{':
			i = skipWS(b, i+1)
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			stack = append(stack, '{')
			if i = validKey(b, i); i < 0 {
				return false
			}
			continue
		case '[':
			i = skipWS(b, i+1)
			if i < len(b) && b[i] == ']' {
				i++
				break
			}
			stack = append(stack, '[')
			continue
		case '"':
			if i = validString(b, i); i < 0 {
				return false
			}
		case 't':
			if !bytes.HasPrefix(b[i:], []byte("true")) {
				return false
			}
			i += 4
		case 'f':
			if !bytes.HasPrefix(b[i:], []byte("false")) {
				return false
			}
			i += 5
		case 'n':
			if !bytes.HasPrefix(b[i:], []byte("null")) {
				return false
			}
			i += 4
		default:
			if i = validNumber(b, i); i < 0 {
				return false
			}
		}
		// After a value: close containers, or go on to the next member.
		for {
			i = skipWS(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if b[i] == ',' {
				i = skipWS(b, i+1)
				if top == '{' {
					if i = validKey(b, i); i < 0 {
						return false
					}
				}
				break
			}
			if top == '{' && b[i] == '}' || top == '[' && b[i] == ']' {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			return false
		}
	}
}

// validKey checks `"key" :` at i and returns the index of the value.
func validKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = validString(b, i); i < 0 {
		return -1
	}
	i = skipWS(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipWS(b, i+1)
}

// Word-at-a-time byte tests (the classic "has zero byte" trick): for each
// byte of x the result has its high bit set when the byte matches; a match
// may also flag bytes above it, never below, so the lowest flag is exact.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// special8 flags the bytes of x a JSON string cannot hold as they are: the
// quote, the backslash and control characters.
func special8(x uint64) uint64 {
	q := x ^ ('"' * lsb)
	s := x ^ ('\\' * lsb)
	return ((q-lsb)&^q | (s-lsb)&^s | (x-0x20*lsb)&^x) & msb
}

// validString returns the index after the string starting at i, or -1.
func validString(b []byte, i int) int {
	for i++; ; {
		for i+8 <= len(b) {
			if m := special8(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		for i < len(b) && b[i] >= 0x20 && b[i] != '"' && b[i] != '\\' {
			i++
		}
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		}
		// A backslash.
		if i+1 >= len(b) {
			return -1
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(b) {
				return -1
			}
			for _, h := range b[i+2 : i+6] {
				if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
					return -1
				}
			}
			i += 6
		default:
			return -1
		}
	}
}

// validNumber returns the index after the number starting at i, or -1:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
