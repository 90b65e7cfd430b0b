package inference

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/providers"
)

// TestClosingPoolsClosesFastConnections: Service.Close (closeAll) and a
// provider change close the idle keep-alive connections of both upstream
// clients. The fast client keeps its own pool; closing only net/http's
// left its connections open to the upstream, for up to 90 s after a
// provider change and until the process exited after Close.
func TestClosingPoolsClosesFastConnections(t *testing.T) {
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{}`))
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch s {
		case http.StateNew:
			open[c] = true
		case http.StateClosed, http.StateHijacked:
			delete(open, c)
		}
	}
	srv.Start()
	defer srv.Close()
	openConns := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(open)
	}
	waitClosed := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); openConns() != 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d upstream connections still open", what, openConns())
			}
		}
	}
	var tc transportCache
	p := &providers.Provider{Name: "openai", UpdatedAt: time.Now()}
	call := func() {
		t.Helper()
		e, err := tc.entry(p, "")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := sendFast(e.fast, srv.URL+"/v1/chat/completions", []byte(`{}`), time.Now().Add(5*time.Second), false)
		if err != nil {
			t.Fatal(err)
		}
		(&attemptResult{fresp: resp, cancel: func() {}}).close()
		if openConns() != 1 {
			t.Fatalf("%d upstream connections after one exchange, want its keep-alive one", openConns())
		}
	}

	call()
	tc.closeAll()
	waitClosed("after closeAll")

	call()
	p.UpdatedAt = p.UpdatedAt.Add(time.Second) // a settings change: a new pool
	if _, err := tc.entry(p, ""); err != nil {
		t.Fatal(err)
	}
	waitClosed("after the provider changed")
}
