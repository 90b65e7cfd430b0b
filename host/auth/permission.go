package auth

import "strings"

// Permission is a Resource:Operation pair such as Providers:View. Every
// management route declares one next to its registration.
type Permission struct {
	Resource  string
	Operation string
}

// Public marks a route that needs no management credentials (health, login,
// version, OAuth callbacks); it is a declaration, not an omission.
var Public = Permission{}

// Perm builds a Permission.
func Perm(resource, operation string) Permission { return Permission{resource, operation} }

// IsPublic reports whether p is the Public marker.
func (p Permission) IsPublic() bool { return p.Resource == "" }

func (p Permission) String() string {
	if p.IsPublic() {
		return "public"
	}
	return p.Resource + ":" + p.Operation
}

// Allows reports whether a scope list grants p. Scopes are "*",
// "Resource:*" or "Resource:Operation"; matching is case-insensitive.
func Allows(scopes []string, p Permission) bool {
	for _, s := range scopes {
		if s == "*" {
			return true
		}
		res, op, ok := strings.Cut(s, ":")
		if !ok || !strings.EqualFold(res, p.Resource) {
			continue
		}
		if op == "*" || strings.EqualFold(op, p.Operation) {
			return true
		}
	}
	return false
}
