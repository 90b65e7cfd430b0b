package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/plugins"
)

// FirstPartyPrefix marks a source naming a first-party module in the
// plugins directory ("first-party:pii" loads <plugins_dir>/pii.wasm). A bare
// name without a path separator or extension means the same.
const FirstPartyPrefix = "first-party:"

// AdapterPrefix starts the name of every provider adapter plugin: the
// adapter of wire family f is the plugin named AdapterPrefix+f, auto-loaded
// from <plugins_dir>/adapter-<f>.wasm.
const AdapterPrefix = "adapter-"

// namePattern keeps names usable in URLs, log lines and the upload file
// name <name>-<sha256>.wasm (no separators, so no path traversal).
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

var sha256Pattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Record is one installed plugin as stored: the writable settings plus
// bookkeeping. Source is kept as given (a first-party name stays a name), so
// moving plugins_dir does not break stored plugins.
type Record struct {
	Name     string          `json:"name"`
	Runtime  plugins.Runtime `json:"runtime"`
	Source   string          `json:"source"`
	SHA256   string          `json:"sha256,omitempty"`
	Trusted  bool            `json:"trusted"`
	Order    int             `json:"order"`
	Enabled  bool            `json:"enabled"`
	Config   json.RawMessage `json:"config,omitempty"`
	Limits   plugins.Limits  `json:"limits"`
	FailOpen bool            `json:"fail_open"`
	// Uploaded marks a module the gateway stored itself under
	// data_dir/plugins; deleting the plugin deletes the file.
	Uploaded bool `json:"uploaded,omitempty"`
	// ConfigHash is the sha256 of the config-file entry the record came
	// from (empty for plugins created through the API).
	ConfigHash string    `json:"config_hash,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// Input is the body of POST /api/plugins and PUT /api/plugins/:name, and
// one entry of the config file's `plugins` array.
type Input struct {
	Name    string          `json:"name"`
	Runtime plugins.Runtime `json:"runtime"`
	Source  string          `json:"source"`
	// Path is an alias of Source for callers installing by file path.
	Path    string          `json:"path"`
	SHA256  string          `json:"sha256"`
	Trusted bool            `json:"trusted"`
	Order   int             `json:"order"`
	Enabled *bool           `json:"enabled"`
	Config  json.RawMessage `json:"config"`
	Limits  plugins.Limits  `json:"limits"`
	// FailOpen skips the plugin on a runtime failure instead of failing
	// the request.
	FailOpen bool `json:"fail_open"`
}

// normalize validates in and turns it into a record (bookkeeping unset).
// Errors name the offending field in Param; callers add their own prefix
// (plugins[i]. for the config file).
func (s *Service) normalize(in Input) (Record, *apierr.Error) {
	r := Record{
		Name: strings.TrimSpace(in.Name), Runtime: in.Runtime, SHA256: strings.ToLower(strings.TrimSpace(in.SHA256)),
		Trusted: in.Trusted, Order: in.Order, Enabled: in.Enabled == nil || *in.Enabled,
		Limits: in.Limits, FailOpen: in.FailOpen,
	}
	switch {
	case r.Name == "":
		return r, apierr.BadRequest("missing_field", "name", "name is required")
	case !namePattern.MatchString(r.Name):
		return r, apierr.BadRequest("invalid_value", "name",
			"name must be 1-64 characters of letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if r.Runtime == "" {
		r.Runtime = plugins.RuntimeWasm
	}
	if r.Runtime != plugins.RuntimeWasm && r.Runtime != plugins.RuntimeProcess {
		return r, apierr.BadRequest("unknown_runtime", "runtime",
			fmt.Sprintf("unknown runtime %q: must be %q or %q", r.Runtime, plugins.RuntimeWasm, plugins.RuntimeProcess))
	}
	src, path := strings.TrimSpace(in.Source), strings.TrimSpace(in.Path)
	if src != "" && path != "" && src != path {
		return r, apierr.BadRequest("invalid_value", "path", "give source or path, not both")
	}
	if src == "" {
		src = path
	}
	if src == "" {
		return r, apierr.BadRequest("missing_source", "source",
			`source is required: a file path, or a first-party module name such as "pii" or "first-party:pii"`)
	}
	r.Source = src
	if _, e := s.resolve(r.Runtime, src); e != nil {
		return r, e
	}
	if r.SHA256 != "" && !sha256Pattern.MatchString(r.SHA256) {
		return r, apierr.BadRequest("invalid_value", "sha256", "sha256 must be 64 hexadecimal characters")
	}
	if r.Trusted && r.SHA256 == "" {
		return r, apierr.BadRequest("sha256_required", "trusted",
			"trusted requires sha256: only a module pinned by its hash may run without termination checks")
	}
	for field, v := range map[string]int{"memory_mb": r.Limits.MemoryMB, "timeout_ms": r.Limits.TimeoutMS,
		"max_input_bytes": r.Limits.MaxInputBytes, "pool_size": r.Limits.PoolSize} {
		if v < 0 {
			return r, apierr.BadRequest("invalid_value", "limits."+field, "limits."+field+" must not be negative")
		}
	}
	r.Config = normalizeConfig(in.Config)
	return r, nil
}

// normalizeConfig stores "no config" one way (nil), whether it was omitted
// or sent as null.
func normalizeConfig(raw json.RawMessage) json.RawMessage {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" {
		return nil
	}
	return json.RawMessage(t)
}

// resolve maps a source to the file to load. First-party names resolve in
// the plugins directory; absolute paths are taken as they are (the caller
// holds Plugins:Create, an operator right); relative paths resolve against
// the plugins directory and may not climb out of it.
func (s *Service) resolve(rt plugins.Runtime, source string) (string, *apierr.Error) {
	ext := ""
	if rt == plugins.RuntimeWasm {
		ext = ".wasm"
	}
	name, firstParty := strings.CutPrefix(source, FirstPartyPrefix)
	if !firstParty && !strings.ContainsAny(source, `/\`) && filepath.Ext(source) == "" {
		firstParty = true
	}
	if firstParty {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
			return "", apierr.BadRequest("invalid_value", "source",
				fmt.Sprintf("first-party module name %q must be a bare name such as %q", name, "pii"))
		}
		return filepath.Join(s.pluginsDir, name+ext), nil
	}
	if filepath.IsAbs(source) {
		return filepath.Clean(source), nil
	}
	p := filepath.Join(s.pluginsDir, source)
	if rel, err := filepath.Rel(s.pluginsDir, p); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", apierr.BadRequest("path_outside_plugins_dir", "source",
			fmt.Sprintf("relative source %q leaves the plugins directory; use an absolute path or a path inside plugins_dir", source))
	}
	return p, nil
}

// checkFile verifies, before anything is loaded, that the source exists and
// matches its pin, so the caller gets a precise 400 rather than a load error.
func checkFile(path, pin string) *apierr.Error {
	f, err := os.Open(path)
	if err != nil {
		return apierr.BadRequest("source_not_found", "source", fmt.Sprintf("source file %s cannot be opened: %v", path, unwrapPathError(err)))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return apierr.BadRequest("source_not_found", "source", fmt.Sprintf("source %s is not a regular file", path))
	}
	if pin == "" {
		return nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return apierr.BadRequest("source_not_found", "source", fmt.Sprintf("reading source %s: %v", path, err))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != pin {
		return apierr.BadRequest("sha256_mismatch", "sha256", fmt.Sprintf("sha256 mismatch: pinned %s, file %s is %s", pin, path, got))
	}
	return nil
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// spec is the Manager spec of a record, with the source resolved to a file.
func (s *Service) spec(r Record) plugins.Spec {
	src := r.Source
	if p, e := s.resolve(r.Runtime, r.Source); e == nil {
		src = p
	}
	return plugins.Spec{Name: r.Name, Runtime: r.Runtime, Source: src, SHA256: r.SHA256, Trusted: r.Trusted,
		Order: r.Order, Enabled: r.Enabled, Config: r.Config, Limits: r.Limits, FailOpen: r.FailOpen}
}

// mergePatch applies an RFC 7396 JSON merge patch to a config: object keys
// are merged recursively, null deletes a key, anything else replaces.
func mergePatch(base, patch json.RawMessage) (json.RawMessage, error) {
	var p any
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	var b any
	if len(base) > 0 {
		if err := json.Unmarshal(base, &b); err != nil {
			return nil, err
		}
	}
	out, err := json.Marshal(mergeValue(b, p))
	if err != nil {
		return nil, err
	}
	return normalizeConfig(out), nil
}

func mergeValue(base, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	bm, ok := base.(map[string]any)
	if !ok {
		bm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(bm, k)
			continue
		}
		bm[k] = mergeValue(bm[k], v)
	}
	return bm
}
