package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/upstreamauth"
)

func TestServesEveryFamily(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-port", "0", "-aws-access-key-id", "AKIDBENCH", "-aws-secret-access-key", "bench-secret"}, io.Discard, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("bound %s", addr)
	}
	cases := []struct{ path, hdrKey, hdrVal, want string }{
		{"/v1/chat/completions", "Authorization", "Bearer k", "hello from openai"},
		{"/openai/v1/chat/completions", "Authorization", "Bearer k", "hello from openai"},
		{"/anthropic/v1/messages", "x-api-key", "k", "hello from anthropic"},
		{"/gemini/v1beta/models/g:generateContent", "x-goog-api-key", "k", "hello from gemini"},
		{"/cohere/v2/chat", "Authorization", "Bearer k", "hello from cohere"},
	}
	for _, c := range cases {
		req, _ := http.NewRequest("POST", "http://"+addr+c.path, strings.NewReader(`{"model":"m","messages":[]}`))
		req.Header.Set(c.hdrKey, c.hdrVal)
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %s", c.path, resp.StatusCode, b)
		}
	}
	// Bedrock under /bedrock: the signature covers the prefixed path.
	for _, secret := range []string{"bench-secret", "wrong"} {
		req, _ := http.NewRequest("POST", "http://"+addr+"/bedrock/model/amazon.nova-lite-v1%3A0/converse", strings.NewReader(`{"messages":[]}`))
		signer, _ := upstreamauth.NewBedrockSigner(upstreamauth.AWSCredentials{AccessKeyID: "AKIDBENCH", SecretAccessKey: secret}, "us-east-1")
		signer.Apply(context.Background(), req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ok := resp.StatusCode == 200 && strings.Contains(string(b), "hello from bedrock"); ok != (secret == "bench-secret") {
			t.Errorf("bedrock with secret %q: %d %s", secret, resp.StatusCode, b)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("did not shut down")
	}
}
