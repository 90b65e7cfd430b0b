package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/wasmgate/gateway/host/apierr"
)

// Error codes of the 400s this package returns.
const (
	CodeInvalidJSON = "invalid_json"
	CodeInvalidType = "invalid_type"
	CodeMissing     = "missing_field"
	CodeUnsupported = "unsupported_parameter"
)

// badRequest is the client's fault: an *apierr.Error so the host can return
// it unchanged and the envelope names the field (param) to fix.
func badRequest(code, param, format string, args ...any) *apierr.Error {
	return apierr.BadRequest(code, param, fmt.Sprintf(format, args...))
}

func unsupported(param, why string) *apierr.Error {
	return badRequest(CodeUnsupported, param, "%s is not supported for this provider: %s", param, why)
}

func invalidType(param, want string) *apierr.Error {
	return badRequest(CodeInvalidType, param, "%s must be %s", param, want)
}

// upstreamMalformed is the provider's (or adapter's) fault: the chat answer
// could not be read, so it is a 502 rather than a 400.
func upstreamMalformed(what string, err error) *apierr.Error {
	e := apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_malformed",
		fmt.Sprintf("the provider's %s could not be converted: %v", what, err))
	return e.WithCause(err)
}

// marshal encodes without HTML escaping: model text full of <, > and & is
// the norm, and \u003c escapes only make answers bigger and harder to read.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return b[:len(b)-1], nil // Encode appends a newline
}

// isNull reports an absent or JSON null value.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// decodeAs decodes raw into v, answering a 400 naming param on a type mismatch.
func decodeAs(raw json.RawMessage, v any, param, want string) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return invalidType(param, want)
	}
	return nil
}
