package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/auth"
	"github.com/wasmgate/gateway/host/listing"
	"github.com/wasmgate/gateway/host/plugins"
	"github.com/wasmgate/gateway/store"
)

// Routes registers /api/plugins, each route with its permission.
func (s *Service) Routes(r *auth.Router) {
	r.Get("/plugins", auth.Perm("Plugins", "View"), s.handleList)
	r.Post("/plugins", auth.Perm("Plugins", "Create"), s.handleInstall)
	r.Post("/plugins/upload", auth.Perm("Plugins", "Create"), s.handleUpload)
	r.Get("/plugins/:name", auth.Perm("Plugins", "View"), s.handleGet)
	r.Put("/plugins/:name", auth.Perm("Plugins", "Update"), s.handleUpdate)
	r.Delete("/plugins/:name", auth.Perm("Plugins", "Delete"), s.handleDelete)
	r.Put("/plugins/:name/config", auth.Perm("Plugins", "Update"), s.handleConfig)
	r.Post("/plugins/:name/enable", auth.Perm("Plugins", "Update"), s.handleEnable(true))
	r.Post("/plugins/:name/disable", auth.Perm("Plugins", "Update"), s.handleEnable(false))
	r.Post("/plugins/:name/reload", auth.Perm("Plugins", "Update"), s.handleReload)
}

// View is a plugin as /api/plugins shows it: its settings, what the module
// declared (kind, version, hooks), its load status and call statistics.
type View struct {
	Name    string          `json:"name"`
	Runtime plugins.Runtime `json:"runtime"`
	Source  string          `json:"source"`
	// Path is the file Source resolved to.
	Path     string          `json:"path"`
	SHA256   string          `json:"sha256,omitempty"`
	Trusted  bool            `json:"trusted"`
	Order    int             `json:"order"`
	Enabled  bool            `json:"enabled"`
	Config   json.RawMessage `json:"config,omitempty"`
	Limits   plugins.Limits  `json:"limits"`
	FailOpen bool            `json:"fail_open"`
	// Internal marks a provider adapter auto-loaded from plugins_dir
	// (not stored; changing it stores it as an override).
	Internal bool     `json:"internal"`
	Uploaded bool     `json:"uploaded"`
	Kind     string   `json:"kind,omitempty"`
	Version  string   `json:"version,omitempty"`
	Hooks    []string `json:"hooks"`
	// Status is loaded, disabled or error; Error says why.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// Instances a loaded wasm plugin holds now: 0 while its runtime is
	// unloaded for idleness (plugin_idle_unload), up to pool_size.
	Instances *int `json:"instances,omitempty"`
	plugins.StatsSnapshot
	LoadedAt   time.Time `json:"loaded_at,omitzero"`
	ConfigHash string    `json:"config_hash,omitempty"`
	CreatedAt  time.Time `json:"created_at,omitzero"`
	UpdatedAt  time.Time `json:"updated_at,omitzero"`
}

func (s *Service) view(r Record, internal bool) View {
	v := View{
		Name: r.Name, Runtime: r.Runtime, Source: r.Source, SHA256: r.SHA256, Trusted: r.Trusted,
		Order: r.Order, Enabled: r.Enabled, Config: maskConfig(r.Config, s.schemaOf(r.Name)), Limits: r.Limits, FailOpen: r.FailOpen,
		Internal: internal, Uploaded: r.Uploaded, Hooks: []string{}, ConfigHash: r.ConfigHash,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Status: plugins.StateError,
		Error: "plugin is not loaded",
	}
	v.Path = s.spec(r).Source
	if internal {
		// A bundled adapter not loaded yet loads on first use.
		v.Status, v.Error = "available", ""
	}
	if st, ok := s.mgr.Get(r.Name); ok {
		v.Kind, v.Version, v.Status, v.Error = st.Kind, st.Version, st.State, st.Error
		v.Trusted = st.Trusted
		if st.Hooks != nil {
			v.Hooks = st.Hooks
		}
		v.StatsSnapshot, v.LoadedAt, v.Instances = st.StatsSnapshot, st.LoadedAt, st.Instances
	}
	return v
}

// Views lists every plugin in call order (order, then name).
func (s *Service) Views(ctx context.Context) ([]View, error) {
	var recs []Record
	if err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		recs, err = store.ListJSON[Record](tx, nsPlugins, store.ScanOptions{})
		return err
	}); err != nil {
		return nil, fmt.Errorf("plugins: list: %w", err)
	}
	byName := make(map[string]Record, len(recs))
	for _, r := range recs {
		byName[r.Name] = r
	}
	internal := *s.internal.Load()
	out := make([]View, 0, len(recs)+len(internal))
	seen := map[string]bool{}
	for _, st := range s.mgr.List() {
		if r, ok := byName[st.Name]; ok {
			out = append(out, s.view(r, false))
		} else if p, ok := internal[st.Name]; ok {
			out = append(out, s.view(internalRecord(st.Name, p), true))
		} else {
			continue
		}
		seen[st.Name] = true
	}
	// A stored plugin the Manager does not know (never expected) still shows.
	for _, r := range recs {
		if !seen[r.Name] {
			out = append(out, s.view(r, false))
		}
	}
	// Bundled adapters not loaded yet load on first use.
	for name, p := range internal {
		if !seen[name] {
			out = append(out, s.view(internalRecord(name, p), true))
		}
	}
	return out, nil
}

// handleList answers GET /api/plugins; kind, runtime and status filter.
func (s *Service) handleList(c *fiber.Ctx) error {
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	all, err := s.Views(c.UserContext())
	if err != nil {
		return apierr.Internal(err)
	}
	kind, rt, status := c.Query("kind"), c.Query("runtime"), c.Query("status")
	filtered := all[:0:0]
	for _, v := range all {
		if (kind == "" || v.Kind == kind) && (rt == "" || string(v.Runtime) == rt) && (status == "" || v.Status == status) {
			filtered = append(filtered, v)
		}
	}
	out := []View{}
	if offset < len(filtered) {
		out = filtered[offset:min(len(filtered), offset+limit)]
	}
	return c.JSON(fiber.Map{"plugins": out, "count": len(out), "total_count": len(filtered), "limit": limit, "offset": offset})
}

func (s *Service) handleGet(c *fiber.Ctx) error {
	r, internal, e := s.lookup(c.UserContext(), c.Params("name"))
	if e != nil {
		return e
	}
	return c.JSON(s.view(r, internal))
}

// processPerm is the extra permission needed to install a process plugin
// or point one at another binary: it runs native code on the gateway host
// with the gateway's rights, a governance-level power that Plugins:Create
// alone (held by the developer role) must not grant. Stdio MCP clients
// need the same.
var processPerm = auth.Perm("Settings", "Update")

func requireProcessPerm(c *fiber.Ctx) *apierr.Error {
	if p := auth.FromCtx(c); p != nil && (p.Bypass || auth.Allows(p.Scopes, processPerm)) {
		return nil
	}
	return apierr.Forbidden("missing_permission",
		"process plugins run a native binary on the gateway host: this credential lacks permission "+processPerm.String())
}

// handleInstall answers POST /api/plugins: install by path or first-party name.
func (s *Service) handleInstall(c *fiber.Ctx) error {
	var in Input
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	r, e := s.normalize(in)
	if e != nil {
		return e
	}
	if r.Runtime == plugins.RuntimeProcess {
		if e := requireProcessPerm(c); e != nil {
			return e
		}
	}
	path, _ := s.resolve(r.Runtime, r.Source)
	if e := checkFile(path, r.SHA256); e != nil {
		return e
	}
	if e := s.install(c.UserContext(), r); e != nil {
		return e
	}
	return s.answer(c, fiber.StatusCreated, r.Name)
}

// answer re-reads the plugin so the response shows the stored settings and
// the fresh status.
func (s *Service) answer(c *fiber.Ctx, status int, name string) error {
	r, internal, e := s.lookup(c.UserContext(), name)
	if e != nil {
		return e
	}
	return c.Status(status).JSON(s.view(r, internal))
}

// handleUpdate answers PUT /api/plugins/:name: a full update of the
// writable fields (omitted ones take their defaults); name is immutable.
func (s *Service) handleUpdate(c *fiber.Ctx) error {
	name := c.Params("name")
	var in Input
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	if in.Name != "" && in.Name != name {
		return apierr.BadRequest("immutable_field", "name", fmt.Sprintf("name is immutable: the plugin is %q", name))
	}
	in.Name = name
	cur, _, e := s.lookup(c.UserContext(), name)
	if e != nil {
		return e
	}
	if in.Runtime == "" {
		in.Runtime = cur.Runtime
	}
	if in.Source == "" && in.Path == "" {
		// Omitting the source keeps the current module (and its pin unless
		// a new one is sent): an uploaded module's path is the gateway's
		// business, not something a caller should have to echo back.
		in.Source = cur.Source
		if in.SHA256 == "" {
			in.SHA256 = cur.SHA256
		}
	}
	next, e := s.normalize(in)
	if e != nil {
		return e
	}
	if next.Runtime == plugins.RuntimeProcess && (cur.Runtime != plugins.RuntimeProcess || next.Source != cur.Source) {
		if e := requireProcessPerm(c); e != nil {
			return e
		}
	}
	_, e = s.change(c.UserContext(), name, func(r *Record) *apierr.Error {
		if next.Source != r.Source || next.SHA256 != r.SHA256 || next.Runtime != r.Runtime {
			path, _ := s.resolve(next.Runtime, next.Source)
			if e := checkFile(path, next.SHA256); e != nil {
				return e
			}
		}
		if r.Uploaded && next.Source != r.Source {
			r.Uploaded = false
		}
		next.Uploaded, next.ConfigHash, next.CreatedAt = r.Uploaded, r.ConfigHash, r.CreatedAt
		cfg, err := keepMasked(next.Config, r.Config, s.schemaOf(name))
		if err != nil {
			return apierr.BadRequest("invalid_value", "config", "config is not valid JSON: "+err.Error())
		}
		next.Config = cfg
		*r = next
		return nil
	})
	if e != nil {
		return e
	}
	return s.answer(c, fiber.StatusOK, name)
}

// handleConfig answers PUT /api/plugins/:name/config: the body is a JSON
// merge patch (RFC 7396) of the plugin's config, so a caller changes one
// setting without resending the rest; null deletes a key, a non-object
// replaces the whole config.
func (s *Service) handleConfig(c *fiber.Ctx) error {
	body := bytes.TrimSpace(c.Body())
	if len(body) == 0 {
		return apierr.BadRequest("empty_body", "", "request body is empty; send the config changes as JSON")
	}
	if !json.Valid(body) {
		return apierr.BadRequest("invalid_json", "", "request body is not valid JSON")
	}
	_, e := s.change(c.UserContext(), c.Params("name"), func(r *Record) *apierr.Error {
		cfg, err := mergePatch(r.Config, body)
		if err != nil {
			return apierr.BadRequest("invalid_value", "config", "stored config cannot be patched: "+err.Error())
		}
		if cfg, err = keepMasked(cfg, r.Config, s.schemaOf(r.Name)); err != nil {
			return apierr.Internal(err)
		}
		r.Config = cfg
		return nil
	})
	if e != nil {
		return e
	}
	return s.answer(c, fiber.StatusOK, c.Params("name"))
}

func (s *Service) handleEnable(on bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		_, e := s.change(c.UserContext(), c.Params("name"), func(r *Record) *apierr.Error {
			r.Enabled = on
			return nil
		})
		if e != nil {
			return e
		}
		return s.answer(c, fiber.StatusOK, c.Params("name"))
	}
}

// handleReload answers POST /api/plugins/:name/reload: a new generation
// from the same settings (picks up a rebuilt module file).
func (s *Service) handleReload(c *fiber.Ctx) error {
	if e := s.reload(c.UserContext(), c.Params("name")); e != nil {
		return e
	}
	return s.answer(c, fiber.StatusOK, c.Params("name"))
}

func (s *Service) handleDelete(c *fiber.Ctx) error {
	name := c.Params("name")
	if e := s.remove(c.UserContext(), name); e != nil {
		return e
	}
	return c.JSON(fiber.Map{"status": "success", "message": fmt.Sprintf("plugin %s deleted", name)})
}
