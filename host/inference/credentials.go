package inference

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/wasmgate/gateway/host/providers"
	"github.com/wasmgate/gateway/host/upstreamauth"
)

// credential is a key ready for the hot path: secrets resolved, the
// authenticator built (token sources cache their tokens), the non-secret key
// config rendered for adapters. It is cached per key version.
type credential struct {
	key  providers.ResolvedKey
	auth upstreamauth.Authenticator
	// static holds the auth headers when they do not depend on the request.
	static    map[string]string
	keyConfig json.RawMessage
	built     time.Time
}

// credentialTTL bounds how long a resolved env/vault secret is reused.
const credentialTTL = time.Minute

type credentialCache struct {
	mu sync.Mutex
	m  map[credKey]*credential
}

// credKey names one version of a key: an edit changes UpdatedAt.
type credKey struct {
	provider, id string
	updated      int64
}

func (c *credentialCache) get(ctx context.Context, svc *providers.Service, info providers.Info, k providers.Key) (*credential, error) {
	id := credKey{k.Provider, k.ID, k.UpdatedAt.UnixNano()}
	c.mu.Lock()
	cr, ok := c.m[id]
	c.mu.Unlock()
	if ok && time.Since(cr.built) < credentialTTL {
		return cr, nil
	}
	rk, err := svc.ResolveKey(ctx, k)
	if err != nil {
		return nil, err
	}
	var auth upstreamauth.Authenticator
	// A token source of the same key version keeps its cached token: minting
	// a new one every TTL would defeat its expiry-aware cache.
	if ok {
		switch cr.auth.(type) {
		case *upstreamauth.AzureEntraID, *upstreamauth.GoogleServiceAccount:
			auth = cr.auth
		}
	}
	if auth == nil {
		if auth, err = buildAuth(info, rk); err != nil {
			return nil, fmt.Errorf("key %q: %w", k.Name, err)
		}
	}
	cr = &credential{key: rk, auth: auth, keyConfig: publicKeyConfig(rk), built: time.Now()}
	cr.static = staticAuthHeaders(info, cr)
	c.mu.Lock()
	if c.m == nil {
		c.m = map[credKey]*credential{}
	}
	if len(c.m) > 4096 {
		clear(c.m)
	}
	c.m[id] = cr
	c.mu.Unlock()
	return cr, nil
}

// buildAuth picks the authenticator for the provider's auth style.
func buildAuth(info providers.Info, rk providers.ResolvedKey) (upstreamauth.Authenticator, error) {
	secret := rk.Secret()
	switch info.Auth {
	case providers.AuthBearer:
		return upstreamauth.Bearer(secret)
	case providers.AuthBearerOptional:
		if secret == "" {
			return upstreamauth.AuthenticatorFunc(func(context.Context, *http.Request) error { return nil }), nil
		}
		return upstreamauth.Bearer(secret)
	case providers.AuthXAPIKey:
		return upstreamauth.Anthropic(secret, "2023-06-01")
	case providers.AuthGoogAPIKey:
		return upstreamauth.GeminiAPIKey(secret)
	case providers.AuthXIAPIKey:
		return upstreamauth.APIKeyHeader("xi-api-key", secret)
	case providers.AuthAzure:
		az := rk.Azure
		if az != nil && !az.ClientSecret.IsZero() {
			scope := ""
			if len(az.Scopes) > 0 {
				scope = strings.Join(az.Scopes, " ")
			}
			return upstreamauth.NewAzureEntraID(upstreamauth.AzureClientCredentials{
				TenantID: az.TenantID.Value, ClientID: az.ClientID.Value, ClientSecret: az.ClientSecret.Value, Scope: scope,
			})
		}
		return upstreamauth.AzureAPIKey(secret)
	case providers.AuthGoogleOAuth:
		vc := rk.Vertex
		if vc == nil || vc.AuthCredentials.IsZero() {
			if secret != "" {
				return upstreamauth.Bearer(secret)
			}
			return nil, fmt.Errorf("vertex_key_config.auth_credentials (service-account JSON) is required")
		}
		return upstreamauth.NewGoogleServiceAccount(upstreamauth.GoogleConfig{CredentialsJSON: []byte(vc.AuthCredentials.Value)})
	case providers.AuthSigV4:
		bc := rk.Bedrock
		if bc != nil && !bc.AccessKey.IsZero() {
			return upstreamauth.NewBedrockSigner(upstreamauth.AWSCredentials{
				AccessKeyID: bc.AccessKey.Value, SecretAccessKey: bc.SecretKey.Value, SessionToken: bc.SessionToken.Value,
			}, bc.Region.Value)
		}
		// Bedrock API keys are bearer tokens.
		return upstreamauth.Bearer(secret)
	}
	return nil, fmt.Errorf("unsupported auth style %q", info.Auth)
}

// publicKeyConfig renders the parts of the key config an adapter may see:
// where to send requests, never credentials.
func publicKeyConfig(rk providers.ResolvedKey) json.RawMessage {
	m := map[string]any{}
	if az := rk.Azure; az != nil {
		m["endpoint"], m["api_version"] = az.Endpoint.Value, az.APIVersion.Value
	}
	if vc := rk.Vertex; vc != nil {
		m["project_id"], m["project_number"], m["region"] = vc.ProjectID.Value, vc.ProjectNumber.Value, vc.Region.Value
	}
	if bc := rk.Bedrock; bc != nil {
		m["region"], m["arn"] = bc.Region.Value, bc.ARN.Value
	}
	if vl := rk.VLLM; vl != nil && vl.ModelName != "" {
		m["model_name"] = vl.ModelName
	}
	if rp := rk.Replicate; rp != nil {
		m["use_deployments_endpoint"] = rp.UseDeploymentsEndpoint
	}
	if len(m) == 0 {
		return nil
	}
	b, _ := json.Marshal(m)
	return b
}
