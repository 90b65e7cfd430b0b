// Package openaiwire holds stream handling shared by adapters whose
// upstream speaks the OpenAI wire (OpenAI itself, Azure OpenAI, and any
// third-party OpenAI-compatible adapter).
package openaiwire

import (
	"bytes"
	"strconv"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// AppendStreamChunks appends to dst the JSON array of chunks for one batch
// of upstream events, or returns dst empty when the batch carries none.
// Malformed input is an error, never a panic: the batch comes from the
// network through the host's framing, and a guest panic would kill the
// instance and hide the cause.
func AppendStreamChunks(dst, batch []byte) ([]byte, error) {
	start := len(dst)
	n := 0
	var ferr error
	ok := jsonx.ForEachElement(batch, 0, func(s, e int) {
		if ferr != nil {
			return
		}
		var event, data []byte
		if !jsonx.ForEachMember(batch, s, func(k []byte, vs, ve int) {
			switch string(k) {
			case "event":
				event, _ = jsonx.StringAt(batch, vs, ve)
			case "data":
				data = batch[vs:ve]
			}
		}) {
			ferr = ErrMalformed
			return
		}
		if err := EventError(event, data); err != nil {
			ferr = err
			return
		}
		if len(data) == 0 || data[0] != '{' {
			// "[DONE]" (the host writes its own terminator) and any other
			// non-object data (keep-alive text) are not chunks.
			return
		}
		if n == 0 {
			dst = append(dst, '[')
		} else {
			dst = append(dst, ',')
		}
		dst = append(dst, data...)
		n++
	})
	if ferr != nil {
		return dst[:start], ferr
	}
	if !ok {
		return dst[:start], ErrMalformed
	}
	if n > 0 {
		dst = append(dst, ']')
	}
	return dst, nil
}

// ErrMalformed is returned for a stream batch that is not a JSON array of
// events.
var ErrMalformed = &pluginsdk.Error{Code: 502, Message: "ErrMalformed stream batch"}

// EventError recognises the errors OpenAI-wire servers send inside a 200
// stream and returns the *pluginsdk.Error standing for them, or nil:
//   - chat/completions: a data object with an "error" member, e.g.
//     {"error":{"message":...,"type":"server_error","code":null}};
//   - Responses API: event "error" / type "error" with code and message at
//     the top level, and type "response.failed" with response.error.
func EventError(event, data []byte) error {
	isErrEvent := string(event) == "error"
	if len(data) == 0 || data[0] != '{' {
		if isErrEvent {
			return &pluginsdk.Error{Code: 500, Message: "upstream stream error"}
		}
		return nil
	}
	var errObj, typ, resp []byte
	if !jsonx.ForEachMember(data, 0, func(k []byte, s, e int) {
		switch string(k) {
		case "error":
			errObj = data[s:e]
		case "type":
			typ, _ = jsonx.StringAt(data, s, e)
		case "response":
			resp = data[s:e]
		}
	}) {
		return ErrMalformed
	}
	switch {
	case len(errObj) > 0 && string(errObj) != "null":
		return ErrorFrom(errObj)
	case isErrEvent || string(typ) == "error":
		return ErrorFrom(data)
	case string(typ) == "response.failed":
		if len(resp) > 0 {
			if s, e, ok := jsonx.ObjectField(resp, 0, "error"); ok && resp[s] == '{' {
				return ErrorFrom(resp[s:e])
			}
		}
		return &pluginsdk.Error{Code: 500, Message: "upstream stream error: response failed"}
	}
	return nil
}

// ErrorFrom builds the error for an OpenAI error object (or a Responses
// error event, which has the same members at its top level). A numeric code
// in 4xx/5xx is used as the status; rate-limit codes mean 429 so the host
// backs off; anything else is 500.
func ErrorFrom(obj []byte) error {
	code := 500
	var msg []byte
	if obj[0] == '"' {
		msg, _ = jsonx.StringAt(obj, 0, len(obj))
	}
	jsonx.ForEachMember(obj, 0, func(k []byte, s, e int) {
		switch string(k) {
		case "code", "type":
			v := obj[s:e]
			if str, ok := jsonx.StringAt(obj, s, e); ok {
				v = str
			}
			if n, err := strconv.Atoi(string(v)); err == nil && n >= 400 && n < 600 {
				code = n
			} else if code == 500 && (bytes.Contains(v, []byte("rate_limit")) || bytes.Contains(v, []byte("insufficient_quota"))) {
				code = 429
			}
		case "message":
			msg, _ = jsonx.StringAt(obj, s, e)
		}
	})
	text := "upstream stream error"
	if len(msg) > 0 {
		// Cap what is echoed: the message is the provider's, but a log line
		// should not carry an arbitrarily long upstream string.
		if len(msg) > 300 {
			msg = msg[:300]
		}
		u, _ := jsonx.AppendUnescaped(nil, msg)
		text += ": " + string(bytes.ToValidUTF8(u, []byte("?")))
	}
	return &pluginsdk.Error{Code: code, Message: text}
}
