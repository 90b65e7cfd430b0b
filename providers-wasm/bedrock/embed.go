package main

import (
	"strconv"
	"strings"
)

// Embeddings go through InvokeModel with the model family's native body:
// Amazon Titan ("amazon.titan-embed-…") embeds one text per call, Cohere
// ("cohere.embed-…") a batch of up to 96. Vectors are returned as floats
// whatever encoding_format asks: neither family returns base64.

func isCohereEmbed(model string) bool { return strings.Contains(model, "cohere.embed") }

func embeddingRequest(r reqInput) ([]byte, error) {
	b := r.body
	if len(b) == 0 || b[0] != '{' {
		return nil, badRequest("request body is not a JSON object")
	}
	input, ok := field(b, "input")
	if !ok || isNull(input) {
		return nil, badRequest("input is required")
	}
	// texts are the escaped input strings.
	var texts [][]byte
	switch input[0] {
	case '"':
		texts = append(texts, input[1:len(input)-1])
	case '[':
		bad := false
		eachElement(input, func(s []byte) {
			if s[0] != '"' {
				bad = true
				return
			}
			texts = append(texts, s[1:len(s)-1])
		})
		if bad {
			return nil, badRequest("input must be a string or an array of strings: Bedrock embedding models take text, not tokens")
		}
	default:
		return nil, badRequest("input must be a string or an array of strings")
	}
	if len(texts) == 0 {
		return nil, badRequest("input is empty")
	}
	url, err := modelURL(r, "invoke")
	if err != nil {
		return nil, err
	}
	body := make([]byte, 0, len(input)+64)
	if isCohereEmbed(r.model) {
		if len(texts) > 96 {
			return nil, badRequest("Cohere embed models on Bedrock take at most 96 texts per request")
		}
		body = append(body, `{"texts":`...)
		if input[0] == '"' {
			body = append(append(append(body, '['), input...), ']')
		} else {
			body = append(body, input...)
		}
		// input_type is required by Cohere v3; documents is the neutral
		// default, a client may ask for search_query and the others.
		it := []byte(`"search_document"`)
		if v, ok := field(b, "input_type"); ok && len(v) > 0 && v[0] == '"' {
			it = v
		}
		body = append(body, `,"input_type":`...)
		body = append(body, it...)
		if v, ok := field(b, "truncate"); ok && len(v) > 0 && v[0] == '"' {
			body = append(append(body, `,"truncate":`...), v...)
		}
		body = append(body, '}')
	} else {
		if len(texts) > 1 {
			return nil, badRequest("Titan embedding models take one text per request; send a single input string")
		}
		body = append(body, `{"inputText":"`...)
		body = append(body, texts[0]...)
		body = append(body, '"')
		if v, ok := field(b, "dimensions"); ok && isNumber(v) {
			body = append(append(body, `,"dimensions":`...), v...)
		}
		if v, ok := field(b, "normalize"); ok && (string(v) == "true" || string(v) == "false") {
			body = append(append(body, `,"normalize":`...), v...)
		}
		body = append(body, '}')
	}
	return appendSpec(nil, "POST", url, body, false), nil
}

// embeddingResponse maps a Titan or Cohere InvokeModel answer to the
// unified embeddings list.
func embeddingResponse(model string, body []byte) ([]byte, error) {
	out := make([]byte, 0, len(body)+128)
	out = append(out, `{"object":"list","data":[`...)
	n := 0
	addVec := func(v []byte) {
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"object":"embedding","index":`...)
		out = strconv.AppendInt(out, int64(n), 10)
		out = append(out, `,"embedding":`...)
		out = append(out, v...)
		out = append(out, '}')
		n++
	}
	var tokens int64
	if v, ok := field(body, "embedding"); ok && len(v) > 0 && v[0] == '[' {
		addVec(v) // Titan
		tokens, _ = intValue(body, "inputTextTokenCount")
	} else if v, ok := field(body, "embeddings"); ok && len(v) > 0 {
		// Cohere: a list of vectors, or {"float": [...]} when
		// embedding_types was given.
		if v[0] == '{' {
			v, ok = field(v, "float")
		}
		if !ok || len(v) == 0 || v[0] != '[' {
			return nil, badUpstream("embedding answer has no float vectors")
		}
		eachElement(v, addVec)
	} else {
		return nil, badUpstream("embedding answer has neither embedding nor embeddings")
	}
	out = append(out, `],"model":`...)
	out = appendString(out, model)
	out = append(out, `,"usage":{"prompt_tokens":`...)
	out = strconv.AppendInt(out, tokens, 10)
	out = append(out, `,"total_tokens":`...)
	out = strconv.AppendInt(out, tokens, 10)
	return append(out, "}}"...), nil
}
