package webhooks

import (
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/wasmgate/gateway/host/netguard"
)

// blockedAddr reports whether ip is non-public (see netguard.Blocked).
func blockedAddr(ip netip.Addr) bool { return netguard.Blocked(ip) }

// BlockedAddressError is returned when a delivery would connect to a
// non-public address and the endpoint does not allow private networks.
type BlockedAddressError = netguard.BlockedAddressError

// newTransport builds the delivery transport. Proxies from the environment
// are ignored: through a proxy the dial check would vet the proxy, not the
// receiver.
func newTransport(guard bool) *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if guard {
		d.Control = netguard.Control
	}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   10,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// newClient returns a client that never follows redirects: a 3xx is the
// receiver's answer (a failed attempt), and following it could lead the
// signed payload to a host that was never vetted or configured.
func newClient(guard bool) *http.Client {
	return &http.Client{
		Transport:     newTransport(guard),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// closeIdle drops pooled connections of c.
func closeIdle(c *http.Client) {
	if t, ok := c.Transport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
}
