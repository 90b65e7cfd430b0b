package upstreamauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrBadSignature is returned by VerifySigV4 when the signature does not match.
var ErrBadSignature = errors.New("upstreamauth: sigv4 signature mismatch")

// VerifySigV4 checks a received request's SigV4 Authorization header the way
// an AWS service does, covering only the headers it names. Fake upstreams use
// it to prove that what the host sends would be accepted.
func VerifySigV4(r *http.Request, body []byte, creds AWSCredentials, service string) error {
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, sigv4Algorithm+" ")
	if !ok {
		return fmt.Errorf("%w: not an %s Authorization header", ErrBadSignature, sigv4Algorithm)
	}
	fields := map[string]string{}
	for _, p := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		fields[k] = v
	}
	scopeParts := strings.Split(fields["Credential"], "/")
	if len(scopeParts) != 5 || scopeParts[4] != "aws4_request" || fields["SignedHeaders"] == "" || len(fields["Signature"]) != 64 {
		return fmt.Errorf("%w: malformed Authorization header", ErrBadSignature)
	}
	if scopeParts[0] != creds.AccessKeyID {
		return fmt.Errorf("%w: unknown access key", ErrBadSignature)
	}
	if scopeParts[3] != service {
		return fmt.Errorf("%w: scope service %q, want %q", ErrBadSignature, scopeParts[3], service)
	}
	amzDate := r.Header.Get("X-Amz-Date")
	if _, err := time.Parse(amzDateFormat, amzDate); err != nil || amzDate[:8] != scopeParts[1] {
		return fmt.Errorf("%w: bad or mismatched X-Amz-Date", ErrBadSignature)
	}
	names := strings.Split(fields["SignedHeaders"], ";")
	var ch strings.Builder
	for _, n := range names {
		var vals []string
		switch n {
		case "host":
			vals = []string{r.Host}
		case "content-length":
			vals = []string{strconv.FormatInt(r.ContentLength, 10)}
		default:
			vals = r.Header.Values(n)
		}
		if len(vals) == 0 {
			return fmt.Errorf("%w: signed header %q not sent", ErrBadSignature, n)
		}
		for i := range vals {
			vals[i] = collapseSpaces(vals[i])
		}
		ch.WriteString(n + ":" + strings.Join(vals, ",") + "\n")
	}
	sum := sha256.Sum256(body)
	canonical := strings.Join([]string{r.Method, canonicalURI(r.URL), canonicalQuery(r.URL.Query()),
		ch.String(), fields["SignedHeaders"], hex.EncodeToString(sum[:])}, "\n")
	scope := strings.Join(scopeParts[1:], "/")
	crSum := sha256.Sum256([]byte(canonical))
	sts := sigv4Algorithm + "\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(crSum[:])
	key := hmacSHA256([]byte("AWS4"+creds.SecretAccessKey), scopeParts[1])
	key = hmacSHA256(key, scopeParts[2])
	key = hmacSHA256(key, scopeParts[3])
	key = hmacSHA256(key, "aws4_request")
	want := hex.EncodeToString(hmacSHA256(key, sts))
	if !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		return ErrBadSignature
	}
	if creds.SessionToken != "" && r.Header.Get("X-Amz-Security-Token") != creds.SessionToken {
		return fmt.Errorf("%w: session token", ErrBadSignature)
	}
	return nil
}
