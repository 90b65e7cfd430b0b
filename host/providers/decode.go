package providers

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/secret"
)

// decodeBody strictly decodes body into v. encoding/json does not say which
// field a custom decoder (secret.Value) failed on, so such failures are
// located by re-checking the secret-capable paths the body may hold.
func decodeBody(body []byte, v any, secretPaths []string) *apierr.Error {
	e := apierr.DecodeJSON(body, v)
	if e == nil {
		return nil
	}
	if e.Detail.Param != "" {
		// encoding/json names fields of embedded structs with the Go type
		// name (Key.models); clients know only the JSON names.
		clean := strings.TrimPrefix(strings.TrimPrefix(e.Detail.Param, "Key."), "KeyConfigs.")
		if clean != e.Detail.Param {
			e.Detail.Message = strings.ReplaceAll(e.Detail.Message, e.Detail.Param, clean)
			e.Detail.Param = clean
		}
		return e
	}
	if e.Detail.Code != "invalid_value" {
		return e
	}
	if path, err := locateSecretError(body, secretPaths); path != "" {
		return apierr.BadRequest("invalid_value", path, fmt.Sprintf("%s: %v", path, err))
	}
	return e
}

func locateSecretError(body []byte, paths []string) (string, error) {
	var doc map[string]any
	if json.Unmarshal(body, &doc) != nil {
		return "", nil
	}
	for _, p := range paths {
		node, ok := lookupPath(doc, p)
		if !ok {
			continue
		}
		raw, _ := json.Marshal(node)
		var v secret.Value
		if err := json.Unmarshal(raw, &v); err != nil {
			return p, err
		}
	}
	return "", nil
}

func lookupPath(doc map[string]any, path string) (any, bool) {
	var cur any = doc
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func decodeKey(raw []byte) (Key, error) {
	var k Key
	if err := json.Unmarshal(raw, &k); err != nil {
		return Key{}, fmt.Errorf("decode key: %w", err)
	}
	return k, nil
}
