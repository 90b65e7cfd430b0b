package mcpgw

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

// client fails a test quickly instead of hanging it when the bridge holds
// a response back.
var client = &http.Client{Timeout: 10 * time.Second}

// serveFiber runs app on a real 127.0.0.1 listener for the test.
func serveFiber(t *testing.T, app *fiber.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.ShutdownWithTimeout(5 * time.Second) })
	return "http://" + ln.Addr().String()
}

// TestBridgeFlushesEachEvent proves SSE events reach the client when the
// handler flushes, not when it returns: the handler waits for the client
// to have read the first event before it writes the second.
func TestBridgeFlushesEachEvent(t *testing.T) {
	read := make(chan struct{})
	handlerDone := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Custom", "kept")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-read:
		case <-time.After(5 * time.Second):
			handlerDone <- fmt.Errorf("the first event never reached the client")
			return
		}
		fmt.Fprint(w, "data: two\n\n")
		handlerDone <- nil
	})
	app := fiber.New()
	app.All("/s", bridge(context.Background(), h))
	base := serveFiber(t, app)

	resp, err := client.Get(base + "/s")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("X-Custom") != "kept" ||
		resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d headers %v", resp.StatusCode, resp.Header)
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "data: one\n" {
		t.Fatalf("first line %q %v", line, err)
	}
	close(read)
	rest, _ := io.ReadAll(br)
	if err := <-handlerDone; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rest), "data: two") {
		t.Fatalf("rest %q", rest)
	}
}

// TestBridgeBufferedAnswerAndRequest checks a handler that never flushes is
// answered in one piece with its status, headers and the request it saw.
func TestBridgeBufferedAnswerAndRequest(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"method":%q,"path":%q,"query":%q,"hdr":%q,"body":%q}`, r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("X-In"), body)
	})
	app := fiber.New()
	app.All("/b", bridge(context.Background(), h))
	base := serveFiber(t, app)
	req, _ := http.NewRequest("POST", base+"/b?x=1", strings.NewReader("payload"))
	req.Header.Set("X-In", "v")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	want := `{"method":"POST","path":"/b","query":"x=1","hdr":"v","body":"payload"}`
	if resp.StatusCode != 201 || string(b) != want || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

// TestBridgeClientGoneCancelsHandler: when the client leaves a stream, the
// handler's context ends, so its goroutine does not linger.
func TestBridgeClientGoneCancelsHandler(t *testing.T) {
	ended := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(ended)
		w.Header().Set("Content-Type", "text/event-stream")
		for {
			if _, err := fmt.Fprint(w, "data: tick\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	app := fiber.New()
	app.All("/s", bridge(context.Background(), h))
	base := serveFiber(t, app)
	resp, err := client.Get(base + "/s")
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	if line != "data: tick\n" {
		t.Fatalf("line %q", line)
	}
	resp.Body.Close()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler kept running after the client left")
	}
}

// TestBridgeHandlerPanicIsAnEnvelope: a panic in the bridged handler is a
// 500 envelope, not a crash.
func TestBridgeHandlerPanicIsAnEnvelope(t *testing.T) {
	app := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error {
		return c.Status(500).SendString("envelope: " + err.Error())
	}})
	app.All("/p", bridge(context.Background(), http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })))
	base := serveFiber(t, app)
	resp, err := client.Get(base + "/p")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 500 || !strings.Contains(string(b), "boom") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}
