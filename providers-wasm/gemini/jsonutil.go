package main

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// Byte-level JSON helpers on top of pluginsdk/jsonx. The translators below
// never decode a whole document: they walk members once and copy raw spans
// into the output, because reflection-based encoding/json is 5-6x slower
// in a wasm guest (see notes/wasm-findings.md). A JSON string's escaped
// content is valid escaped content in any other JSON string, so text is
// moved between the two wires without unescaping it.

// forEachMember calls fn with the raw key content (quotes excluded, still
// escaped) and the raw value of each member of the object raw. fn returns
// false to stop early. It reports false when raw is not a well-formed object.
func forEachMember(raw []byte, fn func(key, val []byte) bool) bool {
	return jsonx.WalkMembers(raw, 0, func(key []byte, s, e int) bool { return fn(key, raw[s:e]) })
}

// forEachElem calls fn with each raw element of the array raw; false when
// raw is not an array.
func forEachElem(raw []byte, fn func(i int, elem []byte)) bool {
	n := 0
	return jsonx.ForEachElement(raw, 0, func(s, e int) {
		fn(n, raw[s:e])
		n++
	})
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// get returns the raw value of key in the object raw; nil when absent or
// when the value is null, so callers test one condition.
func get(raw []byte, key string) []byte {
	s, e, ok := jsonx.ObjectField(raw, 0, key)
	if !ok || isNull(raw[s:e]) {
		return nil
	}
	return raw[s:e]
}

func isNull(v []byte) bool { return len(v) == 4 && string(v) == "null" }

// isString, isObject and isArray test the kind of a raw value.
func isString(v []byte) bool { return len(v) >= 2 && v[0] == '"' }
func isObject(v []byte) bool { return len(v) >= 2 && v[0] == '{' }
func isArray(v []byte) bool  { return len(v) >= 2 && v[0] == '[' }

// inner returns the escaped content of a raw string value (quotes removed).
func inner(v []byte) []byte {
	if !isString(v) {
		return nil
	}
	return v[1 : len(v)-1]
}

// unquote decodes a raw JSON string value. The common case has no escape
// and is a plain conversion; escapes go through encoding/json, which gets
// surrogate pairs right where strconv.Unquote would not.
func unquote(v []byte) string {
	if !isString(v) {
		return ""
	}
	c := v[1 : len(v)-1]
	if bytes.IndexByte(c, '\\') < 0 {
		return string(c)
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// getString is unquote(get(raw, key)).
func getString(raw []byte, key string) string { return unquote(get(raw, key)) }

// getInt parses an integer member; 0 when absent or not an integer.
func getInt(raw []byte, key string) int64 {
	v := get(raw, key)
	if v == nil {
		return 0
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		// Some encoders write integral numbers as 12.0.
		f, ferr := strconv.ParseFloat(string(v), 64)
		if ferr != nil {
			return 0
		}
		return int64(f)
	}
	return n
}

// appendKey appends `"key":` after a comma when the object already has a
// member (the byte before is not '{').
func appendKey(dst []byte, key string) []byte {
	if n := len(dst); n > 0 && dst[n-1] != '{' && dst[n-1] != '[' {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

// appendComma separates array elements.
func appendComma(dst []byte) []byte {
	if n := len(dst); n > 0 && dst[n-1] != '[' && dst[n-1] != '{' {
		dst = append(dst, ',')
	}
	return dst
}

// appendRawString appends already-escaped string content within quotes.
func appendRawString(dst, escaped []byte) []byte {
	dst = append(dst, '"')
	dst = append(dst, escaped...)
	return append(dst, '"')
}

func badRequest(format string, args ...any) error {
	return pluginsdk.Reject(400, format, args...)
}

// badUpstream reports an upstream answer the adapter cannot read; 502
// because the client's request was fine.
func badUpstream(format string, args ...any) error {
	return pluginsdk.Reject(502, format, args...)
}

// validJSON checks a hook's input once up front, so the scanners below may
// assume well-formed JSON and malformed input becomes an error, never
// garbage output. jsonx.Valid is json.Valid without its per-byte state
// machine calls, several times cheaper under wasm.
func validJSON(b []byte) bool { return jsonx.Valid(b) }
