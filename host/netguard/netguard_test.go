package netguard

import (
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"
)

func TestMetadata(t *testing.T) {
	for addr, want := range map[string]bool{
		"169.254.169.254":        true, // AWS, GCP, Azure, Oracle metadata
		"169.254.170.2":          true, // ECS task metadata
		"fe80::1":                true,
		"::ffff:169.254.169.254": true,  // IPv4-mapped
		"64:ff9b::a9fe:a9fe":     true,  // NAT64 of 169.254.169.254
		"2002:a9fe:a9fe::1":      true,  // 6to4 of 169.254.169.254
		"fd00:ec2::254":          true,  // AWS over IPv6
		"100.100.100.200":        true,  // Alibaba Cloud
		"127.0.0.1":              false, // self-hosted servers are fine
		"10.0.0.5":               false,
		"192.168.1.2":            false,
		"::1":                    false,
		"fd12::1":                false,
		"100.100.100.201":        false,
		"8.8.8.8":                false,
	} {
		if got := Metadata(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Metadata(%s) = %t, want %t", addr, got, want)
		}
	}
}

// TestMetadataControlRefusesBeforeConnecting: the dial fails at once with
// a MetadataAddressError, whatever answers (or not) at the address.
func TestMetadataControlRefusesBeforeConnecting(t *testing.T) {
	d := net.Dialer{Timeout: 5 * time.Second, Control: MetadataControl}
	start := time.Now()
	_, err := d.Dial("tcp", "169.254.169.254:80")
	var me *MetadataAddressError
	if !errors.As(err, &me) || time.Since(start) > time.Second {
		t.Fatalf("dial: %v after %s, want a MetadataAddressError at once", err, time.Since(start))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("loopback refused: %v", err)
	}
	c.Close()
}
