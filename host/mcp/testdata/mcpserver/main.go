// Command mcpserver is a real MCP server built with the official Go SDK for
// the gateway's MCP tests. It serves Streamable HTTP at /mcp and SSE at
// /sse, or speaks over stdio with -stdio. With -issuer it requires bearer
// tokens: JWT access tokens signed by the issuer's JWKS (RS256) whose aud
// is -resource; unauthenticated requests get 401 with WWW-Authenticate
// naming the protected-resource metadata (RFC 9728). With -header NAME=VALUE
// it requires that static header instead.
package main

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	stdio := flag.Bool("stdio", false, "serve over stdin/stdout")
	issuer := flag.String("issuer", "", "OAuth issuer whose JWKS signs access tokens (enables bearer auth)")
	resource := flag.String("resource", "", "this server's resource identifier (expected token audience)")
	header := flag.String("header", "", "require this static header, NAME=VALUE")
	flag.Parse()

	server := newServer()
	if *stdio {
		if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	getServer := func(*http.Request) *mcp.Server { return server }
	mux := http.NewServeMux()
	var protect func(http.Handler) http.Handler = func(h http.Handler) http.Handler { return h }
	switch {
	case *issuer != "":
		prmURL := "http://" + *addr + "/.well-known/oauth-protected-resource"
		mux.Handle("/.well-known/oauth-protected-resource", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource: *resource, AuthorizationServers: []string{*issuer}, ScopesSupported: []string{"mcp:tools"},
		}))
		v := &verifier{issuer: *issuer, audience: *resource}
		protect = auth.RequireBearerToken(v.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prmURL})
	case *header != "":
		name, want, _ := strings.Cut(*header, "=")
		protect = func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if subtle.ConstantTimeCompare([]byte(r.Header.Get(name)), []byte(want)) != 1 {
					http.Error(w, "missing or wrong "+name, http.StatusUnauthorized)
					return
				}
				h.ServeHTTP(w, r)
			})
		}
	}
	mux.Handle("/mcp", protect(mcp.NewStreamableHTTPHandler(getServer, nil)))
	mux.Handle("/sse", protect(mcp.NewSSEHandler(getServer, nil)))
	// Listen before announcing, so the test never dials a closed port.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("LISTEN http://%s\n", ln.Addr())
	log.Fatal(http.Serve(ln, mux))
}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "wasmgate-test-mcp", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes the text back"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two numbers"},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "Returns the server's process id"},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(os.Getpid())}}}, nil, nil
		})
	return s
}

// verifier checks RS256 JWT access tokens against the issuer's JWKS.
type verifier struct {
	issuer, audience string
	mu               sync.Mutex
	keys             map[string]*rsa.PublicKey
}

func (v *verifier) verify(ctx context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: not a JWT", auth.ErrInvalidToken)
	}
	var hdr struct{ Alg, Kid string }
	if err := decodeSegment(parts[0], &hdr); err != nil || hdr.Alg != "RS256" {
		return nil, fmt.Errorf("%w: bad header", auth.ErrInvalidToken)
	}
	key, err := v.key(ctx, hdr.Kid)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, fmt.Errorf("%w: bad signature encoding", auth.ErrInvalidToken)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, sum[:], sig); err != nil {
		return nil, fmt.Errorf("%w: signature", auth.ErrInvalidToken)
	}
	var claims struct {
		Iss   string          `json:"iss"`
		Aud   json.RawMessage `json:"aud"`
		Exp   int64           `json:"exp"`
		Scope string          `json:"scope"`
		Sub   string          `json:"sub"`
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return nil, fmt.Errorf("%w: claims", auth.ErrInvalidToken)
	}
	var auds []string
	if json.Unmarshal(claims.Aud, &auds) != nil {
		var one string
		_ = json.Unmarshal(claims.Aud, &one)
		auds = []string{one}
	}
	if claims.Iss != v.issuer || !slices.Contains(auds, v.audience) {
		return nil, fmt.Errorf("%w: wrong issuer or audience", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{Scopes: strings.Fields(claims.Scope), Expiration: time.Unix(claims.Exp, 0), UserID: claims.Sub}, nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func (v *verifier) key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if k, ok := v.keys[kid]; ok {
		return k, nil
	}
	var meta struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := getJSON(ctx, strings.TrimRight(v.issuer, "/")+"/.well-known/openid-configuration", &meta); err != nil {
		return nil, err
	}
	var set struct {
		Keys []struct{ Kid, Kty, N, E string }
	}
	if err := getJSON(ctx, meta.JWKSURI, &set); err != nil {
		return nil, err
	}
	v.keys = map[string]*rsa.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "RSA" {
			continue
		}
		n, err1 := base64.RawURLEncoding.DecodeString(k.N)
		e, err2 := base64.RawURLEncoding.DecodeString(k.E)
		if err1 != nil || err2 != nil {
			continue
		}
		v.keys[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	if k, ok := v.keys[kid]; ok {
		return k, nil
	}
	return nil, errors.New("unknown key id " + kid)
}

func getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
