package upstreamauth

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestAzureEntraIDClientCredentials(t *testing.T) {
	var mints atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		if r.URL.Path != "/tenant-1/oauth2/v2.0/token" || r.Method != "POST" {
			w.WriteHeader(404)
			return
		}
		r.ParseForm()
		f := r.PostForm
		if f.Get("grant_type") != "client_credentials" || f.Get("client_id") != "app-id" ||
			f.Get("client_secret") != "s3cr3t" || f.Get("scope") != "https://cognitiveservices.azure.com/.default" {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided."}`)
			return
		}
		n := mints.Add(1)
		// v2 sends numbers; accept the v1 string form too.
		fmt.Fprintf(w, `{"token_type":"Bearer","expires_in":"3599","ext_expires_in":3599,"access_token":"eyJ0.az-%d"}`, n)
	}))
	defer srv.Close()
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	a, err := NewAzureEntraID(AzureClientCredentials{TenantID: "tenant-1", ClientID: "app-id", ClientSecret: "s3cr3t", Authority: srv.URL + "/", Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", "https://res.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21", nil)
			if err := a.Apply(context.Background(), req); err != nil {
				t.Error(err)
				return
			}
			if got := req.Header.Get("Authorization"); got != "Bearer eyJ0.az-1" {
				t.Errorf("Authorization = %q", got)
			}
		}()
	}
	time.Sleep(30 * time.Millisecond)
	close(release)
	wg.Wait()
	if mints.Load() != 1 {
		t.Fatalf("%d mints, want 1", mints.Load())
	}
	clk.add(54 * time.Minute)
	a.Token(context.Background())
	if mints.Load() != 1 {
		t.Fatal("refreshed more than 5 min before expiry")
	}
	clk.add(2 * time.Minute)
	tok, _ := a.Token(context.Background())
	if mints.Load() != 2 || tok.AccessToken != "eyJ0.az-2" {
		t.Fatalf("not refreshed: %d %q", mints.Load(), tok.AccessToken)
	}

	bad, _ := NewAzureEntraID(AzureClientCredentials{TenantID: "tenant-1", ClientID: "app-id", ClientSecret: "wrong-secret-value", Authority: srv.URL})
	_, err = bad.Token(context.Background())
	if err == nil || !strings.Contains(err.Error(), "invalid_client") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "wrong-secret-value") {
		t.Fatalf("error leaks the secret: %v", err)
	}
}

func TestAzureConfigValidation(t *testing.T) {
	if _, err := NewAzureEntraID(AzureClientCredentials{TenantID: "t", ClientID: "c"}); err == nil {
		t.Error("missing secret accepted")
	}
	if _, err := NewAzureEntraID(AzureClientCredentials{TenantID: "t/../x", ClientID: "c", ClientSecret: "s"}); err == nil {
		t.Error("path in tenant accepted")
	}
}

func TestAzureBadTokenResponses(t *testing.T) {
	for name, body := range map[string]string{
		"no token":   `{"token_type":"Bearer","expires_in":3599}`,
		"bad expiry": `{"access_token":"x","expires_in":"soon"}`,
		"not json":   `<html>`,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) }))
		a, _ := NewAzureEntraID(AzureClientCredentials{TenantID: "t", ClientID: "c", ClientSecret: "s", Authority: srv.URL})
		if _, err := a.Token(context.Background()); err == nil {
			t.Errorf("%s: accepted", name)
		}
		srv.Close()
	}
}
