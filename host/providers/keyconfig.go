package providers

import "github.com/wasmgate/gateway/host/secret"

// AzureKeyConfig is the azure_key_config variant: an Azure OpenAI resource,
// authenticated with the key's value (api-key) or with Entra ID client
// credentials.
type AzureKeyConfig struct {
	Endpoint     secret.Value `json:"endpoint,omitzero"`
	APIVersion   secret.Value `json:"api_version,omitzero"`
	ClientID     secret.Value `json:"client_id,omitzero"`
	ClientSecret secret.Value `json:"client_secret,omitzero"`
	TenantID     secret.Value `json:"tenant_id,omitzero"`
	// Scopes are the OAuth scopes requested with the client credentials.
	Scopes []string `json:"scopes,omitempty"`
}

// VertexKeyConfig is the vertex_key_config variant. AuthCredentials is a
// service-account JSON; when empty the host uses application default credentials.
type VertexKeyConfig struct {
	ProjectID       secret.Value `json:"project_id,omitzero"`
	ProjectNumber   secret.Value `json:"project_number,omitzero"`
	Region          secret.Value `json:"region,omitzero"`
	AuthCredentials secret.Value `json:"auth_credentials,omitzero"`
}

// BedrockKeyConfig is the bedrock_key_config variant. Without access keys
// the host falls back to the AWS default credential chain (instance role).
type BedrockKeyConfig struct {
	AccessKey    secret.Value `json:"access_key,omitzero"`
	SecretKey    secret.Value `json:"secret_key,omitzero"`
	SessionToken secret.Value `json:"session_token,omitzero"`
	Region       secret.Value `json:"region,omitzero"`
	ARN          secret.Value `json:"arn,omitzero"`
	// BatchS3Config is plain configuration, not secret-capable.
	BatchS3Config *BatchS3Config `json:"batch_s3_config,omitempty"`
}

// BatchS3Config lists the S3 buckets Bedrock batch jobs read and write.
type BatchS3Config struct {
	Buckets []S3Bucket `json:"buckets"`
}

// S3Bucket is one batch bucket; at most one is the default.
type S3Bucket struct {
	BucketName string `json:"bucket_name"`
	Prefix     string `json:"prefix,omitempty"`
	IsDefault  bool   `json:"is_default"`
}

// VLLMKeyConfig is the vllm_key_config variant: one vLLM server per key.
type VLLMKeyConfig struct {
	URL secret.Value `json:"url"`
	// ModelName is the model the server was started with (plain string).
	ModelName string `json:"model_name,omitempty"`
}

// URLKeyConfig is the ollama_key_config and sgl_key_config variant.
type URLKeyConfig struct {
	URL secret.Value `json:"url"`
}

// ReplicateKeyConfig is the replicate_key_config variant.
type ReplicateKeyConfig struct {
	// UseDeploymentsEndpoint sends predictions to the deployments endpoint
	// instead of the models endpoint.
	UseDeploymentsEndpoint bool `json:"use_deployments_endpoint"`
}

// KeyConfigs holds the `<provider_id>_key_config` variants; at most the one
// matching the key's provider may be set.
type KeyConfigs struct {
	Azure     *AzureKeyConfig     `json:"azure_key_config,omitempty"`
	Vertex    *VertexKeyConfig    `json:"vertex_key_config,omitempty"`
	Bedrock   *BedrockKeyConfig   `json:"bedrock_key_config,omitempty"`
	VLLM      *VLLMKeyConfig      `json:"vllm_key_config,omitempty"`
	Ollama    *URLKeyConfig       `json:"ollama_key_config,omitempty"`
	SGL       *URLKeyConfig       `json:"sgl_key_config,omitempty"`
	Replicate *ReplicateKeyConfig `json:"replicate_key_config,omitempty"`
}

// present returns the names of the variants that are set.
func (kc *KeyConfigs) present() []string {
	var out []string
	add := func(set bool, name string) {
		if set {
			out = append(out, name)
		}
	}
	add(kc.Azure != nil, KeyConfigAzure)
	add(kc.Vertex != nil, KeyConfigVertex)
	add(kc.Bedrock != nil, KeyConfigBedrock)
	add(kc.VLLM != nil, KeyConfigVLLM)
	add(kc.Ollama != nil, KeyConfigOllama)
	add(kc.SGL != nil, KeyConfigSGL)
	add(kc.Replicate != nil, KeyConfigReplicate)
	return out
}

// selfHostedURL returns the server URL a self-hosted key config carries.
func (kc *KeyConfigs) selfHostedURL() secret.Value {
	switch {
	case kc.VLLM != nil:
		return kc.VLLM.URL
	case kc.Ollama != nil:
		return kc.Ollama.URL
	case kc.SGL != nil:
		return kc.SGL.URL
	}
	return secret.Value{}
}

// secretField is one secret-capable field of a key, addressed by its JSON path.
type secretField struct {
	path string
	v    *secret.Value
	// sensitive fields are masked in responses; the others (endpoints,
	// regions, project ids) are configuration an operator needs to see.
	sensitive bool
}

// secretFields lists every secret-capable field of k in a fixed order, so
// two keys' lists can be paired by path.
func (k *Key) secretFields() []secretField {
	f := []secretField{{"value", &k.Value, true}}
	if c := k.Azure; c != nil {
		f = append(f,
			secretField{KeyConfigAzure + ".endpoint", &c.Endpoint, false},
			secretField{KeyConfigAzure + ".api_version", &c.APIVersion, false},
			secretField{KeyConfigAzure + ".client_id", &c.ClientID, false},
			secretField{KeyConfigAzure + ".client_secret", &c.ClientSecret, true},
			secretField{KeyConfigAzure + ".tenant_id", &c.TenantID, false})
	}
	if c := k.Vertex; c != nil {
		f = append(f,
			secretField{KeyConfigVertex + ".project_id", &c.ProjectID, false},
			secretField{KeyConfigVertex + ".project_number", &c.ProjectNumber, false},
			secretField{KeyConfigVertex + ".region", &c.Region, false},
			secretField{KeyConfigVertex + ".auth_credentials", &c.AuthCredentials, true})
	}
	if c := k.Bedrock; c != nil {
		f = append(f,
			secretField{KeyConfigBedrock + ".access_key", &c.AccessKey, true},
			secretField{KeyConfigBedrock + ".secret_key", &c.SecretKey, true},
			secretField{KeyConfigBedrock + ".session_token", &c.SessionToken, true},
			secretField{KeyConfigBedrock + ".region", &c.Region, false},
			secretField{KeyConfigBedrock + ".arn", &c.ARN, false})
	}
	if c := k.VLLM; c != nil {
		f = append(f, secretField{KeyConfigVLLM + ".url", &c.URL, false})
	}
	if c := k.Ollama; c != nil {
		f = append(f, secretField{KeyConfigOllama + ".url", &c.URL, false})
	}
	if c := k.SGL; c != nil {
		f = append(f, secretField{KeyConfigSGL + ".url", &c.URL, false})
	}
	return f
}

// keySecretPaths lists every secret-capable JSON path a key body may hold;
// locating a bad secret input needs them.
func keySecretPaths() []string {
	k := Key{KeyConfigs: KeyConfigs{Azure: &AzureKeyConfig{}, Vertex: &VertexKeyConfig{},
		Bedrock: &BedrockKeyConfig{}, VLLM: &VLLMKeyConfig{}, Ollama: &URLKeyConfig{}, SGL: &URLKeyConfig{}}}
	var out []string
	for _, f := range k.secretFields() {
		out = append(out, f.path)
	}
	return out
}
