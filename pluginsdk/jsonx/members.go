package jsonx

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ForEachMember calls fn with the raw (escaped, unquoted) key and the value
// span of every member of the object starting at obj, in document order.
// It is one pass over the object, where calling ObjectField per key rescans
// it each time: adapters reading five or six fields of an input use this.
// It returns false when b is not a well-formed object there; fn may have
// been called for the members before the fault.
func ForEachMember(b []byte, obj int, fn func(key []byte, start, end int)) bool {
	return WalkMembers(b, obj, func(key []byte, start, end int) bool { fn(key, start, end); return true })
}

// WalkMembers is ForEachMember whose fn may stop the walk by returning
// false; the walk then reports true (the object was well-formed as far as
// it was read).
func WalkMembers(b []byte, obj int, fn func(key []byte, start, end int) bool) bool {
	i := skipWS(b, obj)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i++
	for {
		i = skipWS(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '}':
			return true
		case ',':
			i++
			continue
		case '"':
		default:
			return false
		}
		ke := skipString(b, i)
		if ke < 0 {
			return false
		}
		key := b[i+1 : ke-1]
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		vs := skipWS(b, i+1)
		ve := SkipValue(b, vs)
		if ve < 0 {
			return false
		}
		if !fn(key, vs, ve) {
			return true
		}
		i = ve
	}
}

// StringAt returns the raw (escaped) content of the JSON string whose span
// is [start,end), or ok=false when the value there is not a string.
func StringAt(b []byte, start, end int) ([]byte, bool) {
	if end-start < 2 || b[start] != '"' || b[end-1] != '"' {
		return nil, false
	}
	return b[start+1 : end-1], true
}

// AppendUnescaped appends the decoded form of raw, the escaped content of
// a JSON string (quotes excluded), to dst. ok is false on an invalid
// escape; unpaired surrogates and invalid UTF-8 become U+FFFD as in
// encoding/json.
func AppendUnescaped(dst, raw []byte) ([]byte, bool) {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c >= utf8.RuneSelf {
			// Invalid UTF-8 becomes U+FFFD, as encoding/json decodes it,
			// so the two never disagree on what a string says.
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, "\ufffd"...)
			} else {
				dst = append(dst, raw[i:i+size]...)
			}
			i += size
			continue
		}
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			return dst, false
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			dst = append(dst, raw[i+1])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(raw, i+2)
			if !ok {
				return dst, false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				// A high surrogate must be followed by an escaped low one.
				if r2, ok := hex4(raw, i+2); ok && i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						dst = utf8.AppendRune(dst, d)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			return dst, false
		}
		i += 2
	}
	return dst, true
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[i:i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	return rune(n), true
}
