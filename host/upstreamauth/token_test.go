package upstreamauth

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a settable clock shared by a token source and the test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var testRSAKey = func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
}()

func serviceAccountJSON(t *testing.T, tokenURI string, pkcs1 bool) []byte {
	t.Helper()
	var block *pem.Block
	if pkcs1 {
		block = &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(testRSAKey)}
	} else {
		der, err := x509.MarshalPKCS8PrivateKey(testRSAKey)
		if err != nil {
			t.Fatal(err)
		}
		block = &pem.Block{Type: "PRIVATE KEY", Bytes: der}
	}
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "proj-1", "private_key_id": "kid-123",
		"private_key": string(pem.EncodeToMemory(block)), "client_email": "gw@proj-1.iam.gserviceaccount.com",
		"client_id": "1", "token_uri": tokenURI,
	})
	return b
}

// googleTokenServer verifies the JWT-bearer assertion like Google does:
// signature with the public key, aud, iss, scope and lifetime.
type googleTokenServer struct {
	*httptest.Server
	mints    atomic.Int32
	block    chan struct{} // when non-nil, each mint waits on it
	failWith int
	lastErr  atomic.Value
}

func newGoogleTokenServer(t *testing.T) *googleTokenServer {
	g := &googleTokenServer{}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.block != nil {
			<-g.block
		}
		if g.failWith != 0 {
			w.WriteHeader(g.failWith)
			fmt.Fprint(w, `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`)
			return
		}
		if err := g.verify(r); err != nil {
			g.lastErr.Store(err.Error())
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":"invalid_grant","error_description":%q}`, err.Error())
			return
		}
		n := g.mints.Add(1)
		fmt.Fprintf(w, `{"access_token":"ya29.token-%d","expires_in":3599,"token_type":"Bearer"}`, n)
	}))
	t.Cleanup(g.Close)
	return g
}

func (g *googleTokenServer) verify(r *http.Request) error {
	if r.Method != "POST" || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		return errors.New("want form POST")
	}
	if err := r.ParseForm(); err != nil {
		return err
	}
	if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		return errors.New("bad grant_type")
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		return errors.New("assertion is not a JWT")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&testRSAKey.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	var hdr map[string]string
	hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
	json.Unmarshal(hb, &hdr)
	if hdr["alg"] != "RS256" || hdr["typ"] != "JWT" || hdr["kid"] != "kid-123" {
		return fmt.Errorf("header %v", hdr)
	}
	var c struct {
		Iss, Scope, Aud string
		Iat, Exp        int64
	}
	cb, _ := base64.RawURLEncoding.DecodeString(parts[1])
	if err := json.Unmarshal(cb, &c); err != nil {
		return err
	}
	if c.Iss != "gw@proj-1.iam.gserviceaccount.com" || c.Aud != g.URL+"/token" || c.Scope != CloudPlatformScope || c.Exp-c.Iat != 3600 {
		return fmt.Errorf("claims %+v", c)
	}
	return nil
}

func TestGoogleServiceAccountMintsVerifiedToken(t *testing.T) {
	for _, pkcs1 := range []bool{false, true} {
		srv := newGoogleTokenServer(t)
		g, err := NewGoogleServiceAccount(GoogleConfig{CredentialsJSON: serviceAccountJSON(t, srv.URL+"/token", pkcs1)})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/l/publishers/google/models/m:generateContent", nil)
		if err := g.Apply(context.Background(), req); err != nil {
			t.Fatalf("pkcs1=%v: %v (server said %v)", pkcs1, err, srv.lastErr.Load())
		}
		if got := req.Header.Get("Authorization"); got != "Bearer ya29.token-1" {
			t.Errorf("Authorization = %q", got)
		}
	}
}

func TestGoogleTokenCachedUntilFiveMinutesBeforeExpiry(t *testing.T) {
	srv := newGoogleTokenServer(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	g, err := NewGoogleServiceAccount(GoogleConfig{CredentialsJSON: serviceAccountJSON(t, srv.URL+"/token", false), Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tok, _ := g.Token(ctx)
	clk.add(50 * time.Minute) // 3599 s life: still > 5 min left
	tok2, _ := g.Token(ctx)
	if tok2.AccessToken != tok.AccessToken || srv.mints.Load() != 1 {
		t.Fatalf("re-minted too early: %d mints", srv.mints.Load())
	}
	clk.add(5 * time.Minute) // 55 min: less than 5 min left
	tok3, _ := g.Token(ctx)
	if tok3.AccessToken == tok.AccessToken || srv.mints.Load() != 2 {
		t.Fatalf("not refreshed within 5 min of expiry: %d mints", srv.mints.Load())
	}
}

func TestGoogleConcurrentCallersMintOnce(t *testing.T) {
	srv := newGoogleTokenServer(t)
	srv.block = make(chan struct{})
	g, _ := NewGoogleServiceAccount(GoogleConfig{CredentialsJSON: serviceAccountJSON(t, srv.URL+"/token", false)})
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, err := g.Token(context.Background())
			if err == nil && tok.AccessToken != "ya29.token-1" {
				err = fmt.Errorf("got %q", tok.AccessToken)
			}
			errs <- err
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(srv.block)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.mints.Load(); n != 1 {
		t.Fatalf("%d mints, want 1", n)
	}
}

func TestGoogleErrorsCarryNoSecrets(t *testing.T) {
	srv := newGoogleTokenServer(t)
	srv.failWith = 400
	sa := serviceAccountJSON(t, srv.URL+"/token", false)
	g, _ := NewGoogleServiceAccount(GoogleConfig{CredentialsJSON: sa})
	_, err := g.Token(context.Background())
	if err == nil || !strings.Contains(err.Error(), "invalid_grant") || !strings.Contains(err.Error(), "400") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), "assertion") || strings.Contains(err.Error(), "eyJ") {
		t.Fatalf("error leaks credentials: %v", err)
	}
}

func TestGoogleParseErrors(t *testing.T) {
	for name, in := range map[string]string{
		"not json":    `{"private_key": "-----BEGIN`,
		"no email":    `{"type":"service_account","private_key":"x"}`,
		"wrong type":  `{"type":"authorized_user","client_email":"a"}`,
		"no pem":      `{"type":"service_account","client_email":"a@b","private_key":"secretstuff"}`,
		"garbage pem": `{"type":"service_account","client_email":"a@b","private_key":"-----BEGIN PRIVATE KEY-----\nc2VjcmV0c3R1ZmY=\n-----END PRIVATE KEY-----\n"}`,
	} {
		_, err := NewGoogleServiceAccount(GoogleConfig{CredentialsJSON: []byte(in)})
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), "secretstuff") || strings.Contains(err.Error(), "c2VjcmV0") {
			t.Errorf("%s: error quotes key material: %v", name, err)
		}
	}
}

func TestTokenWaitHonoursContextAndOthersStillGetToken(t *testing.T) {
	srv := newGoogleTokenServer(t)
	srv.block = make(chan struct{})
	g, _ := NewGoogleServiceAccount(GoogleConfig{CredentialsJSON: serviceAccountJSON(t, srv.URL+"/token", false)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := g.Token(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
	// The mint the first caller started keeps going for the next caller.
	done := make(chan error)
	go func() { _, err := g.Token(context.Background()); done <- err }()
	close(srv.block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := srv.mints.Load(); n != 1 {
		t.Fatalf("%d mints", n)
	}
}

func TestTokenMintTimeout(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	c := newTokenCache(func(ctx context.Context) (Token, error) {
		return exchange(ctx, srv.Client(), "test", srv.URL, nil, time.Now())
	}, nil, 50*time.Millisecond)
	_, err := c.token(context.Background())
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestStaleTokenServedWhenRefreshFails(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	calls := 0
	c := newTokenCache(func(ctx context.Context) (Token, error) {
		calls++
		if calls > 1 {
			return Token{}, errors.New("idp down")
		}
		return Token{AccessToken: "a", TokenType: "Bearer", Expiry: clk.now().Add(time.Hour)}, nil
	}, clk.now, 0)
	c.token(context.Background())
	clk.add(57 * time.Minute)
	tok, err := c.token(context.Background())
	if err != nil || tok.AccessToken != "a" {
		t.Fatalf("stale token not served: %v", err)
	}
	clk.add(4 * time.Minute)
	if _, err := c.token(context.Background()); err == nil {
		t.Fatal("expired token served")
	}
}

func TestShortLivedTokenRefreshesAtHalfLife(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	calls := 0
	c := newTokenCache(func(ctx context.Context) (Token, error) {
		calls++
		return Token{AccessToken: fmt.Sprint(calls), Expiry: clk.now().Add(2 * time.Minute)}, nil
	}, clk.now, 0)
	c.token(context.Background())
	c.token(context.Background())
	if calls != 1 {
		t.Fatalf("short-lived token not cached: %d", calls)
	}
	clk.add(61 * time.Second)
	c.token(context.Background())
	if calls != 2 {
		t.Fatalf("not refreshed after half life: %d", calls)
	}
}
