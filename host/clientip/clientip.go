// Package clientip tells who a request came from when the gateway runs
// behind proxies. Fiber's c.IP() with a proxy header returns the header as
// sent, and the left end of X-Forwarded-For is whatever the client wrote:
// a throttle keyed on it is escaped by changing it, and an audit record
// believes it. The only addresses worth believing are those the trusted
// proxies appended, so the client is the right-most address that is not a
// trusted proxy itself.
package clientip

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// localsKey holds a request's client address in fiber.Ctx Locals.
type localsKey struct{}

// Resolver finds client addresses behind a set of trusted proxies.
type Resolver struct {
	trusted []netip.Prefix
}

// New parses trusted proxies given as addresses or CIDR prefixes.
func New(proxies []string) (*Resolver, error) {
	r := &Resolver{}
	for _, p := range proxies {
		p = strings.TrimSpace(p)
		if pfx, err := netip.ParsePrefix(p); err == nil {
			r.trusted = append(r.trusted, pfx.Masked())
			continue
		}
		a, err := netip.ParseAddr(p)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q is neither an address nor a CIDR prefix", p)
		}
		a = a.Unmap()
		r.trusted = append(r.trusted, netip.PrefixFrom(a, a.BitLen()))
	}
	return r, nil
}

func (r *Resolver) isTrusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range r.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Resolve returns the client address of a request that arrived from peer
// with the given X-Forwarded-For header values (in order): peer itself
// unless it is a trusted proxy; otherwise, walking the list from its right
// end, the first address that is not a trusted proxy. An entry that is
// not an address ends the walk at the last proxy vouched for, since
// nothing left of it can be believed.
func (r *Resolver) Resolve(peer netip.Addr, forwardedFor []string) netip.Addr {
	peer = peer.Unmap()
	if !r.isTrusted(peer) {
		return peer
	}
	client := peer
	for i := len(forwardedFor) - 1; i >= 0; i-- {
		hops := strings.Split(forwardedFor[i], ",")
		for j := len(hops) - 1; j >= 0; j-- {
			a, ok := parseHop(hops[j])
			if !ok {
				return client
			}
			client = a
			if !r.isTrusted(a) {
				return a
			}
		}
	}
	return client
}

// parseHop reads one X-Forwarded-For entry: an address, possibly with a
// port, IPv6 possibly bracketed.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return a.Unmap(), true
	}
	return netip.Addr{}, false
}

// Middleware records each request's client address for Of. The gateway
// installs it only with trusted proxies; without, Of is the peer.
func (r *Resolver) Middleware() fiber.Handler {
	return func(c *fiber.Ctx) error {
		peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
		var xff []string
		c.Request().Header.VisitAll(func(k, v []byte) {
			if strings.EqualFold(string(k), fiber.HeaderXForwardedFor) {
				xff = append(xff, string(v))
			}
		})
		c.Locals(localsKey{}, r.Resolve(peer, xff).String())
		return c.Next()
	}
}

// Of is the client address of c: the one Middleware found, else the
// connection's peer. The string is the caller's own (it may be kept).
func Of(c *fiber.Ctx) string {
	if s, ok := c.Locals(localsKey{}).(string); ok {
		return s
	}
	return c.Context().RemoteIP().String()
}
