package upstreamauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsv4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The AWS SigV4 test suite's credentials and the "get-vanilla" /
// "post-vanilla" vectors.
var suiteCreds = AWSCredentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}

func TestSigV4AWSSuiteVectors(t *testing.T) {
	at := time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC)
	cases := []struct{ method, want string }{
		{"GET", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
		{"POST", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, "https://example.amazonaws.com/", nil)
		s := &SigV4{Credentials: suiteCreds, Region: "us-east-1", Service: "service"}
		if err := s.Sign(req, nil, at); err != nil {
			t.Fatal(err)
		}
		if got := req.Header.Get("Authorization"); got != c.want {
			t.Errorf("%s vanilla:\n got %s\nwant %s", c.method, got, c.want)
		}
		if got := req.Header.Get("X-Amz-Date"); got != "20150830T123600Z" {
			t.Errorf("x-amz-date = %q", got)
		}
	}
}

// sdkSign signs a clone with the official signer for comparison.
func sdkSign(t *testing.T, req *http.Request, body []byte, creds AWSCredentials, region string, at time.Time) string {
	t.Helper()
	c := req.Clone(context.Background())
	c.Header.Del("Authorization")
	sum := sha256.Sum256(body)
	err := awsv4.NewSigner().SignHTTP(context.Background(), aws.Credentials{
		AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey, SessionToken: creds.SessionToken,
	}, c, hex.EncodeToString(sum[:]), "bedrock", region, at)
	if err != nil {
		t.Fatal(err)
	}
	return c.Header.Get("Authorization")
}

func TestSigV4MatchesAWSSDK(t *testing.T) {
	at := time.Date(2024, 3, 7, 9, 5, 11, 0, time.UTC)
	body := []byte(`{"messages":[{"role":"user","content":[{"text":"hello"}]}]}`)
	withToken := suiteCreds
	withToken.SessionToken = "FwoGZXIvYXdzEXAMPLETOKEN//+=="
	cases := []struct {
		name   string
		method string
		url    string
		body   []byte
		creds  AWSCredentials
		hdr    map[string]string
	}{
		{"converse raw colon", "POST", "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-haiku-20240307-v1:0/converse", body, suiteCreds, nil},
		{"converse escaped colon (SDK wire form)", "POST", "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse", body, suiteCreds, nil},
		{"stream with session token", "POST", "https://bedrock-runtime.us-west-2.amazonaws.com/model/meta.llama3-8b-instruct-v1%3A0/converse-stream", body, withToken, map[string]string{"Accept": "application/vnd.amazon.eventstream"}},
		{"inference profile arn", "POST", "https://bedrock-runtime.us-east-1.amazonaws.com/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-3-5-sonnet-20241022-v2%3A0/invoke", body, suiteCreds, nil},
		{"get with query and spaces", "GET", "https://bedrock.us-east-1.amazonaws.com/foundation-models?byProvider=Anthropic&a=x%20y&a=b&z=~t", nil, suiteCreds, map[string]string{"X-Custom": "  a   b  "}},
		{"headers multi and user agent ignored", "POST", "https://bedrock-runtime.eu-central-1.amazonaws.com/model/amazon.titan-embed-text-v2:0/invoke", body, withToken, map[string]string{"Content-Type": "application/json", "User-Agent": "wasmgate/1", "X-Amzn-Trace-Id": "Root=1"}},
		{"explicit default port", "POST", "https://bedrock-runtime.us-east-1.amazonaws.com:443/model/x/converse", body, suiteCreds, nil},
		{"non-default port", "POST", "http://127.0.0.1:8123/model/cohere.command-r-v1:0/converse", body, suiteCreds, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			region := strings.Split(strings.TrimPrefix(c.url, "https://bedrock-runtime."), ".")[0]
			if !strings.Contains(c.url, "amazonaws.com") || strings.HasPrefix(c.url, "https://bedrock.") {
				region = "us-east-1"
			}
			var rd *bytes.Reader
			if c.body != nil {
				rd = bytes.NewReader(c.body)
			}
			var req *http.Request
			if rd != nil {
				req, _ = http.NewRequest(c.method, c.url, rd)
			} else {
				req, _ = http.NewRequest(c.method, c.url, nil)
			}
			for k, v := range c.hdr {
				req.Header.Set(k, v)
			}
			want := sdkSign(t, req, c.body, c.creds, region, at)
			s, err := NewBedrockSigner(c.creds, region)
			if err != nil {
				t.Fatal(err)
			}
			s.Now = func() time.Time { return at }
			if err := s.Apply(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if got := req.Header.Get("Authorization"); got != want {
				t.Errorf("authorization differs from AWS SDK:\n got %s\nwant %s", got, want)
			}
			if c.creds.SessionToken != "" && req.Header.Get("X-Amz-Security-Token") != c.creds.SessionToken {
				t.Error("session token header missing")
			}
			// The body must still be sendable after signing.
			if c.body != nil {
				rc, _ := req.GetBody()
				var b bytes.Buffer
				b.ReadFrom(rc)
				if !bytes.Equal(b.Bytes(), c.body) {
					t.Error("body consumed by signing")
				}
			}
		})
	}
}

func TestSigV4CanonicalURIDoubleEncodesModelID(t *testing.T) {
	req, _ := http.NewRequest("POST", "https://h/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse", nil)
	if got, want := canonicalURI(req.URL), "/model/anthropic.claude-3-haiku-20240307-v1%253A0/converse"; got != want {
		t.Errorf("canonical URI %q, want %q", got, want)
	}
	req, _ = http.NewRequest("POST", "https://h/model/anthropic.claude-3-haiku-20240307-v1:0/converse", nil)
	if got, want := canonicalURI(req.URL), "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse"; got != want {
		t.Errorf("canonical URI %q, want %q", got, want)
	}
	req, _ = http.NewRequest("GET", "https://h", nil)
	if got := canonicalURI(req.URL); got != "/" {
		t.Errorf("empty path -> %q", got)
	}
}

func TestSigV4ResignReplacesSignature(t *testing.T) {
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	req, _ := http.NewRequest("POST", "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse", strings.NewReader("{}"))
	s, _ := NewBedrockSigner(suiteCreds, "us-east-1")
	s.Now = func() time.Time { return at }
	s.Apply(context.Background(), req)
	first := req.Header.Get("Authorization")
	at = at.Add(time.Minute)
	s.Apply(context.Background(), req)
	second := req.Header.Get("Authorization")
	if first == second || strings.Count(second, "Signature=") != 1 {
		t.Errorf("re-sign: %q -> %q", first, second)
	}
	if want := sdkSign(t, req, []byte("{}"), suiteCreds, "us-east-1", at); second != want {
		t.Errorf("re-signed header differs from SDK:\n got %s\nwant %s", second, want)
	}
}

func TestSigV4PayloadHeaderOption(t *testing.T) {
	req, _ := http.NewRequest("POST", "https://h/x", strings.NewReader("abc"))
	s := &SigV4{Credentials: suiteCreds, Region: "us-east-1", Service: "s3", SignPayloadHeader: true}
	if err := s.Apply(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := req.Header.Get("X-Amz-Content-Sha256"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("content sha = %q", got)
	}
	if !strings.Contains(req.Header.Get("Authorization"), "x-amz-content-sha256") {
		t.Error("payload header not signed")
	}
}

func TestSigV4RequiresCredentials(t *testing.T) {
	if _, err := NewBedrockSigner(AWSCredentials{AccessKeyID: "a"}, "us-east-1"); err == nil {
		t.Error("missing secret accepted")
	}
	if _, err := NewBedrockSigner(suiteCreds, ""); err == nil {
		t.Error("missing region accepted")
	}
}

func TestSigV4UnbufferedBody(t *testing.T) {
	body := []byte(`{"x":1}`)
	req, _ := http.NewRequest("POST", "https://h/model/m/converse", nil)
	req.Body = readCloser{bytes.NewReader(body)}
	req.ContentLength = int64(len(body))
	at := time.Unix(1700000000, 0)
	s := &SigV4{Credentials: suiteCreds, Region: "us-east-1", Service: "bedrock", Now: func() time.Time { return at }}
	if err := s.Apply(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if want := sdkSign(t, req, body, suiteCreds, "us-east-1", at); req.Header.Get("Authorization") != want {
		t.Error("signature over unbuffered body differs from SDK")
	}
	var b bytes.Buffer
	b.ReadFrom(req.Body)
	if !bytes.Equal(b.Bytes(), body) {
		t.Error("body not restored")
	}
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

func TestVerifySigV4OverTheWire(t *testing.T) {
	creds := withSession()
	body := []byte(`{"messages":[]}`)
	var verr error
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		verr = VerifySigV4(r, b, creds, "bedrock")
	}))
	defer srv.Close()
	for _, path := range []string{"/model/anthropic.claude-3-haiku-20240307-v1:0/converse", "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream"} {
		req, _ := http.NewRequest("POST", srv.URL+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		s, _ := NewBedrockSigner(creds, "us-east-1")
		s.Apply(context.Background(), req)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if verr != nil {
			t.Errorf("%s: %v", path, verr)
		}
		// Tampering is detected.
		req, _ = http.NewRequest("POST", srv.URL+path, bytes.NewReader(body))
		s.Apply(context.Background(), req)
		req.Body = io.NopCloser(strings.NewReader(`{"messages":[1]}`))
		req.GetBody = nil
		req.ContentLength = 16
		resp, _ = srv.Client().Do(req)
		resp.Body.Close()
		if verr == nil {
			t.Errorf("%s: tampered body accepted", path)
		}
	}
}

func withSession() AWSCredentials {
	c := suiteCreds
	c.SessionToken = "tok"
	return c
}
