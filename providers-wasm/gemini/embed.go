package main

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// embeddingRequest writes the spec of an embeddings request. Gemini:
// embedContent for one string, batchEmbedContents for an array. Vertex
// serves its embedding models (text-embedding-*, gemini-embedding-*)
// through :predict with instances, so that is what a vertex key gets.
func embeddingRequest(dst []byte, ai *adaptInput, model string, vertex bool) ([]byte, error) {
	input := get(ai.body, "input")
	dims := get(ai.body, "dimensions")
	task := get(ai.body, "task_type") // Google extra: RETRIEVAL_QUERY, ...
	var texts [][]byte                // raw JSON strings
	single := false
	switch {
	case isString(input):
		texts, single = [][]byte{input}, true
	case isArray(input):
		var err error
		forEachElem(input, func(i int, e []byte) {
			if err == nil && !isString(e) {
				err = badRequest("input[%d]: Gemini embeds text only, not token arrays", i)
			}
			texts = append(texts, e)
		})
		if err != nil {
			return nil, err
		}
		if len(texts) == 0 {
			return nil, badRequest("input must not be empty")
		}
	default:
		return nil, badRequest(`"input" must be a string or an array of strings`)
	}
	if vertex {
		dst, err := startSpec(dst, ai, model, "predict")
		if err != nil {
			return nil, err
		}
		dst = append(dst, `{"instances":[`...)
		for i, t := range texts {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"content":`...)
			dst = append(dst, t...)
			if task != nil {
				dst = append(dst, `,"task_type":`...)
				dst = append(dst, task...)
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
		if dims != nil {
			dst = append(dst, `,"parameters":{"outputDimensionality":`...)
			dst = append(dst, dims...)
			dst = append(dst, '}')
		}
		return append(dst, "}}"...), nil
	}
	one := func(dst, t []byte, withModel bool) []byte {
		dst = append(dst, '{')
		if withModel {
			dst = append(dst, `"model":`...)
			dst = jsonx.AppendString(dst, "models/"+model)
			dst = append(dst, ',')
		}
		dst = append(dst, `"content":{"parts":[{"text":`...)
		dst = append(dst, t...)
		dst = append(dst, `}]}`...)
		if dims != nil {
			dst = append(dst, `,"outputDimensionality":`...)
			dst = append(dst, dims...)
		}
		if task != nil {
			dst = append(dst, `,"taskType":`...)
			dst = append(dst, task...)
		}
		return append(dst, '}')
	}
	if single {
		dst, err := startSpec(dst, ai, model, "embedContent")
		if err != nil {
			return nil, err
		}
		dst = one(dst, texts[0], false)
		return append(dst, '}'), nil
	}
	dst, err := startSpec(dst, ai, model, "batchEmbedContents")
	if err != nil {
		return nil, err
	}
	dst = append(dst, `{"requests":[`...)
	for i, t := range texts {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = one(dst, t, true)
	}
	return append(dst, "]}}"...), nil
}

// embeddingResponse maps embedContent ({"embedding":{"values"}}),
// batchEmbedContents ({"embeddings":[{"values"}]}) and Vertex predict
// ({"predictions":[{"embeddings":{"values","statistics"}}]}) answers to the
// unified list. Float vectors are copied as raw JSON; encoding_format
// "base64" packs them as little-endian float32, which is what the OpenAI
// SDKs request by default and decode.
func embeddingResponse(dst, body []byte, model, format string) ([]byte, error) {
	var vectors [][]byte
	var tokens int64
	switch {
	case get(body, "embedding") != nil:
		vectors = append(vectors, get(get(body, "embedding"), "values"))
	case get(body, "embeddings") != nil:
		forEachElem(get(body, "embeddings"), func(_ int, e []byte) {
			vectors = append(vectors, get(e, "values"))
		})
	case get(body, "predictions") != nil:
		forEachElem(get(body, "predictions"), func(_ int, p []byte) {
			e := get(p, "embeddings")
			vectors = append(vectors, get(e, "values"))
			tokens += getInt(get(e, "statistics"), "token_count")
		})
	default:
		return nil, badUpstream("embedding answer has no embedding")
	}
	if u := get(body, "usageMetadata"); u != nil {
		tokens = getInt(u, "promptTokenCount")
	}
	dst = append(dst, `{"object":"list","data":[`...)
	var scratch []byte
	for i, v := range vectors {
		if !isArray(v) {
			return nil, badUpstream("embedding %d has no values", i)
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"object":"embedding","index":`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `,"embedding":`...)
		if format == "base64" {
			var err error
			if scratch, err = packFloat32(scratch[:0], v); err != nil {
				return nil, err
			}
			dst = append(dst, '"')
			dst = base64.StdEncoding.AppendEncode(dst, scratch)
			dst = append(dst, '"')
		} else {
			dst = append(dst, v...)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `],"model":`...)
	dst = jsonx.AppendString(dst, model)
	dst = append(dst, `,"usage":{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, tokens, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, tokens, 10)
	return append(dst, "}}"...), nil
}

// packFloat32 appends the little-endian float32 bytes of a JSON number
// array.
func packFloat32(dst, arr []byte) ([]byte, error) {
	var err error
	forEachElem(arr, func(i int, e []byte) {
		if err != nil {
			return
		}
		f, perr := strconv.ParseFloat(string(e), 32)
		if perr != nil {
			err = badUpstream("embedding value %d is not a number", i)
			return
		}
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(f)))
	})
	return dst, err
}

// countTokensResponse maps {"totalTokens": n} to {"input_tokens": n}, the
// shape the host's usage reader and the Responses API share.
func countTokensResponse(dst, body []byte) ([]byte, error) {
	v := get(body, "totalTokens")
	if v == nil {
		return nil, badUpstream("countTokens answer has no totalTokens")
	}
	dst = append(dst, `{"object":"response.input_tokens","input_tokens":`...)
	dst = strconv.AppendInt(dst, getInt(body, "totalTokens"), 10)
	if c := getInt(body, "cachedContentTokenCount"); c > 0 {
		dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
		dst = strconv.AppendInt(dst, c, 10)
		dst = append(dst, '}')
	}
	return append(dst, '}'), nil
}

// listModelsResponse maps the Gemini models list ({"models":[{"name":
// "models/x"}]}) or Vertex publisher models ({"publisherModels":[{"name":
// "publishers/google/models/x"}]}) to the OpenAI list, ids without prefix.
func listModelsResponse(dst, body []byte) ([]byte, error) {
	list := get(body, "models")
	if list == nil {
		list = get(body, "publisherModels")
	}
	dst = append(dst, `{"object":"list","data":[`...)
	forEachElem(list, func(_ int, m []byte) {
		name := getString(m, "name")
		if i := strings.LastIndex(name, "models/"); i >= 0 {
			name = name[i+len("models/"):]
		}
		if name == "" {
			return
		}
		dst = appendComma(dst)
		dst = append(dst, `{"id":`...)
		dst = jsonx.AppendString(dst, name)
		dst = append(dst, `,"object":"model","created":0,"owned_by":"google"`...)
		if d := get(m, "displayName"); isString(d) {
			dst = append(dst, `,"display_name":`...)
			dst = append(dst, d...)
		}
		dst = append(dst, '}')
	})
	return append(dst, "]}"...), nil
}
