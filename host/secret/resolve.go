package secret

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Resolver turns values into the secrets they stand for.
type Resolver struct {
	// LookupEnv reads environment variables (os.LookupEnv by default).
	LookupEnv func(string) (string, bool)
	// Vault resolves vault references; nil rejects them.
	Vault *VaultClient
}

// ErrUnresolved is wrapped by every resolution failure.
var ErrUnresolved = errors.New("secret reference could not be resolved")

// Resolve returns the secret v stands for.
func (r *Resolver) Resolve(ctx context.Context, v Value) (string, error) {
	switch v.Type {
	case PlainText, "":
		return v.Value, nil
	case Env:
		name := strings.TrimPrefix(v.Ref, "env.")
		lookup := r.LookupEnv
		if lookup == nil {
			lookup = os.LookupEnv
		}
		s, ok := lookup(name)
		if !ok {
			return "", fmt.Errorf("%w: environment variable %s is not set", ErrUnresolved, name)
		}
		return s, nil
	case Vault:
		if r.Vault == nil {
			return "", fmt.Errorf("%w: %s needs vault.address in the gateway config", ErrUnresolved, v.Ref)
		}
		return r.Vault.Read(ctx, strings.TrimPrefix(v.Ref, "vault."))
	}
	return "", fmt.Errorf("%w: unknown type %q", ErrUnresolved, v.Type)
}

// VaultClient reads secrets from a HashiCorp Vault KV v2 engine over its HTTP
// API, caching them for a short TTL so inference does not call Vault per request.
type VaultClient struct {
	Address   string
	Token     string
	Mount     string
	Namespace string
	TTL       time.Duration
	HTTP      *http.Client

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	data    map[string]any
	expires time.Time
}

// Read resolves "path/to/secret" or "path/to/secret#field". Without a field
// the secret's "value" key is used, or its only key when it has just one.
func (c *VaultClient) Read(ctx context.Context, ref string) (string, error) {
	path, field, _ := strings.Cut(ref, "#")
	data, err := c.readPath(ctx, path)
	if err != nil {
		return "", err
	}
	if field == "" {
		if _, ok := data["value"]; ok {
			field = "value"
		} else if len(data) == 1 {
			for k := range data {
				field = k
			}
		} else {
			keys := make([]string, 0, len(data))
			for k := range data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			return "", fmt.Errorf("%w: vault secret %s has keys %v; name one as vault.%s#<key>", ErrUnresolved, path, keys, path)
		}
	}
	v, ok := data[field]
	if !ok {
		return "", fmt.Errorf("%w: vault secret %s has no key %q", ErrUnresolved, path, field)
	}
	s, ok := v.(string)
	if !ok {
		b, _ := json.Marshal(v)
		s = string(b)
	}
	return s, nil
}

func (c *VaultClient) readPath(ctx context.Context, path string) (map[string]any, error) {
	c.mu.Lock()
	if e, ok := c.cache[path]; ok && time.Now().Before(e.expires) {
		c.mu.Unlock()
		return e.data, nil
	}
	c.mu.Unlock()

	mount := strings.Trim(c.Mount, "/")
	if mount == "" {
		mount = "secret"
	}
	u := strings.TrimRight(c.Address, "/") + "/v1/" + mount + "/data/" + escapePath(path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: vault request: %v", ErrUnresolved, err)
	}
	req.Header.Set("X-Vault-Token", c.Token)
	if c.Namespace != "" {
		req.Header.Set("X-Vault-Namespace", c.Namespace)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: vault %s: %v", ErrUnresolved, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: vault %s: read: %v", ErrUnresolved, path, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%w: vault secret %s not found", ErrUnresolved, path)
	case resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("%w: vault denied access to %s (check vault.token)", ErrUnresolved, path)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%w: vault %s answered %d", ErrUnresolved, path, resp.StatusCode)
	}
	var kv struct {
		Data struct {
			Data map[string]any `json:"data"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &kv); err != nil || kv.Data.Data == nil {
		return nil, fmt.Errorf("%w: vault %s: not a KV v2 secret", ErrUnresolved, path)
	}
	ttl := c.TTL
	if ttl <= 0 {
		ttl = 5 * time.Minute
	}
	c.mu.Lock()
	if c.cache == nil {
		c.cache = map[string]cached{}
	}
	c.cache[path] = cached{data: kv.Data.Data, expires: time.Now().Add(ttl)}
	c.mu.Unlock()
	return kv.Data.Data, nil
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}
