// Package netguard is the SSRF guard for outbound requests to URLs that
// users supply (webhook receivers, MCP servers, OAuth endpoints): it refuses
// connections to loopback, private, link-local and reserved addresses,
// judged on the address actually dialled so DNS rebinding cannot slip past.
package netguard

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// blockedPrefixes are the non-public ranges a guarded client may not reach. netip's Is* helpers cover loopback,
// RFC 1918, ULA, link-local and multicast; these add the rest.
var blockedPrefixes = mustPrefixes(
	"0.0.0.0/8",       // "this network"
	"100.64.0.0/10",   // carrier-grade NAT
	"169.254.0.0/16",  // link-local, cloud metadata 169.254.169.254
	"192.0.0.0/24",    // IETF protocol assignments
	"192.0.2.0/24",    // TEST-NET-1
	"192.88.99.0/24",  // 6to4 relay anycast
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // TEST-NET-2
	"203.0.113.0/24",  // TEST-NET-3
	"240.0.0.0/4",     // reserved, includes broadcast
	"::/96",           // unspecified, loopback and IPv4-compatible forms
	"64:ff9b:1::/48",  // local-use NAT64
	"100::/64",        // discard-only
	"2001:db8::/32",   // documentation
	"2001::/32",       // Teredo: tunnels to arbitrary IPv4
	"fc00::/7",        // unique local, includes fd00::/8
	"fec0::/10",       // deprecated site-local
	"fe80::/10",       // link-local
	"ff00::/8",        // multicast
)

// Prefixes whose addresses embed an IPv4 address that is judged instead.
var (
	nat64Prefix     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFourPrefix = netip.MustParsePrefix("2002::/16")
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// Blocked reports whether ip is loopback, private, link-local,
// multicast, unspecified or otherwise reserved. IPv4-mapped IPv6 addresses
// are judged as the IPv4 address they carry, and so are the IPv4 addresses
// embedded in NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses, because
// a dial to those forms reaches the embedded IPv4 host.
func Blocked(ip netip.Addr) bool {
	ip = reached(ip)
	if !ip.IsValid() {
		return true
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsUnspecified() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() {
		return true
	}
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// BlockedAddressError is returned when a connection would reach a
// non-public address.
type BlockedAddressError struct {
	Addr string
}

func (e *BlockedAddressError) Error() string {
	return fmt.Sprintf("refused to connect to %s: private or reserved address (private networks are not allowed for this destination)", e.Addr)
}

// Control is a net.Dialer Control func. It runs after name resolution, on the exact address about to be
// dialled, so a host name that resolves (or re-resolves) to a private
// address cannot slip past a check made earlier.
func Control(_ string, address string, _ syscall.RawConn) error {
	if host, ok := dialled(address, Blocked); !ok {
		return &BlockedAddressError{Addr: host}
	}
	return nil
}

// dialled judges the address about to be dialled ("host:port", host an IP
// once resolved): it returns the host and whether refuse let it pass.
func dialled(address string, refuse func(netip.Addr) bool) (string, bool) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return address, false
	}
	ip, err := netip.ParseAddr(host)
	return host, err == nil && !refuse(ip)
}

// reached is the address a dial to ip reaches: IPv4-mapped, NAT64
// (64:ff9b::/96) and 6to4 (2002::/16) addresses carry an IPv4 one.
func reached(ip netip.Addr) netip.Addr {
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64Prefix.Contains(ip):
			return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		case sixToFourPrefix.Contains(ip):
			return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
		}
	}
	return ip
}

// metadataAddrs are cloud instance-metadata services outside link-local
// space: AWS's IPv6 endpoint and Alibaba Cloud's.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("100.100.100.200"),
}

// Metadata reports whether ip is link-local (169.254.0.0/16, fe80::/10),
// where clouds serve instance metadata and credentials, or another known
// metadata address. It is the guard for destinations an operator
// configures on purpose, such as a provider's base URL: those may be
// loopback or private (a self-hosted model server), but no model server
// lives at a link-local address, and an upstream error quoting the
// metadata service's answer would hand its credentials to the caller.
func Metadata(ip netip.Addr) bool {
	ip = reached(ip)
	if ip.IsLinkLocalUnicast() {
		return true
	}
	for _, m := range metadataAddrs {
		if ip == m {
			return true
		}
	}
	return false
}

// MetadataAddressError is returned when a connection would reach a
// link-local or cloud-metadata address.
type MetadataAddressError struct {
	Addr string
}

func (e *MetadataAddressError) Error() string {
	return fmt.Sprintf("refused to connect to %s: link-local or cloud-metadata address", e.Addr)
}

// MetadataControl is a net.Dialer Control func refusing Metadata addresses;
// like Control it judges the address about to be dialled.
func MetadataControl(_ string, address string, _ syscall.RawConn) error {
	if host, ok := dialled(address, Metadata); !ok {
		return &MetadataAddressError{Addr: host}
	}
	return nil
}

// MetadataGuardedClient is an HTTP client with the given overall timeout
// whose connections refuse Metadata addresses: for token endpoints and
// other URLs that come with a provider's configuration.
func MetadataGuardedClient(timeout time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: MetadataControl}
	tr.DialContext = d.DialContext
	return &http.Client{Timeout: timeout, Transport: tr}
}
