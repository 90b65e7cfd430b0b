package main

import (
	"strconv"
	"strings"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// reqInput is the part of AdaptRequestInput the adapter uses, read by
// scanning so the (large) body is never decoded as a whole.
type reqInput struct {
	requestType string
	model       string
	stream      bool
	baseURL     string
	region      string
	arn         string
	body        []byte
}

// parseRequestInput reads the envelope. The host builds it with
// encoding/json from a body it validated at ingress, so jsonx.Valid is a
// guard rather than a filter: it keeps the promise that the spans copied
// to the output are well-formed whoever calls the hook, at about a fifth
// of the hook's time (json.Valid took half).
func parseRequestInput(in []byte) (reqInput, error) {
	var r reqInput
	if !jsonx.Valid(in) {
		return r, badRequest("adapt_request input is not a JSON object")
	}
	// One pass over the envelope: looking fields up one by one would skip
	// over the body again for each of them.
	ok := forEachField(in, 0, func(key []byte, vs, ve int) bool {
		v := in[vs:ve]
		switch string(key) {
		case "request_type":
			r.requestType = strOf(v)
		case "model":
			r.model = strOf(v)
		case "base_url":
			r.baseURL = strOf(v)
		case "stream":
			r.stream = string(v) == "true"
		case "key_config":
			if v[0] == '{' {
				r.region = strings.TrimSpace(strValue(v, "region"))
				r.arn = strings.TrimSpace(strValue(v, "arn"))
			}
		case "body":
			r.body = v
		}
		return true
	})
	if !ok {
		return r, badRequest("adapt_request input is not a JSON object")
	}
	return r, nil
}

// strOf is the text of a JSON string value, "" for any other value.
func strOf(v []byte) string {
	raw, _ := rawString(v)
	return unescape(raw)
}

// AdaptRequest builds the upstream request for a chat completion (Converse
// or ConverseStream), an embedding (InvokeModel) or the model list.
func (*Adapter) AdaptRequest(in []byte) (pluginsdk.Output, error) {
	r, err := parseRequestInput(in)
	if err != nil {
		return pluginsdk.Output{}, err
	}
	var out []byte
	switch r.requestType {
	case pluginsdk.RequestChat:
		out, err = chatRequest(r)
	case pluginsdk.RequestListModels:
		out, err = listModelsRequest(r)
	case pluginsdk.RequestEmbedding:
		out, err = embeddingRequest(r)
	case RequestInvoke:
		out, err = invokeRequest(r)
	default:
		err = badRequest("request type " + strconv.Quote(r.requestType) + " is not supported by the Bedrock adapter")
	}
	if err != nil {
		return pluginsdk.Output{}, err
	}
	return pluginsdk.Replace(out), nil
}

// runtimeEndpoint is where Converse and InvokeModel go: the configured base
// URL, else the regional bedrock-runtime endpoint.
func runtimeEndpoint(r reqInput) (string, error) {
	if r.baseURL != "" {
		return strings.TrimRight(r.baseURL, "/"), nil
	}
	host, err := regionalHost("bedrock-runtime", r.region)
	if err != nil {
		return "", err
	}
	return "https://" + host, nil
}

// regionalHost builds "{service}.{region}.amazonaws.com". The region is
// checked because it becomes part of a host name the host will sign for and
// connect to.
func regionalHost(service, region string) (string, error) {
	if region == "" {
		return "", badRequest("bedrock_key_config.region is required: no base URL is set, so the regional endpoint " +
			service + ".{region}.amazonaws.com cannot be built")
	}
	for i := 0; i < len(region); i++ {
		c := region[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return "", badRequest("bedrock_key_config.region " + strconv.Quote(region) + " is not an AWS region name")
		}
	}
	return service + "." + region + ".amazonaws.com", nil
}

// modelID applies the key's inference profile ARN (see the package doc).
func modelID(model, arn string) string {
	if arn == "" || strings.HasPrefix(model, "arn:") {
		return model
	}
	if strings.HasSuffix(arn, "/") {
		return arn + model
	}
	return arn
}

// escapePathLabel escapes s as the AWS SDKs escape an HTTP path label:
// everything but unreserved characters, so ':' and '/' (model versions and
// ARNs) become %3A and %2F. url.PathEscape would leave ':' alone, and the
// service then computes a different canonical request than the signer.
func escapePathLabel(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// modelURL is the full URL of a model operation ("converse",
// "converse-stream", "invoke").
func modelURL(r reqInput, op string) (string, error) {
	if r.model == "" {
		return "", badRequest("no model id: the request must name a Bedrock model")
	}
	base, err := runtimeEndpoint(r)
	if err != nil {
		return "", err
	}
	return base + "/model/" + escapePathLabel(modelID(r.model, r.arn)) + "/" + op, nil
}

// appendSpec writes the UpstreamRequest JSON. url is final: the host signs
// exactly this URL.
func appendSpec(dst []byte, method, url string, body []byte, stream bool) []byte {
	dst = append(dst, `{"method":`...)
	dst = appendString(dst, method)
	dst = append(dst, `,"url":`...)
	dst = appendString(dst, url)
	if stream {
		// The host would default Accept to text/event-stream; Bedrock
		// answers streams in AWS event-stream framing.
		dst = append(dst, `,"headers":{"accept":"application/vnd.amazon.eventstream"}`...)
		dst = append(dst, `,"stream":true,"framing":"aws-eventstream"`...)
	} else {
		dst = append(dst, `,"headers":{"accept":"application/json"}`...)
	}
	if body != nil {
		dst = append(dst, `,"body":`...)
		dst = append(dst, body...)
	}
	return append(dst, '}')
}

func listModelsRequest(r reqInput) ([]byte, error) {
	// The model list is a control-plane call (bedrock., not
	// bedrock-runtime.). A base URL stands for a private or test endpoint
	// serving both, so it is used as is.
	var base string
	if r.baseURL != "" {
		base = strings.TrimRight(r.baseURL, "/")
	} else {
		host, err := regionalHost("bedrock", r.region)
		if err != nil {
			return nil, err
		}
		base = "https://" + host
	}
	return appendSpec(nil, "GET", base+"/foundation-models", nil, false), nil
}
