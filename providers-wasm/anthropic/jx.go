package main

import (
	"bytes"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// Reflection-free JSON reading and writing. Go's wasm code generation makes
// encoding/json about 6x slower in the guest than natively (see
// /work/shared/notes/wasm-findings.md), and an adapter runs on every
// request, so documents are walked as raw byte spans and answers are built
// by appending. Decoders call jsonx.Valid first (equivalent to json.Valid,
// several times cheaper under wasm) unless the host's input is trusted (see
// Adapter.skipValidation): the scanners below then only ever see well-formed
// JSON, and still never index out of range when they do not.

// errMalformed is what decoders report for input that is not the JSON
// shape they expect.
var errMalformed = errors.New("malformed JSON")

// eachField calls fn with the key (still escaped, without quotes) and the
// raw value of every member of the object raw. It returns false when raw is
// not an object; fn returning false stops early.
func eachField(raw []byte, fn func(key, val []byte) bool) bool {
	return jsonx.WalkMembers(raw, 0, func(key []byte, s, e int) bool { return fn(key, raw[s:e]) })
}

// eachElem calls fn with every element of the array raw; false when raw
// is not an array.
func eachElem(raw []byte, fn func(val []byte)) bool {
	return jsonx.ForEachElement(raw, 0, func(s, e int) { fn(raw[s:e]) })
}

// get returns the raw value of key in the object raw, or nil.
func get(raw []byte, key string) []byte {
	s, e, ok := jsonx.ObjectField(raw, 0, key)
	if !ok {
		return nil
	}
	return raw[s:e]
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// isString, isObject, isArray and isNull look at the first byte of a raw
// value; raw values from eachField and get carry no leading whitespace.
func isString(raw []byte) bool { return len(raw) >= 2 && raw[0] == '"' }
func isObject(raw []byte) bool { return len(raw) >= 2 && raw[0] == '{' }
func isArray(raw []byte) bool  { return len(raw) >= 2 && raw[0] == '[' }

// present reports a value that is there and not null.
func present(raw []byte) bool { return len(raw) > 0 && string(raw) != "null" }

// str decodes a JSON string value; anything else gives "".
func str(raw []byte) string {
	if !isString(raw) {
		return ""
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c == '\\' {
			return unescape(body)
		}
	}
	return string(body)
}

// unescape decodes the escapes of a JSON string body. Invalid escapes are
// kept literally: the input was validated, so they do not occur.
func unescape(b []byte) string { return string(unescapeBytes(b)) }

// unescapeBytes is unescape into a new slice.
func unescapeBytes(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' || i+1 >= len(b) {
			out = append(out, c)
			continue
		}
		i++
		switch b[i] {
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'u':
			r, n := hex4(b[i+1:])
			if n == 0 {
				out = append(out, '\\', 'u')
				continue
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if i+6 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
					if r2, n2 := hex4(b[i+3:]); n2 > 0 {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							i += 6
							out = utf8.AppendRune(out, d)
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default: // '"', '\\', '/'
			out = append(out, b[i])
		}
	}
	return out
}

func hex4(b []byte) (rune, int) {
	if len(b) < 4 {
		return 0, 0
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 32)
	if err != nil {
		return 0, 0
	}
	return rune(n), 4
}

// intOf parses an integer value; ok is false for anything else.
func intOf(raw []byte) (int64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	switch raw[0] {
	case '"', '{', '[', 'n', 't', 'f':
		// Strings, objects, arrays, null and booleans are no numbers
		// (usage carries "service_tier" and nested objects): strconv would
		// say so too, at the price of two error allocations.
		return 0, false
	}
	// Token counts, indexes and timestamps are plain digits: summed here
	// without strconv's string conversion and checks (18 digits cannot
	// overflow an int64).
	if len(raw) <= 18 {
		var n int64
		plain := true
		for _, c := range raw {
			if c < '0' || c > '9' {
				plain = false
				break
			}
			n = n*10 + int64(c-'0')
		}
		if plain {
			return n, true
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		// Integers written as 12.0 or 1e3 still count.
		f, ferr := strconv.ParseFloat(string(raw), 64)
		if ferr != nil || f != float64(int64(f)) {
			return 0, false
		}
		return int64(f), true
	}
	return n, true
}

// enc appends JSON. A member or element needs a comma before it unless it
// is the first in its container, which is exactly when the byte before it
// is the container's opening brace or bracket: sep looks at that byte, so
// callers never count commas and enc keeps no stack.
type enc struct {
	b []byte
}

func (e *enc) sep() {
	if n := len(e.b); n > 0 && e.b[n-1] != '{' && e.b[n-1] != '[' {
		e.b = append(e.b, ',')
	}
}

// obj and arr open an object or array as a value: call key or elem first
// when they are a member or element of an enclosing container.
func (e *enc) obj()    { e.b = append(e.b, '{') }
func (e *enc) arr()    { e.b = append(e.b, '[') }
func (e *enc) endObj() { e.b = append(e.b, '}') }
func (e *enc) endArr() { e.b = append(e.b, ']') }

// key starts an object member. Keys are literals of this package that need
// no escaping, so they are copied as they are.
func (e *enc) key(k string) {
	e.sep()
	e.b = append(e.b, '"')
	e.b = append(e.b, k...)
	e.b = append(e.b, '"', ':')
}
func (e *enc) elem() { e.sep() }

// lit appends JSON text written out in the code (punctuation included),
// for fixed runs of output where one copy beats a call per token.
func (e *enc) lit(s string) { e.b = append(e.b, s...) }

func (e *enc) str(s string) { e.b = jsonx.AppendString(e.b, s) }
func (e *enc) raw(r []byte) { e.b = append(e.b, r...) }
func (e *enc) int(n int64)  { e.b = strconv.AppendInt(e.b, n, 10) }
func (e *enc) null()        { e.b = append(e.b, "null"...) }
func (e *enc) bool(v bool)  { e.b = strconv.AppendBool(e.b, v) }
func (e *enc) kstr(k, v string) {
	e.key(k)
	e.str(v)
}
func (e *enc) kraw(k string, r []byte) {
	e.key(k)
	e.raw(r)
}
func (e *enc) kint(k string, n int64) {
	e.key(k)
	e.int(n)
}

// rawKey starts a member whose key is already an escaped JSON string body,
// as eachField hands it out: passed-through fields keep their exact bytes.
func (e *enc) rawKey(k []byte) {
	e.sep()
	e.b = append(e.b, '"')
	e.b = append(e.b, k...)
	e.b = append(e.b, '"', ':')
}

// strOf writes the JSON string value raw again, as e.str(str(raw)) would:
// a string of printable ASCII without escapes (model names, ids) is copied
// as it is, anything else is decoded and re-encoded.
func (e *enc) strOf(raw []byte) {
	if isString(raw) && plainASCII(raw[1:len(raw)-1]) {
		e.b = append(e.b, raw...)
		return
	}
	e.str(str(raw))
}

func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x80 || c == '\\' || c == '"' {
			return false
		}
	}
	return true
}

// text returns the content of the JSON string raw: the bytes between the
// quotes when there is no escape (no copy), decoded otherwise; nil when raw
// is not a string. It is str without the allocation, for comparisons.
func text(raw []byte) []byte {
	if !isString(raw) {
		return nil
	}
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return body
	}
	return []byte(unescape(body))
}
