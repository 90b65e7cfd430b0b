package inference

import (
	"context"
	"testing"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

type markerOnly struct{}

func (markerOnly) Marker() []byte { return []byte(`mcp"`) }
func (markerOnly) ServeChat(context.Context, []byte, ModelCaller) (*ChatToolsResult, *apierr.Error) {
	return nil, nil
}

// BenchmarkChatToolsMarkerCheck is what the ChatTools hook adds to a chat
// request that does not use it: one scan of the body for the marker.
func BenchmarkChatToolsMarkerCheck(b *testing.B) {
	s := New(Options{ChatTools: markerOnly{}})
	body := plugintest.ChatRequest2KB()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if s.wantsChatTools(TypeChat, body) {
			b.Fatal("marker found in a body without it")
		}
	}
}
