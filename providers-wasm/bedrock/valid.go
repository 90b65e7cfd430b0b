package main

import "bytes"

// validJSON reports whether b is exactly one well-formed JSON value, as
// json.Valid does (FuzzValidJSON checks they agree). It exists because
// json.Valid drives a state machine through a function call per byte,
// which under wasm was 60% of adapt_response; this scanner walks strings
// in a tight loop and keeps its container stack in a small slice, so deep
// nesting costs no recursion.
func validJSON(b []byte) bool {
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
			if i = scanKey(b, i); i < 0 {
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
			if i = scanString(b, i); i < 0 {
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
			if i = scanNumber(b, i); i < 0 {
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
					if i = scanKey(b, i); i < 0 {
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

// scanKey scans `"key" :` at i and returns the index of the value.
func scanKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = scanString(b, i); i < 0 {
		return -1
	}
	i = skipWS(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipWS(b, i+1)
}

// plainByte marks the bytes a string holds as they are: everything but the
// quote, the backslash and control characters. One table load per byte is
// the cheapest test under wasm.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString returns the index after the string starting at i, or -1.
func scanString(b []byte, i int) int {
	for i++; i < len(b); {
		for i < len(b) && plainByte[b[i]] {
			i++
		}
		if i >= len(b) {
			return -1
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
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
		default:
			i++
		}
	}
	return -1
}

// scanNumber returns the index after the number starting at i, or -1:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) int {
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
