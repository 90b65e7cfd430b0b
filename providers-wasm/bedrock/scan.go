package main

import (
	"encoding/json"
	"strconv"

	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// Byte-level JSON helpers on top of jsonx. The adapter works on spans of the
// input instead of decoding it with reflection (several times slower under
// wasm, see the wasm findings): text is copied to the output still escaped,
// which is valid JSON on both sides. Every entry point validates its input
// with jsonx.Valid first, so the spans below always come from well-formed
// JSON and malformed input is an error, never a panic.

// forEachField calls fn with the raw key (escaped, no quotes) and value span
// of each member of the object starting at obj. It returns false when b is
// not an object there or fn stops the walk.
func forEachField(b []byte, obj int, fn func(key []byte, vs, ve int) bool) bool {
	return jsonx.WalkMembers(b, obj, fn)
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// field returns the raw value of key in the object obj (a whole value).
func field(obj []byte, key string) ([]byte, bool) {
	s, e, ok := jsonx.ObjectField(obj, 0, key)
	if !ok {
		return nil, false
	}
	return obj[s:e], true
}

// path walks nested objects: path(b, "output", "message").
func path(b []byte, keys ...string) ([]byte, bool) {
	for _, k := range keys {
		v, ok := field(b, k)
		if !ok {
			return nil, false
		}
		b = v
	}
	return b, true
}

// rawString returns the escaped content of a JSON string value, ok=false
// for any other kind of value.
func rawString(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' {
		return nil, false
	}
	return v[1 : len(v)-1], true
}

// strField is rawString of a field.
func strField(obj []byte, key string) ([]byte, bool) {
	v, ok := field(obj, key)
	if !ok {
		return nil, false
	}
	return rawString(v)
}

// unescape turns the escaped content of a JSON string into Go text. Escapes
// are rare in the ids and names it is used for, so the slow path may use
// encoding/json.
func unescape(raw []byte) string {
	for _, c := range raw {
		if c == '\\' {
			var s string
			q := make([]byte, 0, len(raw)+2)
			q = append(append(append(q, '"'), raw...), '"')
			if json.Unmarshal(q, &s) != nil {
				return string(raw)
			}
			return s
		}
	}
	return string(raw)
}

// strValue is the unescaped text of a string field ("" when absent).
func strValue(obj []byte, key string) string {
	raw, _ := strField(obj, key)
	return unescape(raw)
}

// intValue reads an integer field; floats and other kinds read as absent.
func intValue(obj []byte, key string) (int64, bool) {
	v, ok := field(obj, key)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

// isNumber reports whether v is a JSON number.
func isNumber(v []byte) bool {
	return len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9')
}

// isNull reports whether v is absent or JSON null.
func isNull(v []byte) bool { return len(v) == 0 || string(v) == "null" }

// eachElement is jsonx.ForEachElement on a whole array value.
func eachElement(arr []byte, fn func(el []byte)) bool {
	return jsonx.ForEachElement(arr, 0, func(s, e int) { fn(arr[s:e]) })
}

// appendKey appends `"key":`, with a comma first unless the object is empty
// so far (its last byte is '{').
func appendKey(dst []byte, key string) []byte {
	if n := len(dst); n > 0 && dst[n-1] != '{' && dst[n-1] != '[' {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

// appendComma separates array elements: a comma unless the array is empty.
func appendComma(dst []byte) []byte {
	if n := len(dst); n > 0 && dst[n-1] != '[' && dst[n-1] != '{' {
		dst = append(dst, ',')
	}
	return dst
}

// appendRawString appends already-escaped string content as a JSON string.
func appendRawString(dst, raw []byte) []byte {
	dst = append(dst, '"')
	dst = append(dst, raw...)
	return append(dst, '"')
}

// appendString appends s as a JSON string literal.
func appendString(dst []byte, s string) []byte { return jsonx.AppendString(dst, s) }
