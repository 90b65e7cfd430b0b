package secret

import "strings"

// SensitiveName reports whether a JSON member name may hold a secret. The
// list is broad on purpose: an audit entry or a config view that
// over-redacts loses little, one that leaks a key is an incident.
func SensitiveName(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"password", "secret", "token", "api_key", "apikey", "authorization",
		"credential", "private_key", "access_key", "session", "cookie"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	switch n {
	// env: environment of stdio MCP servers, whose variable names say
	// nothing about whether they hold a secret.
	case "value", "key", "headers", "extra_headers", "env":
		return true
	}
	return false
}
