package inference

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/netguard"
	"github.com/wasmgate/gateway/host/providers"
)

const chunkedAnswer = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
	"1a;name=value\r\nabcdefghijklmnopqrstuvwxyz\r\n" +
	"5\r\nhello\r\n" +
	"0\r\nX-Trailer: y\r\n\r\n"

// readyAfter is what chunkWatch must report once the answer's first n bytes
// arrived: the data of the chunks that arrived whole, CRLF included.
func readyAfter(n int) (ready int64, ended bool) {
	first := strings.Index(chunkedAnswer, "xyz\r\n") + 5
	second := strings.Index(chunkedAnswer, "hello\r\n") + 7
	switch {
	case n >= len(chunkedAnswer):
		return 31, true
	case n >= second:
		return 31, false
	case n >= first:
		return 26, false
	}
	return 0, false
}

func TestChunkWatchFollowsEverySplit(t *testing.T) {
	for cut := 0; cut <= len(chunkedAnswer); cut++ {
		var w chunkWatch
		w.feed([]byte(chunkedAnswer[:cut]))
		if r, e := readyAfter(cut); w.ready != r || (w.st == cwEnded) != e {
			t.Fatalf("after %d bytes: ready %d ended %v, want %d %v", cut, w.ready, w.st == cwEnded, r, e)
		}
		w.feed([]byte(chunkedAnswer[cut:]))
		if w.ready != 31 || w.st != cwEnded {
			t.Fatalf("split at %d: ready %d state %d at the end", cut, w.ready, w.st)
		}
	}
	var w chunkWatch
	for i := range len(chunkedAnswer) {
		w.feed([]byte{chunkedAnswer[i]})
		if r, e := readyAfter(i + 1); w.ready != r || (w.st == cwEnded) != e {
			t.Fatalf("byte by byte, after %d: ready %d, want %d", i+1, w.ready, r)
		}
	}
}

func TestChunkWatchClaimsNothingItDoesNotFollow(t *testing.T) {
	for name, answer := range map[string]string{
		"length-delimited": "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{\"a\":1}\r\n",
		"interim answer":   "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
		"bad chunk end":    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX5\r\nhello\r\n",
	} {
		var w chunkWatch
		w.feed([]byte(answer))
		if w.ready != 0 || w.st != cwLost {
			t.Errorf("%s: ready %d state %d, want nothing claimed", name, w.ready, w.st)
		}
		w.reset()
		if w.st != cwHeader || w.ready != 0 {
			t.Errorf("%s: reset left state %d", name, w.st)
		}
	}
}

// sseUpstream serves /stream: n events flushed one by one (a chunk each),
// gap apart, and closes sent once they are all written. New connections
// are counted.
type sseUpstream struct {
	srv       *httptest.Server
	conns     atomic.Int32
	sent      chan struct{}
	cancelled chan struct{}
	// burst, when set, holds the events back after the header until it
	// is closed, so they are all sent at once.
	burst chan struct{}
}

func newSSEUpstream(t *testing.T, tlsOn bool, n int, gap time.Duration) *sseUpstream {
	return newSSEUpstreamBurst(t, tlsOn, n, gap, nil)
}

func newSSEUpstreamBurst(t *testing.T, tlsOn bool, n int, gap time.Duration, burst chan struct{}) *sseUpstream {
	u := &sseUpstream{sent: make(chan struct{}, 16), cancelled: make(chan struct{}, 16), burst: burst}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if u.burst != nil {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-u.burst
		}
		for i := range n {
			if i > 0 && gap > 0 {
				select {
				case <-time.After(gap):
				case <-r.Context().Done():
					u.cancelled <- struct{}{}
					return
				}
			}
			fmt.Fprintf(w, "event: e\ndata: {\"i\":%d}\n\n", i)
			w.(http.Flusher).Flush()
		}
		u.sent <- struct{}{}
		if r.URL.Query().Get("hold") != "" {
			<-r.Context().Done()
			u.cancelled <- struct{}{}
		}
	}))
	u.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			u.conns.Add(1)
		}
	}
	if tlsOn {
		u.srv.StartTLS()
	} else {
		u.srv.Start()
	}
	t.Cleanup(u.srv.Close)
	return u
}

func (u *sseUpstream) roots() *x509.CertPool {
	if u.srv.TLS == nil {
		return nil
	}
	p := x509.NewCertPool()
	p.AddCert(u.srv.Certificate())
	return p
}

// openFast sends a streamed request on the fast path, as attempt does.
func openFast(t *testing.T, u *sseUpstream, path string, deadline time.Time) *attemptResult {
	t.Helper()
	client := newFastClientTLS(&providers.Provider{}, u.roots())
	resp, err := sendFast(client, u.srv.URL+path, []byte(`{}`), deadline, true)
	if err != nil {
		t.Fatal(err)
	}
	liftAnswerDeadline(resp) // as answered does once the stream is open
	res := &attemptResult{fresp: resp, cancel: func() {}}
	res.fbody = newFastBody(resp)
	res.reader = newEventReader("", res.body())
	return res
}

// TestFastStreamReusesItsConnection: a stream read to its end leaves its
// connection to the next request, in plaintext and through TLS.
func TestFastStreamReusesItsConnection(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tlsOn), func(t *testing.T) {
			u := newSSEUpstream(t, tlsOn, 8, 0)
			client := newFastClientTLS(&providers.Provider{}, u.roots())
			for round := range 3 {
				resp, err := sendFast(client, u.srv.URL+"/stream", []byte(`{}`), time.Now().Add(5*time.Second), true)
				if err != nil {
					t.Fatal(err)
				}
				res := &attemptResult{fresp: resp, cancel: func() {}}
				res.fbody = newFastBody(resp)
				if res.fbody.conn == nil || !res.fbody.chunked {
					t.Fatalf("conn %v chunked %v", res.fbody.conn, res.fbody.chunked)
				}
				res.reader = newEventReader("", res.body())
				var events []UpstreamEvent
				var rerr error
				for rerr == nil {
					var batch []UpstreamEvent
					batch, rerr = readBatch(res.reader, 64)
					events = append(events, batch...)
				}
				<-u.sent
				if rerr != io.EOF || len(events) != 8 || string(events[7].Data) != `{"i":7}` {
					t.Fatalf("round %d: %d events, end %v", round, len(events), rerr)
				}
				if !res.fbody.eof {
					t.Fatal("body read to its end is not marked so")
				}
				res.close()
			}
			if n := u.conns.Load(); n != 1 {
				t.Fatalf("%d connections for three whole streams, want one reused", n)
			}
		})
	}
}

// TestFastStreamBatchesWhatIsBuffered: events that arrived together are
// read as one batch although fasthttp returns a chunk per Read and, through
// TLS, the TLS layer a record per Read.
func TestFastStreamBatchesWhatIsBuffered(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		burst := make(chan struct{})
		u := newSSEUpstreamBurst(t, tlsOn, 8, 0, burst)
		res := openFast(t, u, "/stream", time.Now().Add(5*time.Second))
		close(burst) // the header was read; now the events, together
		<-u.sent
		time.Sleep(20 * time.Millisecond) // the last bytes cross loopback
		// The end arrived too: the batch comes with io.EOF.
		first, err := readBatch(res.reader, 64)
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		if len(first) < 2 {
			// Only a stalled first read could return one event alone:
			// the rest must be in one further batch.
			rest, err := readBatch(res.reader, 64)
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			if len(first)+len(rest) != 8 {
				t.Fatalf("tls=%v: batches of %d and %d events, want everything buffered read at once", tlsOn, len(first), len(rest))
			}
		} else if len(first) != 8 {
			t.Fatalf("tls=%v: first batch %d events of 8 that had all arrived", tlsOn, len(first))
		}
		res.close()
	}
}

// TestFastBodyClaimsOnlyChunkedFraming: a body that is not chunked could
// start like a chunk-size line ("deadbeef"); only fasthttp's own reading
// of the header says whether chunkWatch applies.
func TestFastBodyClaimsOnlyChunkedFraming(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "12")
		_, _ = io.WriteString(w, "deadbeef\r\n\r\n")
	}))
	defer srv.Close()
	resp, err := sendFast(newFastClient(&providers.Provider{}), srv.URL, []byte(`{}`), time.Now().Add(5*time.Second), true)
	if err != nil {
		t.Fatal(err)
	}
	b := newFastBody(resp)
	if b.chunked || b.Buffered() {
		t.Fatalf("chunked %v, buffered %v for a length-delimited body", b.chunked, b.Buffered())
	}
	if got, _ := io.ReadAll(b); string(got) != "deadbeef\r\n\r\n" {
		t.Fatalf("body %q", got)
	}
	(&attemptResult{fresp: resp, fbody: b, cancel: func() {}}).close()
}

func TestFastStreamOutlivesTheAnswerDeadline(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		u := newSSEUpstream(t, tlsOn, 4, 150*time.Millisecond)
		res := openFast(t, u, "/stream", time.Now().Add(200*time.Millisecond))
		n := 0
		for {
			_, err := res.reader.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("tls=%v, after %d events: %v (the answer deadline cut the stream)", tlsOn, n, err)
			}
			n++
		}
		res.close()
		if n != 4 {
			t.Fatalf("tls=%v: %d events of 4", tlsOn, n)
		}
	}
}

func TestFastStreamAbortedClosesTheConnection(t *testing.T) {
	u := newSSEUpstream(t, false, 1, 0)
	res := openFast(t, u, "/stream?hold=1", time.Now().Add(5*time.Second))
	if _, err := res.reader.next(); err != nil {
		t.Fatal(err)
	}
	res.close() // the client went away before the end
	select {
	case <-u.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream never saw the stream abandoned")
	}
}

func TestTransportEntryHonoursHTTPClient(t *testing.T) {
	var tc transportCache
	for _, c := range []struct {
		name, client, proxy string
		fast                bool
	}{
		{"openai", providers.HTTPClientAuto, providers.ProxyNone, true},
		{"groq", providers.HTTPClientNetHTTP, providers.ProxyNone, false},
		{"mistral", providers.HTTPClientAuto, providers.ProxyEnvironment, false},
	} {
		p := &providers.Provider{Name: c.name, UpdatedAt: time.Now()}
		p.NetworkConfig.HTTPClient, p.ProxyConfig.Type = c.client, c.proxy
		e, err := tc.entry(p, "")
		if err != nil {
			t.Fatal(err)
		}
		if (e.fast != nil) != c.fast {
			t.Errorf("%s (http_client %s, proxy %s): fast client %v, want %v", c.name, c.client, c.proxy, e.fast != nil, c.fast)
		}
	}
}

// TestUpstreamDialsRefuseMetadata: both clients' connections refuse a
// link-local destination (a provider host name resolving to the cloud's
// metadata service), before connecting; loopback stays reachable.
func TestUpstreamDialsRefuseMetadata(t *testing.T) {
	var tc transportCache
	e, err := tc.entry(&providers.Provider{Name: "openai", UpdatedAt: time.Now()}, "")
	if err != nil {
		t.Fatal(err)
	}
	for name, dial := range map[string]func(addr string) (net.Conn, error){
		"fasthttp": func(addr string) (net.Conn, error) { return dialUpstream(addr, nil, 5*time.Second) },
		"net/http": func(addr string) (net.Conn, error) { return e.tr.DialContext(t.Context(), "tcp", addr) },
	} {
		start := time.Now()
		_, err := dial("169.254.169.254:80")
		var me *netguard.MetadataAddressError
		if !errors.As(err, &me) || time.Since(start) > time.Second {
			t.Errorf("%s: dial to the metadata address: %v after %s", name, err, time.Since(start))
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c, err := dial(ln.Addr().String())
		if err != nil {
			t.Errorf("%s: loopback refused: %v", name, err)
		} else {
			c.Close()
		}
		ln.Close()
	}
}
