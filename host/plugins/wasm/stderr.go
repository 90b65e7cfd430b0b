package wasm

import (
	"bytes"
	"log/slog"
	"sync"
)

// stderrWriter forwards a guest's stdout/stderr to the logger line by line,
// up to a byte limit per instance, and keeps a short tail so a trap's error
// can quote what the guest printed (the Go runtime prints the panic text).
type stderrWriter struct {
	mu      sync.Mutex
	log     *slog.Logger
	limit   int
	written int
	line    []byte
	head    []byte // the start of what the current call printed
	dropped bool
}

// headSize bounds what is kept per call for error messages: the Go runtime
// prints the reason ("panic: ...", "fatal error: out of memory") first and
// the goroutine dump after it.
const headSize = 1024

func newStderrWriter(log *slog.Logger, limit int) *stderrWriter {
	return &stderrWriter{log: log, limit: limit}
}

func (w *stderrWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := headSize - len(w.head); room > 0 {
		w.head = append(w.head, b[:min(room, len(b))]...)
	}
	if w.written >= w.limit {
		if !w.dropped {
			w.dropped = true
			w.log.Warn("guest output limit reached; dropping further output", "limit", w.limit)
		}
		return len(b), nil
	}
	room := w.limit - w.written
	chunk := b
	if len(chunk) > room {
		chunk = chunk[:room]
	}
	w.written += len(chunk)
	w.line = append(w.line, chunk...)
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			break
		}
		w.log.Info(string(w.line[:i]), "source", "guest_stderr")
		w.line = w.line[i+1:]
	}
	return len(b), nil
}

// reset starts a new call's capture.
func (w *stderrWriter) reset() {
	w.mu.Lock()
	w.head = w.head[:0]
	w.mu.Unlock()
}

// output returns the start of what was printed since reset.
func (w *stderrWriter) output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.head)
}

func (w *stderrWriter) tailSuffix() string {
	s := firstLines(w.output(), 3)
	if s == "" {
		return ""
	}
	return " (guest stderr: " + s + ")"
}
