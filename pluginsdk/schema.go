package pluginsdk

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
)

// The unified schema: OpenAI-shaped types shared by host and guests. Every
// type keeps the fields it does not know in Extra and writes them back on
// encode, so a provider parameter the schema has never heard of survives a
// decode/encode round trip. These types use encoding/json and are meant for
// adapters and tests; hot paths should use package jsonx on the raw bytes.

// ChatRequest is a chat completions request.
type ChatRequest struct {
	Model               string             `json:"model"`
	Messages            []Message          `json:"messages"`
	Stream              bool               `json:"stream,omitempty"`
	StreamOptions       *StreamOptions     `json:"stream_options,omitempty"`
	MaxTokens           *int               `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int               `json:"max_completion_tokens,omitempty"`
	Temperature         *float64           `json:"temperature,omitempty"`
	TopP                *float64           `json:"top_p,omitempty"`
	Stop                RawJSON            `json:"stop,omitempty"`
	Tools               []Tool             `json:"tools,omitempty"`
	ToolChoice          RawJSON            `json:"tool_choice,omitempty"`
	ResponseFormat      RawJSON            `json:"response_format,omitempty"`
	User                string             `json:"user,omitempty"`
	Metadata            map[string]any     `json:"metadata,omitempty"`
	Extra               map[string]RawJSON `json:"-"`
}

// StreamOptions asks for usage in the final stream chunk.
type StreamOptions struct {
	IncludeUsage bool               `json:"include_usage,omitempty"`
	Extra        map[string]RawJSON `json:"-"`
}

// Message is one chat message. Content is a string or an array of parts,
// kept raw because both shapes are valid.
type Message struct {
	Role       string             `json:"role"`
	Content    RawJSON            `json:"content,omitempty"`
	Name       string             `json:"name,omitempty"`
	ToolCalls  []ToolCall         `json:"tool_calls,omitempty"`
	ToolCallID string             `json:"tool_call_id,omitempty"`
	Refusal    *string            `json:"refusal,omitempty"`
	Extra      map[string]RawJSON `json:"-"`
}

// Tool is a tool the model may call.
type Tool struct {
	Type     string             `json:"type"`
	Function RawJSON            `json:"function,omitempty"`
	Extra    map[string]RawJSON `json:"-"`
}

// ToolCall is a tool call in a message or (partially) in a stream delta.
type ToolCall struct {
	Index    *int               `json:"index,omitempty"`
	ID       string             `json:"id,omitempty"`
	Type     string             `json:"type,omitempty"`
	Function ToolCallFunction   `json:"function"`
	Extra    map[string]RawJSON `json:"-"`
}

// ToolCallFunction is the function part of a tool call.
type ToolCallFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// ChatResponse is a non-streamed chat completion.
type ChatResponse struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	Choices           []Choice           `json:"choices"`
	Usage             *Usage             `json:"usage,omitempty"`
	SystemFingerprint string             `json:"system_fingerprint,omitempty"`
	Extra             map[string]RawJSON `json:"-"`
}

// Choice is one completion choice.
type Choice struct {
	Index        int                `json:"index"`
	Message      Message            `json:"message"`
	FinishReason string             `json:"finish_reason,omitempty"`
	Logprobs     RawJSON            `json:"logprobs,omitempty"`
	Extra        map[string]RawJSON `json:"-"`
}

// ChatChunk is one chat.completion.chunk of a stream.
type ChatChunk struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []ChunkChoice      `json:"choices"`
	Usage   *Usage             `json:"usage,omitempty"`
	Extra   map[string]RawJSON `json:"-"`
}

// ChunkChoice is a choice delta in a stream chunk.
type ChunkChoice struct {
	Index        int                `json:"index"`
	Delta        Delta              `json:"delta"`
	FinishReason *string            `json:"finish_reason"`
	Extra        map[string]RawJSON `json:"-"`
}

// Delta is the incremental part of a chunk choice.
type Delta struct {
	Role      string             `json:"role,omitempty"`
	Content   *string            `json:"content,omitempty"`
	ToolCalls []ToolCall         `json:"tool_calls,omitempty"`
	Refusal   *string            `json:"refusal,omitempty"`
	Extra     map[string]RawJSON `json:"-"`
}

// Usage counts tokens with the details needed for exact cost: cached input,
// reasoning output, audio and image tokens.
type Usage struct {
	PromptTokens            int                      `json:"prompt_tokens"`
	CompletionTokens        int                      `json:"completion_tokens"`
	TotalTokens             int                      `json:"total_tokens"`
	PromptTokensDetails     *PromptTokensDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
	Extra                   map[string]RawJSON       `json:"-"`
}

// PromptTokensDetails breaks input tokens down.
type PromptTokensDetails struct {
	CachedTokens     int                `json:"cached_tokens,omitempty"`
	CacheWriteTokens int                `json:"cache_write_tokens,omitempty"`
	AudioTokens      int                `json:"audio_tokens,omitempty"`
	ImageTokens      int                `json:"image_tokens,omitempty"`
	Extra            map[string]RawJSON `json:"-"`
}

// CompletionTokensDetails breaks output tokens down.
type CompletionTokensDetails struct {
	ReasoningTokens          int                `json:"reasoning_tokens,omitempty"`
	AudioTokens              int                `json:"audio_tokens,omitempty"`
	ImageTokens              int                `json:"image_tokens,omitempty"`
	AcceptedPredictionTokens int                `json:"accepted_prediction_tokens,omitempty"`
	RejectedPredictionTokens int                `json:"rejected_prediction_tokens,omitempty"`
	Extra                    map[string]RawJSON `json:"-"`
}

// EmbeddingRequest is an embeddings request; Input is a string, an array of
// strings or of token arrays, kept raw.
type EmbeddingRequest struct {
	Model          string             `json:"model"`
	Input          RawJSON            `json:"input"`
	EncodingFormat string             `json:"encoding_format,omitempty"`
	Dimensions     *int               `json:"dimensions,omitempty"`
	User           string             `json:"user,omitempty"`
	Extra          map[string]RawJSON `json:"-"`
}

// EmbeddingResponse is an embeddings response.
type EmbeddingResponse struct {
	Object string             `json:"object"`
	Data   []Embedding        `json:"data"`
	Model  string             `json:"model"`
	Usage  *Usage             `json:"usage,omitempty"`
	Extra  map[string]RawJSON `json:"-"`
}

// Embedding is one vector; Embedding is a float array or a base64 string
// depending on encoding_format, kept raw so neither is lost.
type Embedding struct {
	Object    string             `json:"object"`
	Index     int                `json:"index"`
	Embedding RawJSON            `json:"embedding"`
	Extra     map[string]RawJSON `json:"-"`
}

// UpstreamRequest is the spec adapt_request returns: the host adds
// credentials and signing, then sends it with its own client.
type UpstreamRequest struct {
	Method string `json:"method"`
	// Path is joined to the provider's configured base URL; URL, when set,
	// is used as is.
	Path    string            `json:"path,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Body is the JSON body; BodyBase64 carries a non-JSON body.
	Body       RawJSON `json:"body,omitempty"`
	BodyBase64 string  `json:"body_base64,omitempty"`
	Stream     bool    `json:"stream,omitempty"`
	// Framing of a streamed answer: "sse" (default) or "aws-eventstream".
	Framing string `json:"framing,omitempty"`
	// Context is an opaque note (at most MaxAdapterContext bytes) the host
	// hands back unchanged in AdaptResponseInput.Context and as the state of
	// the first adapt_stream batch. It is how an adapter carries request
	// facts its response side needs (Cohere: encoding_format=base64, the
	// model for stream chunks) without the host knowing them.
	Context string `json:"context,omitempty"`
}

// MaxAdapterContext bounds UpstreamRequest.Context; the host drops a longer
// one rather than keep arbitrary guest data per request.
const MaxAdapterContext = 4096

// UpstreamResponse is the input of adapt_response.
type UpstreamResponse struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    RawJSON           `json:"body"`
}

// knownKeys lists the JSON names of t's fields; computed once per type.
func knownKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		tag := t.Field(i).Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}

func decodeExtra(data []byte, known map[string]bool) (map[string]RawJSON, error) {
	var all map[string]RawJSON
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	var extra map[string]RawJSON
	for k, v := range all {
		if !known[k] {
			if extra == nil {
				extra = map[string]RawJSON{}
			}
			extra[k] = v
		}
	}
	return extra, nil
}

// encodeExtra appends extra's members to the encoded object b.
func encodeExtra(b []byte, extra map[string]RawJSON) ([]byte, error) {
	if len(extra) == 0 {
		return b, nil
	}
	x, err := json.Marshal(extra)
	if err != nil {
		return nil, err
	}
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, errors.New("pluginsdk: encoded value is not an object")
	}
	b = b[:len(b)-1]
	if len(b) > 1 {
		b = append(b, ',')
	}
	b = append(b, x[1:]...)
	return b, nil
}

// The methods below are the only per-type code; the Extra mechanics are
// shared above.

var (
	keysChatRequest   = knownKeys(reflect.TypeFor[ChatRequest]())
	keysStreamOptions = knownKeys(reflect.TypeFor[StreamOptions]())
	keysMessage       = knownKeys(reflect.TypeFor[Message]())
	keysTool          = knownKeys(reflect.TypeFor[Tool]())
	keysToolCall      = knownKeys(reflect.TypeFor[ToolCall]())
	keysChatResponse  = knownKeys(reflect.TypeFor[ChatResponse]())
	keysChoice        = knownKeys(reflect.TypeFor[Choice]())
	keysChatChunk     = knownKeys(reflect.TypeFor[ChatChunk]())
	keysChunkChoice   = knownKeys(reflect.TypeFor[ChunkChoice]())
	keysDelta         = knownKeys(reflect.TypeFor[Delta]())
	keysUsage         = knownKeys(reflect.TypeFor[Usage]())
	keysPromptDet     = knownKeys(reflect.TypeFor[PromptTokensDetails]())
	keysCompDet       = knownKeys(reflect.TypeFor[CompletionTokensDetails]())
	keysEmbReq        = knownKeys(reflect.TypeFor[EmbeddingRequest]())
	keysEmbResp       = knownKeys(reflect.TypeFor[EmbeddingResponse]())
	keysEmbedding     = knownKeys(reflect.TypeFor[Embedding]())
)
