package server_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/wasmgate/gateway/host/fakeupstream"
	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/server"
)

// BenchmarkPassthroughChat drives non-streamed OpenAI passthrough requests
// through the real Fiber app served on a loopback socket, with request
// logging on as shipped, against the fake OpenAI upstream. ns/op includes
// the client and the upstream on the same cores; allocs/op is dominated by
// the gateway (the fasthttp client allocates nothing per request).
func BenchmarkPassthroughChat(b *testing.B) {
	benchPassthrough(b, `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"Say hello in one short sentence."}]}`)
}

// BenchmarkPassthroughChatStream is BenchmarkPassthroughChat streamed: the
// fake upstream answers with six SSE events, passed through as they come.
func BenchmarkPassthroughChatStream(b *testing.B) {
	benchPassthrough(b, `{"model":"openai/gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Say hello in one short sentence."}]}`)
}

func benchPassthrough(b *testing.B, reqBody string) {
	up := httptest.NewServer(fakeupstream.NewSet(fakeupstream.Options{}))
	defer up.Close()
	g := testgw.Start(b, testgw.Options{ConfigYAML: fmt.Sprintf(`providers:
  openai:
    network_config: {base_url: "%s/v1"}
    keys: [{name: bench, value: sk-bench}]
`, up.URL), ServerOptions: []server.Option{testgw.PassthroughOpenAI()}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = g.Server.App().Listener(ln) }()
	url := "http://" + ln.Addr().String() + "/v1/chat/completions"
	body := []byte(reqBody)
	client := &fasthttp.Client{}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url)
	req.Header.SetMethod(http.MethodPost)
	req.Header.SetContentType("application/json")
	req.Header.Set("Authorization", "Bearer sk-bench")
	do := func() {
		req.SetBody(body)
		if err := client.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode() != http.StatusOK || !bytes.Contains(resp.Body(), []byte("hello")) {
			b.Fatalf("status %d: %s", resp.StatusCode(), resp.Body())
		}
	}
	for range 200 { // warm connections and pools
		do()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		do()
	}
}
