package users

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wasmgate/gateway/store"
)

// Role is an RBAC role: a named permission list. System roles are defined
// in code, cannot be changed or deleted, and their permission lists follow
// the route table (see systemPermissions).
type Role struct {
	ID           int64     `json:"id"`
	Name         string    `json:"name"`
	Description  string    `json:"description"`
	IsSystemRole bool      `json:"is_system_role"`
	Permissions  []string  `json:"permissions"`
	CreatedAt    time.Time `json:"created_at,omitzero"`
	UpdatedAt    time.Time `json:"updated_at,omitzero"`
}

// RoleRef is the role summary the spec's User carries.
type RoleRef struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	Description  string `json:"description"`
	IsSystemRole bool   `json:"is_system_role"`
}

func (r *Role) ref() RoleRef {
	return RoleRef{ID: r.ID, Name: r.Name, Description: r.Description, IsSystemRole: r.IsSystemRole}
}

// System role ids. Ids below firstCustomRoleID are reserved for system
// roles so later ones keep stable, small ids.
const (
	RoleAdmin         int64 = 1
	RoleDeveloper     int64 = 2
	RoleViewer        int64 = 3
	firstCustomRoleID int64 = 100
)

// governance lists the resources that control who may do what and the
// gateway's own security settings; only admins change them.
var governance = map[string]bool{
	"Settings": true, "APIKeys": true, "Users": true, "Roles": true,
	"AccessProfiles": true, "AuditLogs": true, "Teams": true, "Customers": true,
}

// private lists the governance resources a viewer does not even read:
// identities, credentials and the audit trail.
var private = map[string]bool{
	"APIKeys": true, "Users": true, "Roles": true, "AccessProfiles": true, "AuditLogs": true,
}

var systemRoles = []Role{
	{ID: RoleAdmin, Name: "admin", IsSystemRole: true,
		Description: "Every permission, including users, roles, API keys and settings."},
	{ID: RoleDeveloper, Name: "developer", IsSystemRole: true,
		Description: "Builds on the gateway: manages providers, keys, plugins, webhooks, virtual keys and logs; reads settings, teams and customers; no users, roles, API keys or audit logs."},
	{ID: RoleViewer, Name: "viewer", IsSystemRole: true,
		Description: "Read-only: every View permission except users, roles, access profiles, API keys and audit logs."},
}

// systemPermissions derives a system role's permissions from the catalog.
// Rules rather than lists, so routes added later are classified at once:
//   - admin: "*".
//   - developer: every operation on non-governance resources, plus View on
//     governance resources that are not private.
//   - viewer: View on every resource that is not private.
func systemPermissions(id int64, c *catalog) []string {
	if id == RoleAdmin {
		return []string{"*"}
	}
	out := []string{}
	for _, p := range c.perms {
		res, op := splitPerm(p)
		view := op == "View"
		switch id {
		case RoleDeveloper:
			if !governance[res] || (view && !private[res]) {
				out = append(out, p)
			}
		case RoleViewer:
			if view && !private[res] {
				out = append(out, p)
			}
		}
	}
	return out
}

func systemRole(id int64, c *catalog) (Role, bool) {
	for _, r := range systemRoles {
		if r.ID == id {
			r.Permissions = systemPermissions(id, c)
			return r, true
		}
	}
	return Role{}, false
}

func systemRoleNamed(name string) bool {
	for _, r := range systemRoles {
		if strings.EqualFold(r.Name, name) {
			return true
		}
	}
	return false
}

func intKey(id int64) string { return fmt.Sprintf("%016d", id) }

// getRole reads a system or custom role.
func (s *Service) getRole(tx store.Tx, id int64) (Role, error) {
	if r, ok := systemRole(id, s.catalog.get()); ok {
		return r, nil
	}
	return store.GetJSON[Role](tx, nsRoles, intKey(id))
}

// listRoles returns the system roles then the custom ones, by id.
func (s *Service) listRoles(tx store.Tx) ([]Role, error) {
	c := s.catalog.get()
	out := make([]Role, 0, len(systemRoles))
	for _, r := range systemRoles {
		r.Permissions = systemPermissions(r.ID, c)
		out = append(out, r)
	}
	custom, err := store.ListJSON[Role](tx, nsRoles, store.ScanOptions{})
	if err != nil {
		return nil, err
	}
	return append(out, custom...), nil
}

// nextID allocates the next integer id of a sequence inside tx.
func nextID(tx store.Tx, seq string, first int64) (int64, error) {
	n := first
	raw, err := tx.Get(nsSeq, seq)
	switch {
	case err == nil:
		if _, perr := fmt.Sscan(string(raw), &n); perr != nil {
			return 0, fmt.Errorf("users: corrupt sequence %s: %w", seq, perr)
		}
		n++
	case !errors.Is(err, store.ErrNotFound):
		return 0, err
	}
	if err := tx.Put(nsSeq, seq, []byte(fmt.Sprint(n))); err != nil {
		return 0, err
	}
	return n, nil
}
