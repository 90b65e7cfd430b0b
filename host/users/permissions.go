package users

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/auth"
)

// catalog is the set of permissions the registered routes declare. It is
// derived from the route table rather than written down here, so a route
// added by any capability is grantable (and covered by the system roles'
// rules) without touching this package.
type catalog struct {
	rows  int
	perms []string            // canonical "Resource:Operation", sorted
	canon map[string]string   // lower-case permission -> canonical
	ops   map[string][]string // canonical resource -> its canonical permissions
	res   map[string]string   // lower-case resource -> canonical
}

// catalogCache rebuilds the catalog only when the table grew (routes are
// registered during provisioning; afterwards the table is fixed).
type catalogCache struct {
	table *auth.Table
	mu    sync.Mutex
	cur   *catalog
}

func (cc *catalogCache) get() *catalog {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.cur != nil && cc.cur.rows == cc.table.Len() {
		return cc.cur
	}
	rows := cc.table.Rows()
	c := &catalog{rows: len(rows), canon: map[string]string{}, ops: map[string][]string{}, res: map[string]string{}}
	for _, r := range rows {
		if r.Kind != "management" {
			continue
		}
		p := r.Permission
		if _, dup := c.canon[strings.ToLower(p)]; dup {
			continue
		}
		res, _, ok := strings.Cut(p, ":")
		if !ok {
			continue
		}
		c.canon[strings.ToLower(p)] = p
		c.res[strings.ToLower(res)] = res
		c.ops[res] = append(c.ops[res], p)
		c.perms = append(c.perms, p)
	}
	sort.Strings(c.perms)
	cc.cur = c
	return c
}

// normalize validates a grant list: "*", "Resource:*" for a known resource,
// or a known "Resource:Operation" (case-insensitive). It returns the list
// in canonical spelling, de-duplicated, or a 400 naming the first unknown
// entry as field[i].
func (c *catalog) normalize(field string, in []string) ([]string, *apierr.Error) {
	out := make([]string, 0, len(in))
	seen := map[string]bool{}
	for i, p := range in {
		p = strings.TrimSpace(p)
		var canon string
		switch res, op, ok := strings.Cut(p, ":"); {
		case p == "*":
			canon = "*"
		case ok && op == "*" && c.res[strings.ToLower(res)] != "":
			canon = c.res[strings.ToLower(res)] + ":*"
		default:
			canon = c.canon[strings.ToLower(p)]
		}
		if canon == "" {
			return nil, apierr.BadRequest("unknown_permission", fmt.Sprintf("%s[%d]", field, i),
				fmt.Sprintf(`unknown permission %q: use "*", "Resource:*" or a Resource:Operation from GET /api/permissions`, p))
		}
		if !seen[canon] {
			seen[canon] = true
			out = append(out, canon)
		}
	}
	return out, nil
}

// expand turns grants into the concrete permissions they cover.
func (c *catalog) expand(grants []string) []string {
	var out []string
	for _, p := range c.perms {
		if auth.Allows(grants, auth.Perm(splitPerm(p))) {
			out = append(out, p)
		}
	}
	return out
}

func splitPerm(p string) (string, string) {
	res, op, _ := strings.Cut(p, ":")
	return res, op
}

// notHeld returns the first permission covered by grants that the holder's
// scopes do not allow; "" when grants are within them. It stops a caller
// from handing out (or taking) more than it has.
func (c *catalog) notHeld(holder, grants []string) string {
	for _, p := range c.expand(grants) {
		if !auth.Allows(holder, auth.Perm(splitPerm(p))) {
			return p
		}
	}
	return ""
}
