package main

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// appendEmbedRequest appends the /embed body for a unified embeddings
// request. input_type is required by Cohere's v3+ models; the unified wire
// has no such field, so "search_document" (embedding a corpus, the common
// gateway use) is the default and an extra "input_type" member overrides
// it. Floats are always asked for: base64 output is produced here from
// them, so its byte layout is exactly OpenAI's (little-endian float32).
func appendEmbedRequest(b []byte, r requestInput) ([]byte, int, error) {
	body := r.body
	var input, inputType, format, dims, truncate []byte
	jsonx.ForEachMember(body, 0, func(k []byte, s, e int) {
		switch string(k) {
		case "input":
			input = body[s:e]
		case "input_type":
			inputType = str(body, s, e)
		case "encoding_format":
			format = str(body, s, e)
		case "dimensions":
			dims = body[s:e]
		case "truncate":
			truncate = str(body, s, e)
		}
	})
	flags := 0
	switch string(format) {
	case "", "float":
	case "base64":
		flags |= flagBase64
	default:
		return b, 0, reject(400, "encoding_format %q is not supported (float or base64)", format)
	}
	if len(input) == 0 {
		return b, 0, reject(400, "embeddings request needs input")
	}
	b = append(b, `{"model":`...)
	b = appendQuoted(b, r.model)
	b = append(b, `,"texts":`...)
	switch input[0] {
	case '"':
		b = append(b, '[')
		b = append(b, input...)
		b = append(b, ']')
	case '[':
		allStrings := true
		n := 0
		jsonx.ForEachElement(input, 0, func(s, e int) {
			n++
			if input[s] != '"' {
				allStrings = false
			}
		})
		if !allStrings || n == 0 {
			return b, 0, reject(400, "cohere embeds text: input must be a string or a non-empty array of strings (token arrays are not supported)")
		}
		b = append(b, input...)
	default:
		return b, 0, reject(400, "input must be a string or an array of strings")
	}
	b = append(b, `,"input_type":`...)
	if len(inputType) == 0 {
		inputType = []byte("search_document")
	}
	b = appendQuoted(b, inputType)
	b = append(b, `,"embedding_types":["float"]`...)
	if len(dims) > 0 && string(dims) != "null" {
		b = appendMember(b, "output_dimension", dims)
	}
	if len(truncate) > 0 {
		b = append(b, `,"truncate":`...)
		b = appendQuoted(b, truncate)
	}
	return append(b, '}'), flags, nil
}

// appendEmbedResponse translates an /embed answer. Float vectors are
// copied as raw JSON (no number is parsed) unless base64 was asked for.
func appendEmbedResponse(b, body []byte, st *state) ([]byte, error) {
	vs, ve, ok := path(body, 0, "embeddings", "float")
	if !ok {
		// embeddings_floats answers (older API versions) have the
		// list of vectors directly under "embeddings".
		if s, e, ok2 := field(body, 0, "embeddings"); ok2 && body[s] == '[' {
			vs, ve, ok = s, e, true
		}
	}
	if !ok || body[vs] != '[' {
		return b, reject(502, "cohere answer has no float embeddings")
	}
	vecs := body[vs:ve]
	b = append(b, `{"object":"list","data":[`...)
	i := 0
	var err error
	var tmp []byte
	jsonx.ForEachElement(vecs, 0, func(s, e int) {
		if err != nil {
			return
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"embedding":`...)
		if st.flags&flagBase64 != 0 {
			b, tmp, err = appendBase64Floats(b, tmp, vecs[s:e])
		} else {
			b = append(b, vecs[s:e]...)
		}
		b = append(b, '}')
		i++
	})
	if err != nil {
		return b, err
	}
	b = append(b, `],"model":`...)
	b = appendQuoted(b, st.model)
	var tokens int64
	if s, e, ok := path(body, 0, "meta", "billed_units", "input_tokens"); ok {
		tokens = number(body, s, e)
	}
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, tokens, 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, tokens, 10)
	return append(b, "}}"...), nil
}

// appendBase64Floats appends vec (a JSON array of numbers) as OpenAI's
// base64 embedding: the float32 values little-endian, base64 (std) encoded.
// tmp is a reusable byte buffer.
func appendBase64Floats(b, tmp, vec []byte) ([]byte, []byte, error) {
	tmp = tmp[:0]
	var err error
	ok := jsonx.ForEachElement(vec, 0, func(s, e int) {
		if err != nil {
			return
		}
		f, perr := strconv.ParseFloat(string(vec[s:e]), 32)
		if perr != nil {
			err = reject(502, "cohere embedding holds a non-number")
			return
		}
		tmp = binary.LittleEndian.AppendUint32(tmp, math.Float32bits(float32(f)))
	})
	if err != nil {
		return b, tmp, err
	}
	if !ok {
		return b, tmp, reject(502, "cohere embedding is not an array")
	}
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, tmp)
	return append(b, '"'), tmp, nil
}

// appendRerankRequest appends the /rerank body. Documents may be strings
// or objects with a "text" member (the shape several rerank clients send);
// Cohere v2 takes strings.
func appendRerankRequest(b []byte, r requestInput) ([]byte, error) {
	body := r.body
	var query, docs, topN, maxTok []byte
	jsonx.ForEachMember(body, 0, func(k []byte, s, e int) {
		switch string(k) {
		case "query":
			query = body[s:e]
		case "documents":
			docs = body[s:e]
		case "top_n":
			topN = body[s:e]
		case "max_tokens_per_doc":
			maxTok = body[s:e]
		}
	})
	if len(query) == 0 || query[0] != '"' || len(docs) == 0 || docs[0] != '[' {
		return b, reject(400, "rerank request needs a query string and a documents array")
	}
	b = append(b, `{"model":`...)
	b = appendQuoted(b, r.model)
	b = append(b, `,"query":`...)
	b = append(b, query...)
	b = append(b, `,"documents":[`...)
	n := 0
	var err error
	jsonx.ForEachElement(docs, 0, func(s, e int) {
		if err != nil {
			return
		}
		d := docs[s:e]
		if d[0] == '{' {
			ts, te, ok := field(d, 0, "text")
			if !ok || d[ts] != '"' {
				err = reject(400, "a rerank document object needs a text string")
				return
			}
			d = d[ts:te]
		} else if d[0] != '"' {
			err = reject(400, "rerank documents must be strings or {\"text\":...} objects")
			return
		}
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, d...)
		n++
	})
	if err != nil {
		return b, err
	}
	b = append(b, ']')
	if len(topN) > 0 && string(topN) != "null" {
		b = appendMember(b, "top_n", topN)
	}
	b = appendMember(b, "max_tokens_per_doc", maxTok)
	return append(b, '}'), nil
}

// appendRerankResponse translates a /rerank answer. Rerank bills search
// units, not tokens: they are reported as usage.search_units.
func appendRerankResponse(b, body []byte, st *state) ([]byte, error) {
	rs, re, ok := field(body, 0, "results")
	if !ok || body[rs] != '[' {
		return b, reject(502, "cohere rerank answer has no results")
	}
	res := body[rs:re]
	b = append(b, `{"object":"list"`...)
	if s, e, ok := field(body, 0, "id"); ok && body[s] == '"' {
		b = append(b, `,"id":`...)
		b = append(b, body[s:e]...)
	}
	b = append(b, `,"model":`...)
	b = appendQuoted(b, st.model)
	b = append(b, `,"results":[`...)
	n := 0
	jsonx.ForEachElement(res, 0, func(s, e int) {
		is, ie, ok1 := field(res, s, "index")
		ss, se, ok2 := field(res, s, "relevance_score")
		if !ok1 || !ok2 {
			return
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, `{"index":`...)
		b = append(b, res[is:ie]...)
		b = append(b, `,"relevance_score":`...)
		b = append(b, res[ss:se]...)
		b = append(b, '}')
	})
	b = append(b, `],"usage":{"prompt_tokens":0,"total_tokens":0`...)
	if s, e, ok := path(body, 0, "meta", "billed_units", "search_units"); ok {
		b = append(b, `,"search_units":`...)
		b = strconv.AppendInt(b, number(body, s, e), 10)
	}
	return append(b, "}}"...), nil
}

// DefaultBaseURL is Cohere's v2 API, used when the host passes none.
const DefaultBaseURL = "https://api.cohere.com/v2"

// listModelsRequest: Cohere lists models only in its v1 API, so the spec
// is an absolute URL: the base URL without its /v2 segment + /v1/models.
// page_size=1000 (the maximum) gets the whole catalogue in one answer.
func (a *Adapter) listModelsRequest(r requestInput) (pluginsdk.Output, error) {
	base, ok := jsonx.AppendUnescaped(nil, r.baseURL)
	if !ok {
		return pluginsdk.Output{}, reject(400, "base_url is not a valid JSON string")
	}
	u := strings.TrimRight(string(base), "/")
	if u == "" {
		u = DefaultBaseURL
	}
	u = strings.TrimSuffix(u, "/v2")
	u = strings.TrimSuffix(u, "/v1")
	b := append(a.out[:0], `{"method":"GET","url":`...)
	b = jsonx.AppendString(b, u+"/v1/models?page_size=1000")
	b = append(b, '}')
	a.out = b
	return pluginsdk.Replace(b), nil
}

// appendModelsResponse turns {"models":[{"name":...}]} into the unified list.
func appendModelsResponse(b, body []byte) ([]byte, error) {
	ms, _, ok := field(body, 0, "models")
	if !ok || body[ms] != '[' {
		return b, reject(502, "cohere models answer has no models")
	}
	b = append(b, `{"object":"list","data":[`...)
	n := 0
	jsonx.ForEachElement(body, ms, func(s, e int) {
		ns, ne, ok := field(body, s, "name")
		if !ok || body[ns] != '"' || ne-ns <= 2 {
			return
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, `{"id":`...)
		b = append(b, body[ns:ne]...)
		b = append(b, `,"object":"model","owned_by":"cohere"}`...)
	})
	return append(b, "]}"...), nil
}
