package inference

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/wasmgate/gateway/host/netguard"
)

// Streams on the fast path. fasthttp's client reads a streamed body in the
// caller's goroutine, with none of net/http's per-connection goroutines and
// their hand-offs (a thread wake-up each, most of a short stream's cost
// beyond the work itself). Two things it does not offer are added here:
//
//   - The response does not lead back to its connection, whose read
//     deadline (the wait for the answer to start) must be lifted before a
//     long stream hits it. Connections come from our Dial, and the local
//     address fasthttp keeps in the response carries the connection.
//   - A body Read returns at most one chunk. The upstream flushes an event
//     per chunk, so the emitter, which adapts and writes whatever has
//     arrived together in one guest call and one client write, would see
//     one event at a time even when many wait in fasthttp's buffer. The
//     connection follows the chunked framing of the bytes it hands to
//     fasthttp (chunkWatch), so the body can tell whether its next Read is
//     already buffered, as net/http's chunked reader does by itself.

// dialUpstream connects to addr, through TLS when tc is set. The TLS layer
// is ours, under the upstreamConn, so that the framing chunkWatch follows
// is the plaintext answer.
func dialUpstream(addr string, tc *tls.Config, timeout time.Duration) (net.Conn, error) {
	// Dialled like the net/http transport's connections: no link-local
	// (cloud metadata) destination, judged on the address dialled.
	d := net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: netguard.MetadataControl}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc != nil {
		t := tls.Client(c, tc)
		_ = t.SetDeadline(time.Now().Add(timeout))
		if err := t.Handshake(); err != nil {
			c.Close()
			return nil, fmt.Errorf("tls handshake with %s: %w", addr, err)
		}
		_ = t.SetDeadline(time.Time{})
		uc := newUpstreamConn(t)
		uc.tls = true
		return uc, nil
	}
	return newUpstreamConn(c), nil
}

// upstreamConn is a fast-path connection.
type upstreamConn struct {
	net.Conn
	local connAddr
	watch chunkWatch
	// tls: Conn is a TLS client, whose Read returns one record at most.
	tls bool
	// readDeadline is the one last set, restored after a TLS read-ahead.
	readDeadline time.Time
}

// connAddr is a local address that knows its connection.
type connAddr struct {
	net.Addr
	c *upstreamConn
}

func newUpstreamConn(c net.Conn) *upstreamConn {
	uc := &upstreamConn{Conn: c}
	uc.local = connAddr{Addr: c.LocalAddr(), c: uc}
	return uc
}

// Handshake is there for fasthttp, which takes a connection that has one
// for a TLS connection already (and does not add its own TLS layer): the
// handshake was done in dialUpstream.
func (c *upstreamConn) Handshake() error { return nil }

// LocalAddr implements net.Conn.
func (c *upstreamConn) LocalAddr() net.Addr { return &c.local }

// Write implements net.Conn. fasthttp's client does not pipeline: a request
// is written only once the previous answer was read, so a write starts the
// framing of a new answer.
func (c *upstreamConn) Write(p []byte) (int, error) {
	c.watch.reset()
	return c.Conn.Write(p)
}

// Read implements net.Conn. Through TLS it also takes the records already
// received whole: a TLS Read returns one record, an event when the
// upstream flushes each, so fasthttp's buffer, and what chunkWatch can
// vouch for, would never hold more than one event.
func (c *upstreamConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.tls && err == nil && n < len(p) {
		n += c.readReceived(p[n:])
	}
	c.watch.feed(p[:n])
	return n, err
}

// pastDeadline makes a read return at once when it would wait.
var pastDeadline = time.Unix(1, 0)

// readReceived reads what the TLS layer can decrypt without waiting for the
// network: with the read deadline in the past, a record not yet received
// whole ends the loop with a timeout, which crypto/tls treats as temporary
// (the partial record is kept for the next Read). Any other error is
// sticky in crypto/tls and surfaces on the next Read.
func (c *upstreamConn) readReceived(p []byte) int {
	if c.Conn.SetReadDeadline(pastDeadline) != nil {
		return 0
	}
	n := 0
	for n < len(p) {
		m, err := c.Conn.Read(p[n:])
		n += m
		if err != nil {
			break
		}
	}
	_ = c.Conn.SetReadDeadline(c.readDeadline)
	return n
}

// SetReadDeadline implements net.Conn.
func (c *upstreamConn) SetReadDeadline(t time.Time) error {
	c.readDeadline = t
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline implements net.Conn.
func (c *upstreamConn) SetDeadline(t time.Time) error {
	c.readDeadline = t
	return c.Conn.SetDeadline(t)
}

// connOf is the connection resp was read on, or nil.
func connOf(resp *fasthttp.Response) *upstreamConn {
	if a, ok := resp.LocalAddr().(*connAddr); ok {
		return a.c
	}
	return nil
}

// newFastBody is resp's streamed body, or nil when it has none.
func newFastBody(resp *fasthttp.Response) *fastBody {
	bs := resp.BodyStream()
	if bs == nil {
		return nil
	}
	return &fastBody{r: bs, conn: connOf(resp), chunked: resp.Header.ContentLength() == -1}
}

// fastBody is a streamed fast-path body.
type fastBody struct {
	r    io.Reader
	conn *upstreamConn
	// chunked: the answer's framing is what chunkWatch follows.
	chunked bool
	n       int64 // body bytes read
	eof     bool  // the body was read to its end: the connection is reusable
}

func (b *fastBody) Read(p []byte) (int, error) {
	if b.eof {
		// fasthttp v1.52 would look for another chunk and block.
		return 0, io.EOF
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// Buffered reports whether the next Read returns without waiting for the
// upstream: more data, or the end, is in fasthttp's buffer already.
func (b *fastBody) Buffered() bool {
	if b.eof || !b.chunked || b.conn == nil {
		return false
	}
	w := &b.conn.watch
	return w.ready > b.n || w.st == cwEnded
}
