package registry

import (
	"encoding/json"

	"github.com/wasmgate/gateway/host/secret"
)

// A plugin's config is free-form JSON, yet it often carries a credential
// (a moderation service's API key, a webhook token). Config values are
// masked in every /api/plugins answer wherever
//
//   - the module's config_schema marks the property `"writeOnly": true`
//     (JSON Schema's own word for "accepted, never returned"), or
//   - the member's name looks like a secret (secret.SensitiveName), which
//     covers modules without a schema and modules not loaded yet.
//
// Only strings are masked: a secret is a string, and numbers such as
// max_tokens stay readable. A masked value sent back unchanged (GET, edit,
// PUT) keeps the stored secret, as provider keys do.

// schemaNode is the part of a JSON Schema the masking follows.
type schemaNode struct {
	writeOnly  bool
	properties map[string]*schemaNode
	// additional is additionalProperties when it is a schema (it may also
	// be a bool, which says nothing about secrets).
	additional *schemaNode
	items      *schemaNode
}

// UnmarshalJSON reads the keywords the masking follows.
func (n *schemaNode) UnmarshalJSON(b []byte) error {
	var raw struct {
		WriteOnly            bool                   `json:"writeOnly"`
		Properties           map[string]*schemaNode `json:"properties"`
		AdditionalProperties json.RawMessage        `json:"additionalProperties"`
		Items                *schemaNode            `json:"items"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	n.writeOnly, n.properties, n.items = raw.WriteOnly, raw.Properties, raw.Items
	if ap := raw.AdditionalProperties; len(ap) > 0 && ap[0] == '{' {
		n.additional = new(schemaNode)
		return json.Unmarshal(ap, n.additional)
	}
	return nil
}

// parseSchema reads a module's config schema; nil when it has none or it
// is not an object the masking can follow.
func parseSchema(raw json.RawMessage) *schemaNode {
	if len(raw) == 0 {
		return nil
	}
	var n schemaNode
	if json.Unmarshal(raw, &n) != nil {
		return nil
	}
	return &n
}

// isSecret reports whether a value at n is secret, given whether the value
// holding it is (a secret object's members all are).
func (n *schemaNode) isSecret(inSecret bool) bool { return inSecret || (n != nil && n.writeOnly) }

// member is the schema of member name and whether its value is secret:
// writeOnly, inside a secret, or named like a secret.
func (n *schemaNode) member(name string, inSecret bool) (*schemaNode, bool) {
	var m *schemaNode
	if n != nil {
		if m = n.properties[name]; m == nil {
			m = n.additional
		}
	}
	return m, m.isSecret(inSecret) || secret.SensitiveName(name)
}

// item is the schema of an array's elements and whether they are secret.
func (n *schemaNode) item(inSecret bool) (*schemaNode, bool) {
	var it *schemaNode
	if n != nil {
		it = n.items
	}
	return it, it.isSecret(inSecret)
}

// maskConfig returns cfg with its secret values masked (see above).
func maskConfig(cfg json.RawMessage, schema *schemaNode) json.RawMessage {
	if len(cfg) == 0 {
		return cfg
	}
	var v any
	if json.Unmarshal(cfg, &v) != nil {
		return cfg
	}
	out, err := json.Marshal(maskValue(v, schema, schema.isSecret(false)))
	if err != nil {
		return cfg
	}
	return out
}

func maskValue(v any, n *schemaNode, secretHere bool) any {
	switch t := v.(type) {
	case string:
		if secretHere {
			return secret.Mask(t)
		}
		return t
	case map[string]any:
		for k, val := range t {
			m, sec := n.member(k, secretHere)
			t[k] = maskValue(val, m, sec)
		}
		return t
	case []any:
		it, sec := n.item(secretHere)
		for i := range t {
			t[i] = maskValue(t[i], it, sec)
		}
		return t
	}
	return v
}

// keepMasked returns next with every secret string that is the mask of
// the stored value at the same place replaced by the stored value, so a
// config read from the API and sent back does not overwrite its secrets
// with their masks.
func keepMasked(next, prev json.RawMessage, schema *schemaNode) (json.RawMessage, error) {
	if len(next) == 0 || len(prev) == 0 {
		return next, nil
	}
	var nv, pv any
	if err := json.Unmarshal(next, &nv); err != nil {
		return nil, err
	}
	if json.Unmarshal(prev, &pv) != nil {
		return next, nil
	}
	changed := false
	nv = keepValue(nv, pv, schema, schema.isSecret(false), &changed)
	if !changed {
		return next, nil
	}
	out, err := json.Marshal(nv)
	if err != nil {
		return nil, err
	}
	return normalizeConfig(out), nil
}

func keepValue(nv, pv any, n *schemaNode, secretHere bool, changed *bool) any {
	switch t := nv.(type) {
	case string:
		if old, ok := pv.(string); ok && secretHere && old != "" && t == secret.Mask(old) && t != old {
			*changed = true
			return old
		}
		return t
	case map[string]any:
		pm, _ := pv.(map[string]any)
		for k, val := range t {
			m, sec := n.member(k, secretHere)
			t[k] = keepValue(val, pm[k], m, sec, changed)
		}
		return t
	case []any:
		pa, _ := pv.([]any)
		it, sec := n.item(secretHere)
		for i := range t {
			var old any
			if i < len(pa) {
				old = pa[i]
			}
			t[i] = keepValue(t[i], old, it, sec, changed)
		}
		return t
	}
	return nv
}

// schemaOf is the config schema of the loaded module called name; nil when
// it is not loaded or declares none (the name heuristic still applies).
func (s *Service) schemaOf(name string) *schemaNode {
	e, ok := s.mgr.Entry(name)
	if !ok {
		return nil
	}
	return parseSchema(json.RawMessage(e.Manifest().ConfigSchema))
}
