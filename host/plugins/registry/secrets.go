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
	WriteOnly  bool                   `json:"writeOnly"`
	Properties map[string]*schemaNode `json:"properties"`
	// AdditionalProperties may be a bool; only an object schema is used.
	AdditionalProperties json.RawMessage `json:"additionalProperties"`
	Items                *schemaNode     `json:"items"`
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

func (n *schemaNode) member(name string) *schemaNode {
	if n == nil {
		return nil
	}
	if p, ok := n.Properties[name]; ok {
		return p
	}
	if len(n.AdditionalProperties) > 0 && n.AdditionalProperties[0] == '{' {
		var ap schemaNode
		if json.Unmarshal(n.AdditionalProperties, &ap) == nil {
			return &ap
		}
	}
	return nil
}

func (n *schemaNode) item() *schemaNode {
	if n == nil {
		return nil
	}
	return n.Items
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
	out, err := json.Marshal(maskValue(v, schema, schema != nil && schema.WriteOnly))
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
			m := n.member(k)
			t[k] = maskValue(val, m, secretHere || (m != nil && m.WriteOnly) || secret.SensitiveName(k))
		}
		return t
	case []any:
		it := n.item()
		for i := range t {
			t[i] = maskValue(t[i], it, secretHere || (it != nil && it.WriteOnly))
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
	nv = keepValue(nv, pv, schema, schema != nil && schema.WriteOnly, &changed)
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
			m := n.member(k)
			t[k] = keepValue(val, pm[k], m, secretHere || (m != nil && m.WriteOnly) || secret.SensitiveName(k), changed)
		}
		return t
	case []any:
		pa, _ := pv.([]any)
		it := n.item()
		for i := range t {
			var old any
			if i < len(pa) {
				old = pa[i]
			}
			t[i] = keepValue(t[i], old, it, secretHere || (it != nil && it.WriteOnly), changed)
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
