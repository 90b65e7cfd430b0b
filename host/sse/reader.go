// Package sse frames Server-Sent Events: the host splits an upstream byte
// stream into events before handing batches of them to an adapter, and
// writes events to clients. It follows the WHATWG parsing rules (LF, CR or
// CRLF line ends; "data" lines joined with LF; comments ignored).
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Event is one parsed event. Data is owned by the caller after Next returns.
type Event struct {
	Event string
	Data  []byte
	ID    string
}

// ErrEventTooLarge means one event exceeded the reader's size cap, which
// guards the gateway against an upstream that never ends an event.
var ErrEventTooLarge = errors.New("sse: event exceeds size limit")

// Reader reads events from an upstream body.
type Reader struct {
	br      *bufio.Reader
	max     int
	data    bytes.Buffer
	event   string
	id      string
	hasData bool
}

// NewReader reads events of at most maxEvent bytes (<=0: 8 MiB).
func NewReader(r io.Reader, maxEvent int) *Reader {
	if maxEvent <= 0 {
		maxEvent = 8 << 20
	}
	return &Reader{br: bufio.NewReaderSize(r, 16<<10), max: maxEvent}
}

// Buffered reports whether complete input is already buffered, so a caller
// batching events can take the next one without blocking.
func (r *Reader) Buffered() int { return r.br.Buffered() }

// Next returns the next event, io.EOF at a clean end. An event still open
// when the stream ends is returned first (many servers omit the last blank line).
func (r *Reader) Next() (Event, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && (r.hasData || r.event != "") {
				return r.emit(), nil
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if !r.hasData && r.event == "" {
				continue
			}
			return r.emit(), nil
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte{':'})
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "data":
			if r.hasData {
				r.data.WriteByte('\n')
			}
			r.data.Write(value)
			r.hasData = true
			if r.data.Len() > r.max {
				return Event{}, ErrEventTooLarge
			}
		case "event":
			r.event = string(value)
		case "id":
			r.id = string(value)
		}
	}
}

func (r *Reader) emit() Event {
	ev := Event{Event: r.event, ID: r.id, Data: bytes.Clone(r.data.Bytes())}
	if ev.Data == nil {
		ev.Data = []byte{}
	}
	r.data.Reset()
	r.event, r.hasData = "", false
	return ev
}

// readLine returns one line without its terminator, handling CR, LF and CRLF.
func (r *Reader) readLine() ([]byte, error) {
	var line []byte
	for {
		b, err := r.br.ReadByte()
		if err != nil {
			if len(line) > 0 && errors.Is(err, io.EOF) {
				return line, nil
			}
			return nil, err
		}
		switch b {
		case '\n':
			return line, nil
		case '\r':
			if nb, err := r.br.Peek(1); err == nil && nb[0] == '\n' {
				_, _ = r.br.ReadByte()
			}
			return line, nil
		}
		line = append(line, b)
		if len(line) > r.max {
			return nil, fmt.Errorf("%w (line over %d bytes)", ErrEventTooLarge, r.max)
		}
	}
}
