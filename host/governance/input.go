package governance

import (
	"bytes"
	"encoding/json"
	"errors"
)

// opt is an update field: Set tells "absent" (keep) from "null" (clear).
type opt[T any] struct {
	Set bool
	V   *T
}

// UnmarshalJSON records that the field was sent; nested objects are decoded
// strictly like the body around them.
func (o *opt[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(bytes.TrimSpace(b)) == "null" {
		o.V = nil
		return nil
	}
	var v T
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return errors.Unwrap(err)
	}
	o.V = &v
	return nil
}
