package mcpgw

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/mcpaccess"
)

// bridge serves a net/http handler (the MCP SDK's) from Fiber. fasthttp's
// own adaptor buffers the whole response and ignores Flush, which would
// hold back every SSE event until the handler returns; this bridge runs the
// handler in a goroutine and, once it flushes, streams what it writes
// through fasthttp's body stream writer, flushing each time it does.
//
// The request is copied (body, headers, URL) because the handler may
// outlive the Fiber handler, whose buffers fasthttp reuses. Its context
// derives from base and is cancelled when the client goes away, so the
// handler goroutine always ends; of the Fiber request's context it keeps
// only the caller's MCP tool policy.
func bridge(base context.Context, h http.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx, cancel := context.WithCancel(base)
		// The SDK's DNS-rebinding guard reads the local address: a
		// loopback listener only answers loopback Host headers.
		ctx = context.WithValue(ctx, http.LocalAddrContextKey, c.Context().LocalAddr())
		if p := mcpaccess.FromContext(c.UserContext()); p != nil {
			// The caller's MCP tool policy (set when it authenticated)
			// reaches the SDK's handlers, which run under this context.
			ctx = mcpaccess.NewContext(ctx, p)
		}
		// The method too: c.Method() is a view of fasthttp's header buffer.
		req, err := http.NewRequestWithContext(ctx, strings.Clone(c.Method()), string(c.Request().URI().RequestURI()),
			bytes.NewReader(append([]byte(nil), c.Body()...)))
		if err != nil {
			cancel()
			return apierr.BadRequest("invalid_request", "", fmt.Sprintf("unusable request: %v", err))
		}
		c.Request().Header.VisitAll(func(k, v []byte) { req.Header.Add(string(k), string(v)) })
		req.Host = string(c.Request().Host())
		req.RemoteAddr = remoteAddr(c.Context().RemoteAddr())
		req.ContentLength = int64(len(c.Body()))

		w := newStreamWriter()
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() {
				if p := recover(); p != nil {
					w.panicked(fmt.Errorf("mcp handler panic: %v", p))
				}
			}()
			h.ServeHTTP(w, req)
		}()
		select {
		case <-done:
			defer cancel()
			return w.send(c)
		case <-w.flushed:
		}
		// Streaming: headers now, then the body as the handler flushes it.
		w.mu.Lock()
		status, header := w.status, w.sent
		w.mu.Unlock()
		copyHeader(c, header)
		c.Status(status)
		c.Context().SetBodyStreamWriter(func(bw *bufio.Writer) {
			defer cancel()
			for {
				var end bool
				select {
				case <-w.notify:
				case <-done:
					end = true
				}
				if err := w.drain(bw); err != nil {
					w.gone()
					cancel() // the client left: stop the handler
					<-done
					return
				}
				if end {
					return
				}
			}
		})
		return nil
	}
}

// copyHeader sets the handler's headers on the Fiber response, except the
// framing ones fasthttp computes itself (a copied Content-Length would
// contradict a streamed body).
func copyHeader(c *fiber.Ctx, h http.Header) {
	for k, vs := range h {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Transfer-Encoding", "Connection":
			continue
		}
		for _, v := range vs {
			c.Response().Header.Add(k, v)
		}
	}
}

func remoteAddr(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

var errClientGone = errors.New("mcpgw: client went away")

// streamWriter is the http.ResponseWriter handed to the bridged handler.
type streamWriter struct {
	mu     sync.Mutex
	header http.Header
	sent   http.Header // header as of WriteHeader, as net/http freezes it
	status int
	buf    bytes.Buffer
	closed bool
	panic  error

	notify    chan struct{} // data or a flush is pending
	flushed   chan struct{} // closed at the first Flush: stream from now on
	flushOnce sync.Once
}

func newStreamWriter() *streamWriter {
	return &streamWriter{header: http.Header{}, notify: make(chan struct{}, 1), flushed: make(chan struct{})}
}

func (w *streamWriter) Header() http.Header { return w.header }

func (w *streamWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeaderLocked(code)
}

func (w *streamWriter) writeHeaderLocked(code int) {
	if w.sent != nil {
		return
	}
	w.status, w.sent = code, w.header.Clone()
}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeaderLocked(http.StatusOK)
	if w.closed {
		return 0, errClientGone
	}
	return w.buf.Write(p)
}

// Flush implements http.Flusher: it starts streaming and wakes the writer.
func (w *streamWriter) Flush() {
	w.mu.Lock()
	w.writeHeaderLocked(http.StatusOK)
	w.mu.Unlock()
	w.flushOnce.Do(func() { close(w.flushed) })
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// drain writes what the handler wrote so far to the client and flushes.
func (w *streamWriter) drain(bw *bufio.Writer) error {
	w.mu.Lock()
	chunk := append([]byte(nil), w.buf.Bytes()...)
	w.buf.Reset()
	w.mu.Unlock()
	if len(chunk) > 0 {
		if _, err := bw.Write(chunk); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func (w *streamWriter) gone() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}

func (w *streamWriter) panicked(err error) {
	w.mu.Lock()
	w.panic = err
	w.mu.Unlock()
}

// send answers a handler that finished without flushing, in one piece.
func (w *streamWriter) send(c *fiber.Ctx) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.panic != nil && w.sent == nil {
		return apierr.Internal(w.panic)
	}
	w.writeHeaderLocked(http.StatusOK)
	copyHeader(c, w.sent)
	return c.Status(w.status).Send(append([]byte(nil), w.buf.Bytes()...))
}
