package inference

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// The adapter contract is JSON both ways, and every translated request
// crosses it twice. encoding/json did that by reflection and, for the
// bodies (RawJSON), by running them through its per-byte scanner to compact
// them: about a tenth of a translated request's CPU. The functions below
// write and read the same bytes by hand. Each one is encoding/json's
// behaviour to the byte (FuzzPluginJSON compares them), and falls back to
// encoding/json where reproducing it is not worth the code: malformed
// bodies (for the exact error) and unusual adapter answers. (Stream
// batches are appendEvents, in pluginadapter.go.)

// appendInputHead opens the fields both adapter inputs start with.
func appendInputHead(dst []byte, reqType, provider, model string) []byte {
	dst = append(dst, `{"request_type":`...)
	dst = appendJSONString(dst, reqType)
	dst = append(dst, `,"provider":`...)
	dst = appendJSONString(dst, provider)
	dst = append(dst, `,"model":`...)
	return appendJSONString(dst, model)
}

// appendAdaptRequestInput appends json.Marshal(in).
func appendAdaptRequestInput(dst []byte, in *AdaptRequestInput) ([]byte, error) {
	dst = appendInputHead(dst, in.RequestType, in.Provider, in.Model)
	dst = append(dst, `,"stream":`...)
	dst = strconv.AppendBool(dst, in.Stream)
	if in.BaseURL != "" {
		dst = append(dst, `,"base_url":`...)
		dst = appendJSONString(dst, in.BaseURL)
	}
	var ok bool
	if len(in.KeyConfig) > 0 {
		dst = append(dst, `,"key_config":`...)
		if dst, ok = appendRawJSON(dst, in.KeyConfig); !ok {
			return json.Marshal(in)
		}
	}
	dst = append(dst, `,"body":`...)
	if dst, ok = appendRawJSON(dst, in.Body); !ok {
		return json.Marshal(in)
	}
	return append(dst, '}'), nil
}

// appendAdaptResponseInput appends json.Marshal(in).
func appendAdaptResponseInput(dst []byte, in *AdaptResponseInput) ([]byte, error) {
	dst = appendInputHead(dst, in.RequestType, in.Provider, in.Model)
	dst = append(dst, `,"status":`...)
	dst = strconv.AppendInt(dst, int64(in.Status), 10)
	if len(in.Headers) > 0 {
		dst = append(dst, `,"headers":`...)
		dst = appendStringMap(dst, in.Headers)
	}
	dst = append(dst, `,"body":`...)
	var ok bool
	if dst, ok = appendRawJSON(dst, in.Body); !ok {
		return json.Marshal(in)
	}
	if in.Context != "" {
		dst = append(dst, `,"context":`...)
		dst = appendJSONString(dst, in.Context)
	}
	if in.EncodingFormat != "" {
		dst = append(dst, `,"encoding_format":`...)
		dst = appendJSONString(dst, in.EncodingFormat)
	}
	return append(dst, '}'), nil
}

// appendStringMap appends a map[string]string as encoding/json does: keys
// sorted.
func appendStringMap(dst []byte, m map[string]string) []byte {
	var keysBuf [16]string
	keys := keysBuf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	// Insertion sort: header maps are small.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		dst = appendJSONString(dst, m[k])
	}
	return append(dst, '}')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as encoding/json writes a string: HTML
// characters, control characters, U+2028 and U+2029 escaped, invalid
// UTF-8 as U+FFFD. jsonx.AppendString, the guests' encoder, writes the
// shorter form; the host keeps encoding/json's bytes so what it hands an
// adapter is what json.Marshal wrote before (FuzzPluginJSON compares).
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendRawJSON appends a RawJSON value as json.Marshal does: nil is null,
// anything else is validated and compacted, with HTML characters, U+2028
// and U+2029 escaped. ok is false when raw is not valid JSON (the caller
// then lets encoding/json produce its error).
func appendRawJSON(dst []byte, raw []byte) ([]byte, bool) {
	if raw == nil {
		return append(dst, "null"...), true
	}
	if !jsonx.Valid(raw) {
		return dst, false
	}
	start := 0
	inString := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '"':
			inString = !inString
		case '\\':
			i++ // the escaped byte: an escaped quote ends no string
		case ' ', '\t', '\n', '\r':
			if !inString {
				dst = append(dst, raw[start:i]...)
				start = i + 1
			}
		case '<', '>', '&':
			dst = append(dst, raw[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case 0xE2:
			if i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8 {
				dst = append(dst, raw[start:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[raw[i+2]&0xF])
				i += 2
				start = i + 1
			}
		}
	}
	return append(dst, raw[start:]...), true
}

// decodeUpstreamRequest is json.Unmarshal(b, spec) for the answers
// adapters actually give: known keys in their exact spelling, plain
// strings, a headers object of plain strings. Anything else (escapes,
// nulls, keys that match a field only case-insensitively, wrong types,
// malformed JSON) is left to encoding/json, whose rules then apply.
func decodeUpstreamRequest(b []byte, spec *UpstreamRequest) error {
	if !fastUpstreamRequest(b, spec) {
		*spec = UpstreamRequest{}
		return json.Unmarshal(b, spec)
	}
	return nil
}

func fastUpstreamRequest(b []byte, spec *UpstreamRequest) bool {
	if !jsonx.Valid(b) {
		return false
	}
	r := jsonx.NewReader(b)
	if !r.Object() {
		return false
	}
	for k, ok := r.Member(); ok; k, ok = r.Member() {
		var dst *string
		switch string(k) {
		case "method":
			dst = &spec.Method
		case "path":
			dst = &spec.Path
		case "url":
			dst = &spec.URL
		case "body_base64":
			dst = &spec.BodyBase64
		case "framing":
			dst = &spec.Framing
		case "context":
			dst = &spec.Context
		case "body":
			if r.Kind() == 'n' {
				return false
			}
			// A copy, as encoding/json makes: the spec outlives nothing it
			// should not, whoever owns b.
			spec.Body = append(json.RawMessage(nil), r.Value()...)
			continue
		case "stream":
			switch string(r.Value()) {
			case "true":
				spec.Stream = true
			case "false":
				spec.Stream = false
			default:
				return false
			}
			continue
		case "headers":
			if !r.Object() {
				return false
			}
			// A repeated "headers" adds to the map, as encoding/json does.
			if spec.Headers == nil {
				spec.Headers = make(map[string]string)
			}
			for hk, ok := r.Member(); ok; hk, ok = r.Member() {
				v, ok := plainString(r.Value())
				if !ok || !plainKey(hk) {
					return false
				}
				spec.Headers[string(hk)] = v
			}
			continue
		default:
			// encoding/json also matches field names case-insensitively.
			if !plainKey(k) || foldsToField(k) {
				return false
			}
			continue
		}
		v, ok := plainString(r.Value())
		if !ok {
			return false
		}
		*dst = v
	}
	return !r.Failed()
}

// foldsToField reports a key that encoding/json would take for one of
// UpstreamRequest's fields although it is not spelled exactly the same.
func foldsToField(k []byte) bool {
	for _, f := range [...]string{"method", "path", "url", "headers", "body", "body_base64", "stream", "framing", "context"} {
		if strings.EqualFold(string(k), f) {
			return true
		}
	}
	return false
}

// plainKey reports a key made of printable ASCII without escapes, which
// decodes to itself.
func plainKey(k []byte) bool {
	for _, c := range k {
		if c < 0x20 || c >= utf8.RuneSelf || c == '\\' {
			return false
		}
	}
	return true
}

// plainString decodes a JSON string of printable ASCII without escapes.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || !plainKey(raw[1:len(raw)-1]) {
		return "", false
	}
	return string(raw[1 : len(raw)-1]), true
}
