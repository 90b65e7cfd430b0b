package apierr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// DecodeJSON strictly decodes a JSON object request body into v and turns every failure
// into a 400 envelope that names the problem and, where known, the field.
// Unknown fields are rejected so a misspelt option is never silently ignored.
func DecodeJSON(body []byte, v any) *Error {
	if len(bytes.TrimSpace(body)) == 0 {
		return BadRequest("empty_body", "", "request body is empty; a JSON object is required")
	}
	if trimmed := bytes.TrimSpace(body); trimmed[0] != '{' {
		return BadRequest("invalid_type", "", "request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return BadRequest("invalid_json", "", "request body has data after the JSON value")
	}
	return nil
}

func jsonError(err error) *Error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return BadRequest("invalid_json", "", fmt.Sprintf("malformed JSON at byte %d: %s", syn.Offset, syn.Error()))
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return BadRequest("invalid_type", "", fmt.Sprintf("request body must be a JSON %s, got %s", goKind(typ.Type.Kind().String()), typ.Value))
		}
		return BadRequest("invalid_type", field, fmt.Sprintf("field %q must be %s, got %s", field, goKind(typ.Type.Kind().String()), typ.Value))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return BadRequest("invalid_json", "", "malformed JSON: unexpected end of input")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return BadRequest("unknown_field", name, fmt.Sprintf("unknown field %q", name))
	default:
		// Custom UnmarshalJSON methods report their own validation errors;
		// their text names the field.
		var fe *FieldError
		if errors.As(err, &fe) {
			return BadRequest("invalid_value", fe.Field, fe.Error())
		}
		return BadRequest("invalid_value", "", "invalid value in request body: "+err.Error())
	}
}

// FieldError is returned by custom decoders to name the offending field.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return fmt.Sprintf("field %q: %s", e.Field, e.Message) }

func goKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	}
	return "a " + k
}
