package providers

import (
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/netguard"
	"github.com/wasmgate/gateway/host/secret"
)

// Key is one credential of a provider, as stored and (redacted) returned.
type Key struct {
	// ID is server-generated (UUIDv7, so keys list in creation order).
	ID   string `json:"id"`
	Name string `json:"name"`
	// Value is the API key; for env and vault references only the reference is kept.
	Value             secret.Value      `json:"value"`
	Models            []string          `json:"models"`
	BlacklistedModels []string          `json:"blacklisted_models"`
	Weight            float64           `json:"weight"`
	Aliases           map[string]string `json:"aliases"`
	Enabled           bool              `json:"enabled"`
	UseForBatchAPI    bool              `json:"use_for_batch_api"`
	// ConfigHash is the hash of the config file entry the key was last
	// written from; API edits keep it so they survive restarts.
	ConfigHash  string `json:"config_hash"`
	Status      string `json:"status"`
	Description string `json:"description"`
	KeyConfigs
	// Provider is the owning provider id (read-only; lets /api/keys callers
	// tell keys of different providers apart).
	Provider  string    `json:"provider"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// keyInput is the create/update body: a Key whose weight and enabled can
// be told absent (defaults 1 and true) from zero.
type keyInput struct {
	Key
	Weight  *float64 `json:"weight"`
	Enabled *bool    `json:"enabled"`
}

// toKey applies defaults for absent fields.
func (in *keyInput) toKey() Key {
	k := in.Key
	k.Weight = 1
	if in.Weight != nil {
		k.Weight = *in.Weight
	}
	k.Enabled = true
	if in.Enabled != nil {
		k.Enabled = *in.Enabled
	}
	return k
}

// Redacted returns a copy safe to show: sensitive secrets are masked and
// references shown as references.
func (k Key) Redacted() Key {
	k = k.clone()
	for _, f := range k.secretFields() {
		if f.sensitive {
			*f.v = f.v.Redacted()
		}
	}
	return k.normalized()
}

// normalized turns nil collections into empty ones so responses always
// carry arrays and objects, never null.
func (k Key) normalized() Key {
	if k.Models == nil {
		k.Models = []string{}
	}
	if k.BlacklistedModels == nil {
		k.BlacklistedModels = []string{}
	}
	if k.Aliases == nil {
		k.Aliases = map[string]string{}
	}
	return k
}

// clone deep-copies the parts of k that responses and resolution rewrite,
// so snapshot data shared with readers is never mutated.
func (k Key) clone() Key {
	if c := k.Azure; c != nil {
		cp := *c
		k.Azure = &cp
	}
	if c := k.Vertex; c != nil {
		cp := *c
		k.Vertex = &cp
	}
	if c := k.Bedrock; c != nil {
		cp := *c
		k.Bedrock = &cp
	}
	if c := k.VLLM; c != nil {
		cp := *c
		k.VLLM = &cp
	}
	if c := k.Ollama; c != nil {
		cp := *c
		k.Ollama = &cp
	}
	if c := k.SGL; c != nil {
		cp := *c
		k.SGL = &cp
	}
	if c := k.Replicate; c != nil {
		cp := *c
		k.Replicate = &cp
	}
	return k
}

// keepMaskedSecrets puts the stored secret back wherever the client sent
// the masked form (or nothing) for a sensitive field, so a GET-then-PUT
// round trip never overwrites a secret with its mask.
func keepMaskedSecrets(k *Key, old Key) {
	prev := map[string]secret.Value{}
	for _, f := range old.secretFields() {
		prev[f.path] = *f.v
	}
	for _, f := range k.secretFields() {
		if f.sensitive {
			*f.v = secret.KeepIfMasked(*f.v, prev[f.path])
		}
	}
}

// validateKey checks k for provider info with provider p; the returned
// error names the field relative to the key body.
func validateKey(info Info, p *Provider, k *Key) *apierr.Error {
	k.Name = strings.TrimSpace(k.Name)
	switch {
	case k.Name == "":
		return apierr.BadRequest("invalid_value", "name", "name is required")
	case len(k.Name) > 255:
		return apierr.BadRequest("invalid_value", "name", "name must be at most 255 characters")
	}
	for _, name := range k.present() {
		if name != info.KeyConfig {
			want := "this provider takes no key config"
			if info.KeyConfig != "" {
				want = "this provider takes " + info.KeyConfig
			}
			return apierr.BadRequest("invalid_value", name,
				fmt.Sprintf("%s is not valid for a key of provider %s; %s", name, info.ID, want))
		}
	}
	if math.IsNaN(k.Weight) || math.IsInf(k.Weight, 0) || k.Weight < 0 {
		return apierr.BadRequest("invalid_value", "weight", "weight must be a number >= 0")
	}
	for field, list := range map[string][]string{"models": k.Models, "blacklisted_models": k.BlacklistedModels} {
		for i, m := range list {
			if strings.TrimSpace(m) == "" {
				return apierr.BadRequest("invalid_value", fmt.Sprintf("%s[%d]", field, i), field+" entries must be non-empty strings")
			}
		}
	}
	for from, to := range k.Aliases {
		if from == "" {
			return apierr.BadRequest("invalid_value", "aliases", "alias names must be strings of length >= 1")
		}
		if to == "" {
			return apierr.BadRequest("invalid_value", "aliases."+from, "alias targets must be strings of length >= 1")
		}
	}
	if e := validateKeyConfig(info, k); e != nil {
		return e
	}
	if k.Value.IsZero() && !valueOptional(info, k) {
		return apierr.BadRequest("invalid_value", "value", fmt.Sprintf("value is required for a key of provider %s", info.ID))
	}
	if info.SelfHosted && k.selfHostedURL().IsZero() && (p == nil || p.NetworkConfig.BaseURL == "") {
		field := "network_config.base_url"
		if info.KeyConfig != "" {
			field = info.KeyConfig + ".url"
		}
		return apierr.BadRequest("invalid_value", field,
			fmt.Sprintf("provider %s is self-hosted: set %s on the key or network_config.base_url on the provider", info.ID, field))
	}
	return nil
}

// valueOptional reports whether the key config carries the credentials, so
// the key's value may be empty.
func valueOptional(info Info, k *Key) bool {
	switch info.ID {
	case "bedrock":
		return k.Bedrock != nil
	case "vertex":
		return k.Vertex != nil
	case "azure":
		c := k.Azure
		return c != nil && !c.ClientID.IsZero() && !c.ClientSecret.IsZero() && !c.TenantID.IsZero()
	}
	return info.SelfHosted
}

func validateKeyConfig(info Info, k *Key) *apierr.Error {
	switch info.ID {
	case "azure":
		c := k.Azure
		if c == nil || c.Endpoint.IsZero() {
			return apierr.BadRequest("invalid_value", KeyConfigAzure+".endpoint", "azure keys need azure_key_config.endpoint")
		}
		if e := checkURLValue(KeyConfigAzure+".endpoint", c.Endpoint); e != nil {
			return e
		}
		for i, s := range c.Scopes {
			if strings.TrimSpace(s) == "" {
				return apierr.BadRequest("invalid_value", fmt.Sprintf("%s.scopes[%d]", KeyConfigAzure, i), "scopes must be non-empty strings")
			}
		}
	case "vertex":
		c := k.Vertex
		if c == nil || c.ProjectID.IsZero() {
			return apierr.BadRequest("invalid_value", KeyConfigVertex+".project_id", "vertex keys need vertex_key_config.project_id")
		}
		if c.Region.IsZero() {
			return apierr.BadRequest("invalid_value", KeyConfigVertex+".region", "vertex keys need vertex_key_config.region")
		}
	case "bedrock":
		c := k.Bedrock
		if c == nil {
			return nil
		}
		if c.AccessKey.IsZero() != c.SecretKey.IsZero() {
			return apierr.BadRequest("invalid_value", KeyConfigBedrock+".secret_key", "access_key and secret_key must be set together")
		}
		if b := c.BatchS3Config; b != nil {
			defaults := 0
			for i, bk := range b.Buckets {
				if strings.TrimSpace(bk.BucketName) == "" {
					return apierr.BadRequest("invalid_value", fmt.Sprintf("%s.batch_s3_config.buckets[%d].bucket_name", KeyConfigBedrock, i), "bucket_name is required")
				}
				if bk.IsDefault {
					defaults++
				}
			}
			if defaults > 1 {
				return apierr.BadRequest("invalid_value", KeyConfigBedrock+".batch_s3_config.buckets", "at most one bucket may be is_default")
			}
		}
	case "vllm", "ollama", "sgl":
		if k.present() == nil {
			return nil
		}
		u := k.selfHostedURL()
		if u.IsZero() {
			return apierr.BadRequest("invalid_value", info.KeyConfig+".url", info.KeyConfig+".url is required")
		}
		return checkURLValue(info.KeyConfig+".url", u)
	}
	return nil
}

// checkURLValue validates a plain URL; references are checked when resolved.
func checkURLValue(field string, v secret.Value) *apierr.Error {
	if v.Type != secret.PlainText {
		return nil
	}
	return checkHTTPURL(field, v.Value)
}

func checkHTTPURL(field, s string) *apierr.Error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return apierr.BadRequest("invalid_value", field, fmt.Sprintf("%s must be an http(s) URL (got %q)", field, s))
	}
	// Literal addresses are judged here, names when dialled (see
	// netguard.Metadata): loopback and private hosts are fine.
	if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && netguard.Metadata(ip) {
		return apierr.BadRequest("invalid_value", field, fmt.Sprintf(
			"%s points at %s, a link-local or cloud-metadata address, which the gateway never calls", field, ip))
	}
	return nil
}
