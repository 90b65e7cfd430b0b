package auth_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/wasmgate/gateway/host/internal/testgw"
)

// TestThrottleKeyOwnsItsBytes: behind a trusted proxy the throttle counts
// failures per X-Forwarded-For value, which points into the connection's
// request buffer. The next request on that connection (another client,
// same header length) must not rewrite the throttled client's entry.
func TestThrottleKeyOwnsItsBytes(t *testing.T) {
	base := behindProxy(t)
	proxy := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	t.Cleanup(proxy.CloseIdleConnections)
	other := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	send := func(c *http.Client, client, token string, want int) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/api/config", nil)
		req.Header.Set("X-Forwarded-For", client)
		req.Header.Set("X-Gateway-Setup-Token", token)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("client %s: %d %s, want %d", client, resp.StatusCode, raw, want)
		}
	}
	send(proxy, "203.0.113.7", "wrong", 403)
	send(proxy, "203.0.113.7", "wrong", 403)
	// Another client through the same proxy connection.
	send(proxy, "203.0.113.9", testgw.SetupToken, 200)
	// The first client, on another connection, is still throttled.
	send(other, "203.0.113.7", "wrong", 429)
}

// TestThrottleIgnoresSpoofedForwardedFor: what a client writes into
// X-Forwarded-For itself sits left of what the trusted proxy appends, and
// changing it must not buy a fresh quota of guesses.
func TestThrottleIgnoresSpoofedForwardedFor(t *testing.T) {
	base := behindProxy(t)
	for i, want := range []int{403, 403, 429, 429} {
		req, _ := http.NewRequest("GET", base+"/api/config", nil)
		// The client's own invention, then the address the proxy saw.
		req.Header.Set("X-Forwarded-For", fmt.Sprintf("6.6.6.%d, 203.0.113.7", i))
		req.Header.Set("X-Gateway-Setup-Token", "wrong")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("attempt %d: %d, want %d", i+1, resp.StatusCode, want)
		}
	}
}

// behindProxy serves a gateway that trusts the loopback proxy and allows
// two failed logins a minute, and returns its base URL.
func behindProxy(t *testing.T) string {
	g := testgw.Start(t, testgw.Options{ConfigYAML: "server:\n  trusted_proxies: [127.0.0.1]\n" +
		"auth_config:\n  login_attempts_per_minute: 2\n"})
	return g.Listen()
}
