// Package jsonx holds reflection-free JSON helpers for hot paths: finding and
// replacing a top-level field (such as "model" or "max_tokens") and visiting
// string values, all by scanning bytes. They assume well-formed JSON (the
// host validates bodies once at ingress) and report ok=false rather than
// panic on anything else.
//
// Spans are byte offsets into the caller's slice; string spans exclude the
// quotes and are still JSON-escaped, which is what an in-place rewrite needs.
package jsonx

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipStringIndex returns the index after the closing quote of the string
// whose opening quote is at i, or -1. It jumps from quote to quote with
// bytes.IndexByte (vector instructions natively) instead of looking at
// each byte: strings are most of a chat request. skipString picks it or
// skipStringWords by platform.
func skipStringIndex(b []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		q := i + j
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for k := q - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		i = q + 1
	}
}

// SkipValue returns the index just after the JSON value starting at i
// (leading whitespace allowed), or -1 when b is malformed there.
func SkipValue(b []byte, i int) int {
	i = skipWS(b, i)
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; c {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				if i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default:
		// number, true, false, null
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if j == i {
					return -1
				}
				return j
			}
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

// ObjectField finds key in the object starting at obj (index of '{' or of
// whitespace before it) and returns the span [start,end) of its raw value.
func ObjectField(b []byte, obj int, key string) (start, end int, ok bool) {
	i := skipWS(b, obj)
	if i >= len(b) || b[i] != '{' {
		return 0, 0, false
	}
	i++
	for {
		i = skipWS(b, i)
		if i >= len(b) {
			return 0, 0, false
		}
		if b[i] == '}' {
			return 0, 0, false
		}
		if b[i] == ',' {
			i++
			continue
		}
		if b[i] != '"' {
			return 0, 0, false
		}
		ks := i + 1
		ke := skipString(b, i)
		if ke < 0 {
			return 0, 0, false
		}
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return 0, 0, false
		}
		vs := skipWS(b, i+1)
		ve := SkipValue(b, vs)
		if ve < 0 {
			return 0, 0, false
		}
		if ke-1-ks == len(key) && string(b[ks:ke-1]) == key {
			return vs, ve, true
		}
		i = ve
	}
}

// Field is ObjectField on the top-level object.
func Field(b []byte, key string) (start, end int, ok bool) {
	return ObjectField(b, 0, key)
}

// StringField returns the raw (escaped) content of the top-level string
// field key, without copying.
func StringField(b []byte, key string) ([]byte, bool) {
	s, e, ok := Field(b, key)
	if !ok || b[s] != '"' {
		return nil, false
	}
	return b[s+1 : e-1], true
}

// IntField parses the top-level integer field key.
func IntField(b []byte, key string) (int64, bool) {
	s, e, ok := Field(b, key)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b[s:e]), 10, 64)
	return n, err == nil
}

// BoolField parses the top-level boolean field key.
func BoolField(b []byte, key string) (value, ok bool) {
	s, e, ok := Field(b, key)
	if !ok {
		return false, false
	}
	switch string(b[s:e]) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// Splice returns b with b[start:end] replaced by repl, in a new slice.
func Splice(b []byte, start, end int, repl []byte) []byte {
	out := make([]byte, 0, len(b)-(end-start)+len(repl))
	out = append(out, b[:start]...)
	out = append(out, repl...)
	return append(out, b[end:]...)
}

// SetField sets the top-level field key to the raw JSON value, replacing
// it or inserting it first in the object. It returns a new slice.
func SetField(b []byte, key string, raw []byte) ([]byte, bool) {
	if s, e, ok := Field(b, key); ok {
		return Splice(b, s, e, raw), true
	}
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	ins := make([]byte, 0, len(key)+len(raw)+4)
	ins = AppendString(ins, key)
	ins = append(ins, ':')
	ins = append(ins, raw...)
	if j := skipWS(b, i+1); j < len(b) && b[j] != '}' {
		ins = append(ins, ',')
	}
	return Splice(b, i+1, i+1, ins), true
}

// SetStringField sets the top-level field key to the string value.
func SetStringField(b []byte, key, value string) ([]byte, bool) {
	return SetField(b, key, AppendString(nil, value))
}

// ForEachElement calls fn with the span of each element of the array that
// starts at arr. It returns false when b is not an array there.
func ForEachElement(b []byte, arr int, fn func(start, end int)) bool {
	i := skipWS(b, arr)
	if i >= len(b) || b[i] != '[' {
		return false
	}
	i++
	for {
		i = skipWS(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ']':
			return true
		case ',':
			i++
			continue
		}
		e := SkipValue(b, i)
		if e < 0 {
			return false
		}
		fn(i, e)
		i = e
	}
}

// WalkStrings calls fn with the content span (quotes excluded, still
// escaped) of every string value in the document, keys excluded. It is how
// a guardrail visits all text (message contents, tool arguments, response
// choices) without decoding the document.
func WalkStrings(b []byte, fn func(start, end int)) bool {
	i := 0
	// expectKey tracks, per nesting level, whether the next string is an
	// object key; a small fixed stack covers real documents without
	// allocating.
	var stack [64]bool
	depth := 0
	inObjKey := false
	for i < len(b) {
		switch c := b[i]; c {
		case '{':
			if depth < len(stack) {
				stack[depth] = true
			}
			depth++
			inObjKey = true
			i++
		case '[':
			if depth < len(stack) {
				stack[depth] = false
			}
			depth++
			inObjKey = false
			i++
		case '}', ']':
			// A close with nothing open is malformed; going on would index
			// the stack at -1.
			if depth == 0 {
				return false
			}
			depth--
			i++
			inObjKey = false
		case ',':
			inObjKey = depth > 0 && depth <= len(stack) && stack[depth-1]
			i++
		case ':':
			inObjKey = false
			i++
		case '"':
			e := skipString(b, i)
			if e < 0 {
				return false
			}
			if !inObjKey {
				fn(i+1, e-1)
			}
			i = e
		default:
			i++
		}
	}
	return depth == 0
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string literal.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// ForEachMessageText calls fn with the content span of every text in a
// chat request's top-level "messages": a string "content", or the "text"
// of each content part. Other fields (tool schemas, ids) are not visited,
// for plugins that must only look at what users and models wrote.
func ForEachMessageText(b []byte, fn func(start, end int)) bool {
	ms, _, ok := Field(b, "messages")
	if !ok {
		return false
	}
	return ForEachElement(b, ms, func(s, _ int) {
		cs, ce, ok := ObjectField(b, s, "content")
		if !ok {
			return
		}
		switch b[cs] {
		case '"':
			fn(cs+1, ce-1)
		case '[':
			ForEachElement(b, cs, func(ps, _ int) {
				if ts, te, ok := ObjectField(b, ps, "text"); ok && b[ts] == '"' {
					fn(ts+1, te-1)
				}
			})
		}
	})
}
