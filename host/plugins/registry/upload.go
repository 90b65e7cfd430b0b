package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/plugins"
)

// wasmMagic starts every WebAssembly binary module.
var wasmMagic = []byte("\x00asm")

// handleUpload answers POST /api/plugins/upload. The module comes either as
// a multipart form (part "file", settings in a JSON part "spec" or as
// individual fields) or as a raw application/wasm body with the settings in
// the query string (?name=...). The gateway computes the sha256, pins the
// plugin to it, and keeps the bytes as data_dir/plugins/<name>-<sha256>.wasm
// (0600). Only wasm may be uploaded: accepting executables for the process
// runtime over HTTP would let an API caller run arbitrary native code.
// The size cap (server.plugin_upload_max_bytes, 413) is applied by the
// server before the body reaches this handler.
func (s *Service) handleUpload(c *fiber.Ctx) error {
	var (
		bin   []byte
		field func(string) string
		spec  string
	)
	ct := strings.ToLower(c.Get(fiber.HeaderContentType))
	switch {
	case strings.HasPrefix(ct, fiber.MIMEMultipartForm):
		form, err := c.MultipartForm()
		if err != nil {
			return apierr.BadRequest("invalid_multipart", "", "malformed multipart body: "+err.Error())
		}
		files := form.File["file"]
		if len(files) != 1 {
			return apierr.BadRequest("missing_field", "file", `the multipart body needs exactly one part named "file" holding the .wasm module`)
		}
		f, err := files[0].Open()
		if err != nil {
			return apierr.BadRequest("invalid_multipart", "file", "cannot read the uploaded file: "+err.Error())
		}
		bin, err = io.ReadAll(f)
		_ = f.Close()
		if err != nil {
			return apierr.BadRequest("invalid_multipart", "file", "cannot read the uploaded file: "+err.Error())
		}
		field = func(k string) string {
			if v := form.Value[k]; len(v) > 0 {
				return v[0]
			}
			return ""
		}
		spec = field("spec")
	case strings.HasPrefix(ct, "application/wasm"), strings.HasPrefix(ct, fiber.MIMEOctetStream):
		bin = c.Body()
		field = func(k string) string { return c.Query(k) }
	default:
		return apierr.New(fiber.StatusUnsupportedMediaType, apierr.TypeInvalidRequest, "unsupported_media_type",
			"upload a module as multipart/form-data (part \"file\") or as an application/wasm body with ?name=...")
	}
	if !bytes.HasPrefix(bin, wasmMagic) {
		return apierr.BadRequest("not_wasm", "file", "the uploaded file is not a WebAssembly module (missing \\0asm header)")
	}
	in, e := uploadInput(field, spec)
	if e != nil {
		return e
	}
	if in.Runtime != "" && in.Runtime != plugins.RuntimeWasm {
		return apierr.BadRequest("invalid_value", "runtime", "only wasm modules may be uploaded; install a process plugin by path")
	}
	if in.Source != "" || in.Path != "" {
		return apierr.BadRequest("invalid_value", "source", "source comes from the uploaded file; omit source and path")
	}
	sum := sha256.Sum256(bin)
	got := hex.EncodeToString(sum[:])
	if pin := strings.ToLower(strings.TrimSpace(in.SHA256)); pin != "" && pin != got {
		return apierr.BadRequest("sha256_mismatch", "sha256", fmt.Sprintf("sha256 mismatch: pinned %s, uploaded file is %s", pin, got))
	}
	in.Runtime, in.SHA256 = plugins.RuntimeWasm, got
	// Validate the name before it becomes part of a file name.
	in.Source = "upload.wasm"
	r, e := s.normalize(in)
	if e != nil {
		return e
	}
	path := filepath.Join(s.uploadDir, r.Name+"-"+got+".wasm")
	if filepath.Dir(path) != s.uploadDir {
		return apierr.BadRequest("invalid_value", "name", "name must not contain path separators")
	}
	if _, err := s.record(c.UserContext(), r.Name); err == nil {
		// Checked again under the lock by install; this spares the write.
		return apierr.Conflict("duplicate_name", fmt.Sprintf("a plugin named %q already exists", r.Name)).WithParam("name")
	}
	if err := writePrivate(path, bin); err != nil {
		return apierr.Internal(err)
	}
	r.Source, r.Uploaded = path, true
	if e := s.install(c.UserContext(), r); e != nil {
		_ = os.Remove(path)
		return e
	}
	return s.answer(c, fiber.StatusCreated, r.Name)
}

// uploadInput reads the settings of an upload: a JSON "spec" when given
// (strict, like POST /api/plugins), else individual fields.
func uploadInput(field func(string) string, spec string) (Input, *apierr.Error) {
	var in Input
	if strings.TrimSpace(spec) != "" {
		if e := apierr.DecodeJSON([]byte(spec), &in); e != nil {
			return in, e
		}
	}
	if v := field("name"); v != "" {
		in.Name = v
	}
	if v := field("runtime"); v != "" {
		in.Runtime = plugins.Runtime(v)
	}
	if v := field("sha256"); v != "" {
		in.SHA256 = v
	}
	if v := field("source"); v != "" {
		in.Source = v
	}
	if v := field("path"); v != "" {
		in.Path = v
	}
	for _, b := range []struct {
		key string
		dst *bool
	}{{"trusted", &in.Trusted}, {"fail_open", &in.FailOpen}} {
		if v := field(b.key); v != "" {
			x, err := strconv.ParseBool(v)
			if err != nil {
				return in, apierr.BadRequest("invalid_type", b.key, fmt.Sprintf("%s must be true or false", b.key))
			}
			*b.dst = x
		}
	}
	if v := field("enabled"); v != "" {
		x, err := strconv.ParseBool(v)
		if err != nil {
			return in, apierr.BadRequest("invalid_type", "enabled", "enabled must be true or false")
		}
		in.Enabled = &x
	}
	if v := field("order"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return in, apierr.BadRequest("invalid_type", "order", "order must be an integer")
		}
		in.Order = n
	}
	if v := field("config"); v != "" {
		if !json.Valid([]byte(v)) {
			return in, apierr.BadRequest("invalid_json", "config", "config must be JSON")
		}
		in.Config = json.RawMessage(v)
	}
	if v := field("limits"); v != "" {
		var l plugins.Limits
		if e := apierr.DecodeJSON([]byte(v), &l); e != nil {
			if e.Detail.Param != "" {
				e.Detail.Param = "limits." + e.Detail.Param
			} else {
				e.Detail.Param = "limits"
			}
			return in, e
		}
		in.Limits = l
	}
	return in, nil
}

// writePrivate stores b at path with mode 0600 (directory 0700), through a
// temporary file and a rename so a crash never leaves a truncated module
// that a later start would try to load.
func writePrivate(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("plugins: create upload dir: %w", err)
	}
	f, err := os.CreateTemp(dir, ".upload-*")
	if err != nil {
		return fmt.Errorf("plugins: store upload: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, 0o600)
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("plugins: store upload: %w", werr)
	}
	return nil
}
