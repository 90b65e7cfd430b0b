// JSON methods of the schema types, one pair per type, written from one
// template: they only route Extra through decodeExtra/encodeExtra.

package pluginsdk

import "encoding/json"

// UnmarshalJSON decodes known fields and keeps the rest in Extra.
func (v *ChatRequest) UnmarshalJSON(data []byte) error {
	type plain ChatRequest
	if err := json.Unmarshal(data, (*plain)(v)); err != nil {
		return err
	}
	extra, err := decodeExtra(data, keysChatRequest)
	v.Extra = extra
	return err
}

// MarshalJSON encodes known fields followed by Extra.
func (v ChatRequest) MarshalJSON() ([]byte, error) {
	type plain ChatRequest
	b, err := json.Marshal(plain(v))
	if err != nil {
		return nil, err
	}
	return encodeExtra(b, v.Extra)
}

// UnmarshalJSON decodes known fields and keeps the rest in Extra.
func (v *StreamOptions) UnmarshalJSON(data []byte) error {
	type plain StreamOptions
	if err := json.Unmarshal(data, (*plain)(v)); err != nil {
		return err
	}
	extra, err := decodeExtra(data, keysStreamOptions)
	v.Extra = extra
	return err
}

// MarshalJSON encodes known fields followed by Extra.
func (v StreamOptions) MarshalJSON() ([]byte, error) {
	type plain StreamOptions
	b, err := json.Marshal(plain(v))
	if err != nil {
		return nil, err
	}
	return encodeExtra(b, v.Extra)
}

// UnmarshalJSON decodes known fields and keeps the rest in Extra.
func (v *Message) UnmarshalJSON(data []byte) error {
	type plain Message
	if err := json.Unmarshal(data, (*plain)(v)); err != nil {
		return err
	}
	extra, err := decodeExtra(data, keysMessage)
	v.Extra = extra
	return err
}

// MarshalJSON encodes known fields followed by Extra.
func (v Message) MarshalJSON() ([]byte, error) {
	type plain Message
	b, err := json.Marshal(plain(v))
	if err != nil {
		return nil, err
	}
	return encodeExtra(b, v.Extra)
}

// UnmarshalJSON decodes known fields and keeps the rest in Extra.
func (v *Tool) UnmarshalJSON(data []byte) error {
	type plain Tool
	if err := json.Unmarshal(data, (*plain)(v)); err != nil {
		return err
	}
	extra, err := decodeExtra(data, keysTool)
	v.Extra = extra
	return err
}

// MarshalJSON encodes known fields followed by Extra.
func (v Tool) MarshalJSON() ([]byte, error) {
	type plain Tool
	b, err := json.Marshal(plain(v))
	if err != nil {
		return nil, err
	}
	return encodeExtra(b, v.Extra)
}

// UnmarshalJSON decodes known fields and keeps the rest in Extra.
func (v *ToolCall) UnmarshalJSON(data []byte) error {
	type plain ToolCall
	if err := json.Unmarshal(data, (*plain)(v)); err != nil {
		return err
	}
	extra, err := decodeExtra(data, keysToolCall)
	v.Extra = extra
	return err
}

// MarshalJSON encodes known fields followed by Extra.
func (v ToolCall) MarshalJSON() ([]byte, error) {
	type plain ToolCall
	b, err := json.Marshal(plain(v))
	if err != nil {
		return nil, err
	}
	return encodeExtra(b, v.Extra)
}

// UnmarshalJSON decodes known fields and keeps the rest in Extra.
func (v *ChatResponse) UnmarshalJSON(data []byte) error {
	type plain ChatResponse
	if err := json.Unmarshal(data, (*plain)(v)); err != nil {
		return err
	}
	extra, err := decodeExtra(data, keysChatResponse)
	v.Extra = extra
	return err
}

// MarshalJSON encodes known fields followed by Extra.
func (v ChatResponse) MarshalJSON() ([]byte, error) {
	type plain ChatResponse
	b, err := json.Marshal(plain(v))
	if err != nil {
		return nil, err
	}
	return encodeExtra(b, v.Extra)
}

// UnmarshalJSON decodes known fields and keeps the rest in Extra.
func (v *Choice) UnmarshalJSON(data []byte) error {
	type plain Choice
	if err := json.Unmarshal(data, (*plain)(v)); err != nil {
		return err
	}
	extra, err := decodeExtra(data, keysChoice)
	v.Extra = extra
	return err
}

// MarshalJSON encodes known fields followed by Extra.
func (v Choice) MarshalJSON() ([]byte, error) {
	type plain Choice
	b, err := json.Marshal(plain(v))
	if err != nil {
		return nil, err
	}
	return encodeExtra(b, v.Extra)
}

// UnmarshalJSON decodes known fields and keeps the rest in Extra.
func (v *ChatChunk) UnmarshalJSON(data []byte) error {
	type plain ChatChunk
	if err := json.Unmarshal(data, (*plain)(v)); err != nil {
		return err
	}
	extra, err := decodeExtra(data, keysChatChunk)
	v.Extra = extra
	return err
}

// MarshalJSON encodes known fields followed by Extra.
func (v ChatChunk) MarshalJSON() ([]byte, error) {
	type plain ChatChunk
	b, err := json.Marshal(plain(v))
	if err != nil {
		return nil, err
	}
	return encodeExtra(b, v.Extra)
}

// UnmarshalJSON decodes known fields and keeps the rest in Extra.
func (v *ChunkChoice) UnmarshalJSON(data []byte) error {
	type plain ChunkChoice
	if err := json.Unmarshal(data, (*plain)(v)); err != nil {
		return err
	}
	extra, err := decodeExtra(data, keysChunkChoice)
	v.Extra = extra
	return err
}

// MarshalJSON encodes known fields followed by Extra.
func (v ChunkChoice) MarshalJSON() ([]byte, error) {
	type plain ChunkChoice
	b, err := json.Marshal(plain(v))
	if err != nil {
		return nil, err
	}
	return encodeExtra(b, v.Extra)
}

// UnmarshalJSON decodes known fields and keeps the rest in Extra.
func (v *Delta) UnmarshalJSON(data []byte) error {
	type plain Delta
	if err := json.Unmarshal(data, (*plain)(v)); err != nil {
		return err
	}
	extra, err := decodeExtra(data, keysDelta)
	v.Extra = extra
	return err
}

// MarshalJSON encodes known fields followed by Extra.
func (v Delta) MarshalJSON() ([]byte, error) {
	type plain Delta
	b, err := json.Marshal(plain(v))
	if err != nil {
		return nil, err
	}
	return encodeExtra(b, v.Extra)
}

// UnmarshalJSON decodes known fields and keeps the rest in Extra.
func (v *Usage) UnmarshalJSON(data []byte) error {
	type plain Usage
	if err := json.Unmarshal(data, (*plain)(v)); err != nil {
		return err
	}
	extra, err := decodeExtra(data, keysUsage)
	v.Extra = extra
	return err
}

// MarshalJSON encodes known fields followed by Extra.
func (v Usage) MarshalJSON() ([]byte, error) {
	type plain Usage
	b, err := json.Marshal(plain(v))
	if err != nil {
		return nil, err
	}
	return encodeExtra(b, v.Extra)
}

// UnmarshalJSON decodes known fields and keeps the rest in Extra.
func (v *PromptTokensDetails) UnmarshalJSON(data []byte) error {
	type plain PromptTokensDetails
	if err := json.Unmarshal(data, (*plain)(v)); err != nil {
		return err
	}
	extra, err := decodeExtra(data, keysPromptDet)
	v.Extra = extra
	return err
}

// MarshalJSON encodes known fields followed by Extra.
func (v PromptTokensDetails) MarshalJSON() ([]byte, error) {
	type plain PromptTokensDetails
	b, err := json.Marshal(plain(v))
	if err != nil {
		return nil, err
	}
	return encodeExtra(b, v.Extra)
}

// UnmarshalJSON decodes known fields and keeps the rest in Extra.
func (v *CompletionTokensDetails) UnmarshalJSON(data []byte) error {
	type plain CompletionTokensDetails
	if err := json.Unmarshal(data, (*plain)(v)); err != nil {
		return err
	}
	extra, err := decodeExtra(data, keysCompDet)
	v.Extra = extra
	return err
}

// MarshalJSON encodes known fields followed by Extra.
func (v CompletionTokensDetails) MarshalJSON() ([]byte, error) {
	type plain CompletionTokensDetails
	b, err := json.Marshal(plain(v))
	if err != nil {
		return nil, err
	}
	return encodeExtra(b, v.Extra)
}

// UnmarshalJSON decodes known fields and keeps the rest in Extra.
func (v *EmbeddingRequest) UnmarshalJSON(data []byte) error {
	type plain EmbeddingRequest
	if err := json.Unmarshal(data, (*plain)(v)); err != nil {
		return err
	}
	extra, err := decodeExtra(data, keysEmbReq)
	v.Extra = extra
	return err
}

// MarshalJSON encodes known fields followed by Extra.
func (v EmbeddingRequest) MarshalJSON() ([]byte, error) {
	type plain EmbeddingRequest
	b, err := json.Marshal(plain(v))
	if err != nil {
		return nil, err
	}
	return encodeExtra(b, v.Extra)
}

// UnmarshalJSON decodes known fields and keeps the rest in Extra.
func (v *EmbeddingResponse) UnmarshalJSON(data []byte) error {
	type plain EmbeddingResponse
	if err := json.Unmarshal(data, (*plain)(v)); err != nil {
		return err
	}
	extra, err := decodeExtra(data, keysEmbResp)
	v.Extra = extra
	return err
}

// MarshalJSON encodes known fields followed by Extra.
func (v EmbeddingResponse) MarshalJSON() ([]byte, error) {
	type plain EmbeddingResponse
	b, err := json.Marshal(plain(v))
	if err != nil {
		return nil, err
	}
	return encodeExtra(b, v.Extra)
}

// UnmarshalJSON decodes known fields and keeps the rest in Extra.
func (v *Embedding) UnmarshalJSON(data []byte) error {
	type plain Embedding
	if err := json.Unmarshal(data, (*plain)(v)); err != nil {
		return err
	}
	extra, err := decodeExtra(data, keysEmbedding)
	v.Extra = extra
	return err
}

// MarshalJSON encodes known fields followed by Extra.
func (v Embedding) MarshalJSON() ([]byte, error) {
	type plain Embedding
	b, err := json.Marshal(plain(v))
	if err != nil {
		return nil, err
	}
	return encodeExtra(b, v.Extra)
}
