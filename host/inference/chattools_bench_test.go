package inference

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

type markerOnly struct{}

func (markerOnly) Marker() []byte { return []byte(`mcp"`) }
func (markerOnly) ServeChat(context.Context, []byte, ModelCaller) (*ChatToolsResult, *apierr.Error) {
	return nil, nil
}

// unscopedGate is a gate with a ChatScope no caller has rules in, as
// governance while no virtual key has mcp_configs: one atomic load.
type unscopedGate struct{ scoped atomic.Bool }

func (*unscopedGate) Admit(context.Context, *Admission) (Ticket, *apierr.Error) { return nil, nil }
func (g *unscopedGate) ChatScoped() bool                                        { return g.scoped.Load() }
func (g *unscopedGate) ChatScope(ctx context.Context, _, _, _ string) (context.Context, bool) {
	return ctx, true
}

// BenchmarkChatToolsMarkerCheck is what the ChatTools hook adds to a chat
// request that does not use it: one scan of the body for the marker, and
// with a gate that could scope callers (governance) its ChatScoped check.
func BenchmarkChatToolsMarkerCheck(b *testing.B) {
	body := plugintest.ChatRequest2KB()
	app := fiber.New()
	var fctx fasthttp.RequestCtx
	fctx.Request.Header.Set("Authorization", "Bearer sk-gw-0123456789012345678901234567890123456789012")
	c := app.AcquireCtx(&fctx)
	defer app.ReleaseCtx(c)
	for _, bc := range []struct {
		name string
		gate Gate
	}{{"no_gate", nil}, {"scoping_gate", &unscopedGate{}}} {
		b.Run(bc.name, func(b *testing.B) {
			s := New(Options{ChatTools: markerOnly{}, Gate: bc.gate})
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if s.wantsChatTools(c, TypeChat, body, "") {
					b.Fatal("marker found in a body without it")
				}
			}
		})
	}
}
