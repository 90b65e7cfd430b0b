package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/wasmgate/gateway/host/netguard"
)

// maxMetadataBytes caps discovery and token responses.
const maxMetadataBytes = 1 << 20

// newHTTPClient builds the client for MCP servers and OAuth endpoints. With
// guard, dials to loopback, private and reserved addresses are refused at
// connect time (netguard). Proxies from the environment are ignored, since
// through a proxy the guard would vet the proxy rather than the target.
// Redirects are not followed: OAuth and MCP endpoints answer directly, and
// a redirect could carry a bearer token to a host never configured.
func newHTTPClient(guard bool) *http.Client {
	d := &net.Dialer{Timeout: 15 * time.Second, KeepAlive: 30 * time.Second}
	if guard {
		d.Control = netguard.Control
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy: nil, DialContext: d.DialContext, ForceAttemptHTTP2: true,
			MaxIdleConns: 100, MaxIdleConnsPerHost: 10, IdleConnTimeout: 90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// getJSON fetches a JSON document (discovery metadata).
func (s *Service) getJSON(ctx context.Context, u string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, s.o.ConnectTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMetadataBytes))
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return decodeLimited(resp.Body, v)
}

func decodeLimited(r io.Reader, v any) error {
	b, err := io.ReadAll(io.LimitReader(r, maxMetadataBytes+1))
	if err != nil {
		return err
	}
	if len(b) > maxMetadataBytes {
		return fmt.Errorf("response larger than %d bytes", maxMetadataBytes)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	return nil
}
