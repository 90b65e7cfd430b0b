// Package keepalive sends test requests over one keep-alive connection.
// fasthttp reuses a connection's request buffer for the next request on
// it, so this is how a test shows that a value kept from a request does
// not change under it (see the README on Fiber without Immutable).
package keepalive

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// Send serves app on a loopback listener and writes each raw HTTP/1.1
// request in turn on one connection, reading each answer before the next.
// It returns the statuses.
func Send(t testing.TB, app *fiber.App, requests ...string) []int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rd := bufio.NewReader(conn)
	statuses := make([]int, 0, len(requests))
	for _, r := range requests {
		if _, err := io.WriteString(conn, r); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
	}
	return statuses
}
