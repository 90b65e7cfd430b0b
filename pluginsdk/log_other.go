//go:build !wasip1

package pluginsdk

import (
	"context"
	"log/slog"
	"os"
)

// Log writes a line to stderr outside wasm (a go-plugin subprocess's stderr
// is forwarded to the host's logger, so the call means the same there).
func Log(level int, msg string) {
	slog.New(slog.NewTextHandler(os.Stderr, nil)).Log(context.Background(), slog.Level(level), msg)
}
