package config

import (
	"encoding/json"
	"fmt"
)

// jsonMarshal encodes a parsed YAML/JSON value, converting the
// map[any]any nodes some YAML decoders produce into JSON objects.
func jsonMarshal(v any) ([]byte, error) {
	return json.Marshal(normalize(v))
}

func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			out[k] = normalize(val)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			out[fmt.Sprint(k)] = normalize(val)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			out[i] = normalize(val)
		}
		return out
	}
	return v
}
