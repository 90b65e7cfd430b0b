package audit

import (
	"encoding/json"

	"github.com/wasmgate/gateway/host/secret"
)

// Redact returns a JSON summary of body with secret-looking members masked
// and the result capped to max bytes. Non-JSON bodies are summarised by size.
func Redact(body []byte, max int) json.RawMessage {
	if len(body) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		b, _ := json.Marshal(map[string]any{"non_json_bytes": len(body)})
		return b
	}
	out, err := json.Marshal(redactValue(v))
	if err != nil {
		return nil
	}
	if len(out) > max {
		b, _ := json.Marshal(map[string]any{"truncated": true, "bytes": len(out)})
		return b
	}
	return out
}

func redactValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			if secret.SensitiveName(k) {
				if val != nil && val != "" {
					t[k] = "[REDACTED]"
				}
				continue
			}
			t[k] = redactValue(val)
		}
		return t
	case []any:
		for i := range t {
			t[i] = redactValue(t[i])
		}
		return t
	}
	return v
}
