package upstreamauth

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// AWSCredentials are static AWS credentials; SessionToken is set for
// temporary (STS) credentials and is sent as X-Amz-Security-Token.
type AWSCredentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
}

// SigV4 signs requests with AWS Signature Version 4 in the Authorization
// header. It is implemented here (about 150 lines) instead of importing
// aws-sdk-go-v2's signer because that pulls the SDK core and smithy-go into
// the gateway binary for four HMACs; sigv4_test.go checks byte-identical
// Authorization headers against the official signer.
type SigV4 struct {
	Credentials AWSCredentials
	Region      string
	Service     string
	// SignPayloadHeader also sends and signs x-amz-content-sha256. Bedrock
	// does not need it (the official SDK does not send it); S3-style
	// services do.
	SignPayloadHeader bool
	// Now is the clock; nil means time.Now. Tests pin it.
	Now func() time.Time
}

// NewBedrockSigner returns a signer for the Bedrock runtime (service
// "bedrock", the signing name of bedrock-runtime endpoints).
func NewBedrockSigner(creds AWSCredentials, region string) (*SigV4, error) {
	if creds.AccessKeyID == "" || creds.SecretAccessKey == "" {
		return nil, ErrNoCredentials
	}
	if region == "" {
		return nil, fmt.Errorf("upstreamauth: bedrock signer: region is required")
	}
	return &SigV4{Credentials: creds, Region: region, Service: "bedrock"}, nil
}

// unsignedHeaders are never signed, matching the AWS SDKs: proxies and the
// transport may change them after signing.
var unsignedHeaders = map[string]bool{
	"authorization": true, "user-agent": true, "x-amzn-trace-id": true,
	"expect": true, "transfer-encoding": true,
}

const (
	sigv4Algorithm = "AWS4-HMAC-SHA256"
	amzDateFormat  = "20060102T150405Z"
)

// Apply signs req at the current time. The body is read through GetBody (set
// by http.NewRequest for in-memory bodies) or buffered and restored, so the
// request can still be sent and retried.
func (s *SigV4) Apply(_ context.Context, req *http.Request) error {
	body, err := requestBody(req)
	if err != nil {
		return fmt.Errorf("upstreamauth: sigv4: read body: %w", err)
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	return s.Sign(req, body, now())
}

// Sign signs req whose payload is body at time t.
func (s *SigV4) Sign(req *http.Request, body []byte, t time.Time) error {
	if s.Credentials.AccessKeyID == "" || s.Credentials.SecretAccessKey == "" {
		return ErrNoCredentials
	}
	t = t.UTC()
	amzDate := t.Format(amzDateFormat)
	day := amzDate[:8]
	sum := sha256.Sum256(body)
	payloadHash := hex.EncodeToString(sum[:])

	// Re-signing (a retry) must not sign the previous signature's headers.
	req.Header.Del("Authorization")
	req.Header.Set("X-Amz-Date", amzDate)
	if s.Credentials.SessionToken != "" {
		req.Header.Set("X-Amz-Security-Token", s.Credentials.SessionToken)
	} else {
		req.Header.Del("X-Amz-Security-Token")
	}
	if s.SignPayloadHeader {
		req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	}

	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	host = canonicalHost(req.URL.Scheme, host)
	signedNames, canonHeaders := canonicalHeaders(host, req.Header, req.ContentLength)

	canonical := strings.Join([]string{
		req.Method,
		canonicalURI(req.URL),
		canonicalQuery(req.URL.Query()),
		canonHeaders,
		signedNames,
		payloadHash,
	}, "\n")

	scope := day + "/" + s.Region + "/" + s.Service + "/aws4_request"
	crSum := sha256.Sum256([]byte(canonical))
	stringToSign := sigv4Algorithm + "\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(crSum[:])

	key := hmacSHA256([]byte("AWS4"+s.Credentials.SecretAccessKey), day)
	key = hmacSHA256(key, s.Region)
	key = hmacSHA256(key, s.Service)
	key = hmacSHA256(key, "aws4_request")
	sig := hex.EncodeToString(hmacSHA256(key, stringToSign))

	req.Header.Set("Authorization", sigv4Algorithm+" Credential="+s.Credentials.AccessKeyID+"/"+scope+
		", SignedHeaders="+signedNames+", Signature="+sig)
	return nil
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// canonicalHost drops a default port: Go's client does not send it in the
// Host header, so the service would not see it either.
func canonicalHost(scheme, host string) string {
	if h, port, ok := strings.Cut(host, ":"); ok && !strings.Contains(port, ":") {
		if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
			return h
		}
	}
	return host
}

// canonicalURI encodes the path as it goes on the wire once more. Non-S3
// services want every segment URI-encoded twice: a Bedrock model id
// "…-v1:0" is sent as "…-v1%3A0" and signed as "…-v1%253A0"; if the caller
// sends the ':' raw, it is signed as "%3A", which is what the service computes
// from that raw path.
func canonicalURI(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		return "/"
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if isUnreserved(c) || c == '/' {
			b.WriteByte(c)
			continue
		}
		b.WriteString("%" + strings.ToUpper(hex.EncodeToString([]byte{c})))
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

// canonicalQuery sorts after encoding, as the SigV4 specification says.
func canonicalQuery(q url.Values) string {
	pairs := make([]string, 0, len(q))
	for k, vs := range q {
		ek := awsQueryEscape(k)
		for _, v := range vs {
			pairs = append(pairs, ek+"="+awsQueryEscape(v))
		}
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

func awsQueryEscape(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }

// canonicalHeaders signs host, content-length and every header present at
// signing time except unsignedHeaders, as the AWS SDKs do.
func canonicalHeaders(host string, h http.Header, contentLength int64) (names, canonical string) {
	vals := map[string][]string{"host": {host}}
	if contentLength > 0 {
		vals["content-length"] = []string{strconv.FormatInt(contentLength, 10)}
	}
	for k, vs := range h {
		lk := strings.ToLower(k)
		if unsignedHeaders[lk] || lk == "content-length" || lk == "host" {
			continue
		}
		vals[lk] = append(vals[lk], vs...)
	}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(':')
		for i, v := range vals[k] {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(collapseSpaces(v))
		}
		b.WriteByte('\n')
	}
	return strings.Join(keys, ";"), b.String()
}

// requestBody returns the body bytes without consuming the request's body.
func requestBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	req.ContentLength = int64(len(b))
	return b, nil
}

// collapseSpaces trims and squeezes runs of spaces (only spaces, as the SDKs do).
func collapseSpaces(v string) string {
	v = strings.TrimSpace(v)
	if !strings.Contains(v, "  ") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == ' ' && i > 0 && v[i-1] == ' ' {
			continue
		}
		b.WriteByte(v[i])
	}
	return b.String()
}
