package auth

import (
	"sort"
	"sync"

	"github.com/gofiber/fiber/v2"
)

// RouteInfo is one row of the management route table.
type RouteInfo struct {
	Method     string `json:"method"`
	Path       string `json:"path"`
	Permission string `json:"permission"`
	// Kind tells which credentials the route takes: "management",
	// "public", or "virtual_key" for the few routes callers use with
	// inference credentials.
	Kind string `json:"kind"`
}

// Table records every route registered through a Router so permissions are
// documented, testable and enforced from one place.
type Table struct {
	mu   sync.Mutex
	rows []RouteInfo
}

// Rows returns the table sorted by path and method.
func (t *Table) Rows() []RouteInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]RouteInfo(nil), t.rows...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Method < out[j].Method
	})
	return out
}

// Len returns the number of registered routes; cheap enough to ask on
// every request (callers cache what they derive from Rows by it).
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.rows)
}

func (t *Table) add(r RouteInfo) {
	t.mu.Lock()
	t.rows = append(t.rows, r)
	t.mu.Unlock()
}

// Router registers management routes. Each registration names its
// permission; the router wraps the handler with authentication and the
// permission check, so a route cannot be added without deciding who may call it.
type Router struct {
	app    fiber.Router
	prefix string
	svc    *Service
	table  *Table
	audit  func(resource string) fiber.Handler
}

// WithAudit makes every mutating route (POST, PUT, PATCH, DELETE) record an
// audit entry through mw, wrapped around its handler after the permission
// check. It returns r for chaining.
func (r *Router) WithAudit(mw func(resource string) fiber.Handler) *Router {
	r.audit = mw
	return r
}

// NewRouter returns a Router registering on app under prefix (usually "/api").
func NewRouter(app fiber.Router, prefix string, svc *Service, table *Table) *Router {
	return &Router{app: app, prefix: prefix, svc: svc, table: table}
}

// Handle registers h for method and path (relative to the prefix) behind perm.
func (r *Router) Handle(method, path string, perm Permission, h ...fiber.Handler) {
	full := r.prefix + path
	kind := "management"
	var chain []fiber.Handler
	resource := perm.Resource
	if perm.IsPublic() {
		kind = "public"
		resource = "Session"
	} else {
		chain = append(chain, r.svc.Require(perm))
	}
	if r.audit != nil && method != fiber.MethodGet && method != fiber.MethodHead {
		chain = append(chain, r.audit(resource))
	}
	r.table.add(RouteInfo{Method: method, Path: full, Permission: perm.String(), Kind: kind})
	r.app.Add(method, full, append(chain, h...)...)
}

// HandleCustom registers a route whose handler does its own authentication
// (virtual-key-only routes such as the quota endpoint); kind documents it.
func (r *Router) HandleCustom(method, path, kind string, h ...fiber.Handler) {
	full := r.prefix + path
	r.table.add(RouteInfo{Method: method, Path: full, Permission: kind, Kind: kind})
	r.app.Add(method, full, h...)
}

// Get registers a GET route.
func (r *Router) Get(path string, perm Permission, h ...fiber.Handler) {
	r.Handle(fiber.MethodGet, path, perm, h...)
}

// Post registers a POST route.
func (r *Router) Post(path string, perm Permission, h ...fiber.Handler) {
	r.Handle(fiber.MethodPost, path, perm, h...)
}

// Put registers a PUT route.
func (r *Router) Put(path string, perm Permission, h ...fiber.Handler) {
	r.Handle(fiber.MethodPut, path, perm, h...)
}

// Patch registers a PATCH route.
func (r *Router) Patch(path string, perm Permission, h ...fiber.Handler) {
	r.Handle(fiber.MethodPatch, path, perm, h...)
}

// Delete registers a DELETE route.
func (r *Router) Delete(path string, perm Permission, h ...fiber.Handler) {
	r.Handle(fiber.MethodDelete, path, perm, h...)
}
