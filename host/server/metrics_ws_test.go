package server_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/notify"
)

func TestMetricsNeedsManagementAuthAndAcceptsBasic(t *testing.T) {
	g := testgw.New(t, "GATEWAY_AUTH_CONFIG__ADMIN_USERNAME=admin", "GATEWAY_AUTH_CONFIG__ADMIN_PASSWORD=metrics-pass")
	g.Auth = testgw.NoAuth
	testgw.WantEnvelope(t, g.Do("GET", "/metrics", nil), 401, "missing_credentials")
	testgw.WantEnvelope(t, g.Do("GET", "/metrics", nil, func(r *http.Request) { r.Header.Set("Authorization", "Bearer sk-gw-x") }), 401, "virtual_key_not_allowed")
	g.Do("GET", "/health", nil)
	r := g.Do("GET", "/metrics", nil, func(r *http.Request) { r.SetBasicAuth("admin", "metrics-pass") })
	if r.Status != 200 {
		t.Fatalf("metrics: %d %s", r.Status, r.Body)
	}
	body := string(r.Body)
	for _, want := range []string{"go_goroutines", `wasmgate_http_requests_total{method="GET",route="/health",status="200"}`} {
		if !strings.Contains(body, want) {
			t.Fatalf("metrics lack %s:\n%.2000s", want, body)
		}
	}
}

func TestWebSocketNotifications(t *testing.T) {
	g := testgw.New(t, "GATEWAY_AUTH_CONFIG__ADMIN_USERNAME=admin", "GATEWAY_AUTH_CONFIG__ADMIN_PASSWORD=ws-password")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Server.Serve(ln) }()
	url := fmt.Sprintf("ws://%s/ws", ln.Addr())

	// No credentials: refused before the upgrade.
	_, resp, err := websocket.DefaultDialer.Dial(url, nil)
	if err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("unauthenticated ws: %v %v", err, resp)
	}
	h := http.Header{}
	h.Set("Authorization", "Basic "+basicCred("admin", "ws-password"))
	conn, _, err := websocket.DefaultDialer.Dial(url, h)
	if err != nil {
		t.Fatalf("dial with Basic: %v", err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var ev notify.Event
	if err := conn.ReadJSON(&ev); err != nil || ev.Type != "connected" {
		t.Fatalf("hello: %v %+v", err, ev)
	}
	deadline := time.Now().Add(3 * time.Second)
	for g.Server.Notify().Subscribers() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	g.Server.Notify().Publish(notify.Event{Type: "test.event", Data: map[string]string{"k": "v"}})
	_, msg, err := conn.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	_ = json.Unmarshal(msg, &got)
	if got["type"] != "test.event" {
		t.Fatalf("event: %s", msg)
	}
}

func basicCred(u, p string) string {
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth(u, p)
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
}
