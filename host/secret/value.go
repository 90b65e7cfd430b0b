// Package secret implements the spec's secret-capable values: a field that
// holds either plain text or a reference to an environment variable
// (`env.NAME`) or a HashiCorp Vault KV v2 secret (`vault.path/to/secret`).
// Only the reference is persisted for env and vault values; they are
// resolved when used.
package secret

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Type says where a value comes from.
type Type string

// The value sources.
const (
	PlainText Type = "plain_text"
	Env       Type = "env"
	Vault     Type = "vault"
)

// Value is a secret-capable value. For env and vault values Value is empty
// in memory and in the store: the reference is resolved at use time.
type Value struct {
	Value string `json:"value"`
	Ref   string `json:"ref"`
	Type  Type   `json:"type"`
}

// Parse reads the bare-string input form.
func Parse(s string) (Value, error) {
	switch {
	case strings.HasPrefix(s, "env."):
		name := strings.TrimPrefix(s, "env.")
		if name == "" || strings.ContainsAny(name, " =\t\n") {
			return Value{}, fmt.Errorf("invalid environment reference %q", s)
		}
		return Value{Ref: s, Type: Env}, nil
	case strings.HasPrefix(s, "vault."):
		path := strings.TrimPrefix(s, "vault.")
		if path == "" || strings.HasPrefix(path, "/") || strings.Contains(path, "..") {
			return Value{}, fmt.Errorf("invalid vault reference %q (use vault.path/to/secret or vault.path/to/secret#field)", s)
		}
		return Value{Ref: s, Type: Vault}, nil
	}
	return Value{Value: s, Type: PlainText}, nil
}

// MustPlain wraps a literal (tests and defaults).
func MustPlain(s string) Value { return Value{Value: s, Type: PlainText} }

// IsZero reports whether no value was given.
func (v Value) IsZero() bool { return v.Value == "" && v.Ref == "" }

// UnmarshalJSON accepts a bare string or the {value, ref, type} object.
func (v *Value) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*v = Value{}
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		p, err := Parse(s)
		if err != nil {
			return err
		}
		*v = p
		return nil
	}
	if len(b) == 0 || b[0] != '{' {
		return errors.New("must be a string or an object {value, ref, type}")
	}
	var obj struct {
		Value string `json:"value"`
		Ref   string `json:"ref"`
		Type  Type   `json:"type"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil {
		return fmt.Errorf("secret value: %w", err)
	}
	switch obj.Type {
	case "", PlainText:
		if obj.Ref != "" && obj.Value == "" {
			p, err := Parse(obj.Ref)
			if err != nil {
				return err
			}
			*v = p
			return nil
		}
		if obj.Type == "" {
			p, err := Parse(obj.Value)
			if err != nil {
				return err
			}
			*v = p
			return nil
		}
		*v = Value{Value: obj.Value, Type: PlainText}
	case Env, Vault:
		ref := obj.Ref
		if ref == "" {
			ref = obj.Value
		}
		if !strings.HasPrefix(ref, string(obj.Type)+".") {
			return fmt.Errorf("type %s needs ref %q-prefixed", obj.Type, string(obj.Type)+".")
		}
		p, err := Parse(ref)
		if err != nil {
			return err
		}
		*v = p
	default:
		return fmt.Errorf("unknown secret type %q (use plain_text, env or vault)", obj.Type)
	}
	return nil
}

// Redacted returns the value as shown in API responses: the reference stays
// visible, the secret itself is masked.
func (v Value) Redacted() Value {
	if v.Type != PlainText && v.Type != "" {
		return Value{Value: "", Ref: v.Ref, Type: v.Type}
	}
	return Value{Value: Mask(v.Value), Type: PlainText}
}

// Mask hides a secret string, keeping a short prefix and suffix of long
// values so operators can tell keys apart.
func Mask(s string) string {
	switch {
	case s == "":
		return ""
	case len(s) < 20:
		return strings.Repeat("*", 8)
	default:
		return s[:4] + strings.Repeat("*", 8) + s[len(s)-4:]
	}
}

// KeepIfMasked returns old when v is the masked form of old: clients that GET
// a resource and PUT it back must not overwrite the secret with its mask.
func KeepIfMasked(v, old Value) Value {
	if v.Type == PlainText && old.Type == PlainText && old.Value != "" && v.Value == Mask(old.Value) {
		return old
	}
	if v.IsZero() {
		return old
	}
	return v
}
