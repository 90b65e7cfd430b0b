package providers

import (
	"sort"
	"strings"
)

// Family is the wire format a provider speaks upstream; one adapter per
// family serves every provider of that family.
type Family string

// The wire families.
const (
	FamilyOpenAI      Family = "openai"
	FamilyAnthropic   Family = "anthropic"
	FamilyGemini      Family = "gemini"
	FamilyVertex      Family = "vertex"
	FamilyBedrock     Family = "bedrock"
	FamilyAzure       Family = "azure"
	FamilyCohere      Family = "cohere"
	FamilyReplicate   Family = "replicate"
	FamilyElevenLabs  Family = "elevenlabs"
	FamilyVoyage      Family = "voyage"
	FamilyStability   Family = "stability"
	FamilyHuggingFace Family = "huggingface"
)

// AuthStyle says how the host attaches a key's credentials to an upstream request.
type AuthStyle string

// The credential styles.
const (
	// AuthBearer sends "Authorization: Bearer <value>".
	AuthBearer AuthStyle = "bearer"
	// AuthBearerOptional sends the bearer header only when the key has a
	// value: local servers usually run without one.
	AuthBearerOptional AuthStyle = "bearer_optional"
	// AuthXAPIKey sends "x-api-key: <value>".
	AuthXAPIKey AuthStyle = "x_api_key"
	// AuthGoogAPIKey sends "x-goog-api-key: <value>".
	AuthGoogAPIKey AuthStyle = "x_goog_api_key"
	// AuthAzure sends "api-key: <value>", or an Entra ID token obtained with
	// the key config's client credentials.
	AuthAzure AuthStyle = "azure"
	// AuthGoogleOAuth signs with a Google access token from the key config's
	// service-account credentials (or application default credentials).
	AuthGoogleOAuth AuthStyle = "google_oauth"
	// AuthSigV4 signs with AWS Signature V4 from the key config's access
	// keys, or sends the value as a Bedrock API key bearer token.
	AuthSigV4 AuthStyle = "aws_sigv4"
	// AuthXIAPIKey sends "xi-api-key: <value>".
	AuthXIAPIKey AuthStyle = "xi_api_key"
)

// Key config variant field names (`<provider_id>_key_config`).
const (
	KeyConfigAzure     = "azure_key_config"
	KeyConfigVertex    = "vertex_key_config"
	KeyConfigBedrock   = "bedrock_key_config"
	KeyConfigVLLM      = "vllm_key_config"
	KeyConfigOllama    = "ollama_key_config"
	KeyConfigSGL       = "sgl_key_config"
	KeyConfigReplicate = "replicate_key_config"
)

// Info describes one provider identifier.
type Info struct {
	// ID is the lowercase provider identifier used in `<provider>/<model>`.
	ID string `json:"id"`
	// Family is the upstream wire format.
	Family Family `json:"family"`
	// DefaultBaseURL includes the API version segment; the family adapter
	// appends resource paths such as /chat/completions. Empty when the URL
	// depends on the key (azure endpoint, vertex and bedrock region) or the
	// server is self-hosted.
	DefaultBaseURL string `json:"default_base_url"`
	// Auth is how credentials are attached.
	Auth AuthStyle `json:"auth"`
	// KeyConfig names the `<provider_id>_key_config` variant keys of this
	// provider take, or is empty.
	KeyConfig string `json:"key_config,omitempty"`
	// SelfHosted providers have no public endpoint: each key's config url or
	// the provider's network_config.base_url must say where the server is.
	SelfHosted bool `json:"self_hosted"`
}

// catalog is the single list of provider identifiers. It is immutable after
// package initialisation; adding a provider means adding a row here.
var catalog = []Info{
	{ID: "openai", Family: FamilyOpenAI, DefaultBaseURL: "https://api.openai.com/v1", Auth: AuthBearer},
	{ID: "azure", Family: FamilyAzure, Auth: AuthAzure, KeyConfig: KeyConfigAzure},
	{ID: "anthropic", Family: FamilyAnthropic, DefaultBaseURL: "https://api.anthropic.com/v1", Auth: AuthXAPIKey},
	{ID: "bedrock", Family: FamilyBedrock, Auth: AuthSigV4, KeyConfig: KeyConfigBedrock},
	{ID: "vertex", Family: FamilyVertex, Auth: AuthGoogleOAuth, KeyConfig: KeyConfigVertex},
	{ID: "gemini", Family: FamilyGemini, DefaultBaseURL: "https://generativelanguage.googleapis.com/v1beta", Auth: AuthGoogAPIKey},
	{ID: "cohere", Family: FamilyCohere, DefaultBaseURL: "https://api.cohere.com/v2", Auth: AuthBearer},
	{ID: "mistral", Family: FamilyOpenAI, DefaultBaseURL: "https://api.mistral.ai/v1", Auth: AuthBearer},
	{ID: "groq", Family: FamilyOpenAI, DefaultBaseURL: "https://api.groq.com/openai/v1", Auth: AuthBearer},
	{ID: "ollama", Family: FamilyOpenAI, Auth: AuthBearerOptional, KeyConfig: KeyConfigOllama, SelfHosted: true},
	{ID: "vllm", Family: FamilyOpenAI, Auth: AuthBearerOptional, KeyConfig: KeyConfigVLLM, SelfHosted: true},
	{ID: "sgl", Family: FamilyOpenAI, Auth: AuthBearerOptional, KeyConfig: KeyConfigSGL, SelfHosted: true},
	{ID: "openrouter", Family: FamilyOpenAI, DefaultBaseURL: "https://openrouter.ai/api/v1", Auth: AuthBearer},
	{ID: "perplexity", Family: FamilyOpenAI, DefaultBaseURL: "https://api.perplexity.ai", Auth: AuthBearer},
	{ID: "cerebras", Family: FamilyOpenAI, DefaultBaseURL: "https://api.cerebras.ai/v1", Auth: AuthBearer},
	{ID: "xai", Family: FamilyOpenAI, DefaultBaseURL: "https://api.x.ai/v1", Auth: AuthBearer},
	{ID: "deepseek", Family: FamilyOpenAI, DefaultBaseURL: "https://api.deepseek.com/v1", Auth: AuthBearer},
	{ID: "fireworks", Family: FamilyOpenAI, DefaultBaseURL: "https://api.fireworks.ai/inference/v1", Auth: AuthBearer},
	{ID: "together", Family: FamilyOpenAI, DefaultBaseURL: "https://api.together.xyz/v1", Auth: AuthBearer},
	{ID: "huggingface", Family: FamilyOpenAI, DefaultBaseURL: "https://router.huggingface.co/v1", Auth: AuthBearer},
	{ID: "replicate", Family: FamilyReplicate, DefaultBaseURL: "https://api.replicate.com/v1", Auth: AuthBearer, KeyConfig: KeyConfigReplicate},
	{ID: "elevenlabs", Family: FamilyElevenLabs, DefaultBaseURL: "https://api.elevenlabs.io/v1", Auth: AuthXIAPIKey},
	{ID: "nebius", Family: FamilyOpenAI, DefaultBaseURL: "https://api.studio.nebius.com/v1", Auth: AuthBearer},
	{ID: "parasail", Family: FamilyOpenAI, DefaultBaseURL: "https://api.parasail.io/v1", Auth: AuthBearer},
	{ID: "deepinfra", Family: FamilyOpenAI, DefaultBaseURL: "https://api.deepinfra.com/v1/openai", Auth: AuthBearer},
	{ID: "sambanova", Family: FamilyOpenAI, DefaultBaseURL: "https://api.sambanova.ai/v1", Auth: AuthBearer},
	{ID: "nvidia", Family: FamilyOpenAI, DefaultBaseURL: "https://integrate.api.nvidia.com/v1", Auth: AuthBearer},
	{ID: "voyage", Family: FamilyVoyage, DefaultBaseURL: "https://api.voyageai.com/v1", Auth: AuthBearer},
	{ID: "stability", Family: FamilyStability, DefaultBaseURL: "https://api.stability.ai", Auth: AuthBearer},
	{ID: "lmstudio", Family: FamilyOpenAI, Auth: AuthBearerOptional, SelfHosted: true},
}

// Catalog returns every provider identifier in catalog order.
func Catalog() []Info { return append([]Info(nil), catalog...) }

// Lookup returns the catalog entry for id.
func Lookup(id string) (Info, bool) {
	for _, in := range catalog {
		if in.ID == id {
			return in, true
		}
	}
	return Info{}, false
}

// catalogIDs is the sorted, comma-separated list used in error messages.
func catalogIDs() string {
	ids := make([]string, len(catalog))
	for i, in := range catalog {
		ids[i] = in.ID
	}
	sort.Strings(ids)
	return strings.Join(ids, ", ")
}
