package apierr

// ExtraFields carries the envelope's optional context. Inference fills the
// routing and usage parts; management errors usually leave it empty.
type ExtraFields struct {
	Provider                  string           `json:"provider,omitempty"`
	ModelRequested            string           `json:"model_requested,omitempty"`
	OriginalModelRequested    string           `json:"original_model_requested,omitempty"`
	ResolvedModelUsed         string           `json:"resolved_model_used,omitempty"`
	RequestType               string           `json:"request_type,omitempty"`
	MCPRequestType            string           `json:"mcp_request_type,omitempty"`
	ErrorType                 string           `json:"error_type,omitempty"`
	RetryAfterMS              *int64           `json:"retry_after_ms,omitempty"`
	RawRequest                any              `json:"raw_request,omitempty"`
	RawResponse               any              `json:"raw_response,omitempty"`
	ConvertedRequestType      string           `json:"converted_request_type,omitempty"`
	DroppedCompatPluginParams []string         `json:"dropped_compat_plugin_params,omitempty"`
	Latency                   *float64         `json:"latency,omitempty"`
	RoutingInfo               *RoutingInfo     `json:"routing_info,omitempty"`
	KeyStatuses               []KeyStatus      `json:"key_statuses,omitempty"`
	MCPAuthRequired           *MCPAuthRequired `json:"mcp_auth_required,omitempty"`
	BilledUsage               any              `json:"billed_usage,omitempty"`
}

// RoutingInfo says which provider, model and key served (or failed) a request.
type RoutingInfo struct {
	Provider                string            `json:"provider,omitempty"`
	Model                   string            `json:"model,omitempty"`
	Key                     string            `json:"key,omitempty"`
	ResolvedKeyAlias        *ResolvedKeyAlias `json:"resolved_key_alias,omitempty"`
	IsFallback              bool              `json:"is_fallback"`
	PrimaryProvider         string            `json:"primary_provider,omitempty"`
	PrimaryModel            string            `json:"primary_model,omitempty"`
	RequestedProvider       string            `json:"requested_provider,omitempty"`
	RequestedModel          string            `json:"requested_model,omitempty"`
	ServerSideFallbackModel string            `json:"server_side_fallback_model,omitempty"`
}

// ResolvedKeyAlias describes the alias a key mapped the model through.
type ResolvedKeyAlias struct {
	ModelID     string `json:"model_id,omitempty"`
	ModelName   string `json:"model_name,omitempty"`
	ModelFamily string `json:"model_family,omitempty"`
}

// KeyStatus reports one key's state in a multi-key operation.
type KeyStatus struct {
	KeyID    string `json:"key_id"`
	Status   string `json:"status"`
	Provider string `json:"provider,omitempty"`
	Error    any    `json:"error,omitempty"`
}

// MCPAuthRequired tells the caller an MCP server needs (re-)authorization.
type MCPAuthRequired struct {
	Kind          string `json:"kind"`
	MCPClientID   string `json:"mcp_client_id"`
	MCPClientName string `json:"mcp_client_name,omitempty"`
	Message       string `json:"message"`
	AuthorizeURL  string `json:"authorize_url,omitempty"`
	SessionID     string `json:"session_id,omitempty"`
}
