package clientip

import (
	"net/netip"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/internal/keepalive"
)

func TestResolve(t *testing.T) {
	r, err := New([]string{"10.0.0.1", "192.168.0.0/16", "::ffff:172.16.0.9"})
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.MustParseAddr
	for _, c := range []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"untrusted peer: its header is ignored", "203.0.113.7", []string{"1.2.3.4"}, "203.0.113.7"},
		{"one proxy", "10.0.0.1", []string{"198.51.100.4"}, "198.51.100.4"},
		{"client-written entries left of the proxy's are ignored", "10.0.0.1", []string{"6.6.6.6, 198.51.100.4"}, "198.51.100.4"},
		{"a chain of trusted proxies", "10.0.0.1", []string{"198.51.100.4, 192.168.3.3"}, "198.51.100.4"},
		{"repeated headers, in order", "10.0.0.1", []string{"6.6.6.6", "198.51.100.4, 192.168.1.1"}, "198.51.100.4"},
		{"IPv4-mapped proxy, port and brackets", "172.16.0.9", []string{"[2001:db8::1]:443"}, "2001:db8::1"},
		{"garbage stops at the last proxy vouched for", "10.0.0.1", []string{"198.51.100.4, not-an-ip, 192.168.1.1"}, "192.168.1.1"},
		{"no header: the proxy itself", "10.0.0.1", nil, "10.0.0.1"},
		{"only proxies: the left-most", "10.0.0.1", []string{"192.168.9.9, 192.168.1.1"}, "192.168.9.9"},
	} {
		if got := r.Resolve(addr(c.peer), c.xff); got != addr(c.want) {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	if _, err := New([]string{"proxy.internal"}); err == nil {
		t.Error("a host name was accepted as a trusted proxy")
	}
}

// TestMiddleware runs the resolver in a real server: a client behind the
// (loopback) proxy is told apart by the address the proxy appended, not by
// what it wrote itself, and the value Of returns is its own (two requests
// share one keep-alive connection).
func TestMiddleware(t *testing.T) {
	r, err := New([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(r.Middleware())
	var seen []string
	app.Get("/", func(c *fiber.Ctx) error { seen = append(seen, Of(c)); return c.SendStatus(204) })
	keepalive.Send(t, app,
		"GET / HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 9.9.9.9, 198.51.100.4\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 2001:db8::77\r\n\r\n")
	if len(seen) != 2 || seen[0] != "198.51.100.4" || seen[1] != "2001:db8::77" {
		t.Fatalf("clients seen: %q", seen)
	}
}
