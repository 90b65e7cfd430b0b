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
	line    []byte // a line that spanned buffer refills
}

// NewReader reads events of at most maxEvent bytes (<=0: 8 MiB). Its
// buffer is 4 KiB: one is made per upstream stream, provider events are a
// few hundred bytes, and a longer line is read across refills (a 16 KiB
// buffer made the reader's setup cost more than framing a short stream).
func NewReader(r io.Reader, maxEvent int) *Reader {
	if maxEvent <= 0 {
		maxEvent = 8 << 20
	}
	return &Reader{br: bufio.NewReaderSize(r, 4<<10), max: maxEvent}
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
			r.event = eventName(value)
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

// readLine returns one line without its terminator, handling CR, LF and
// CRLF. The line is valid until the next read: a view of the buffered input
// when it arrived whole (no copy, the usual case), else r.line. Scanning
// what is buffered with IndexByte instead of reading byte by byte took the
// framing from 7% of a translated stream's CPU to noise.
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	for {
		if _, err := r.br.Peek(1); err != nil {
			if len(r.line) > 0 && errors.Is(err, io.EOF) {
				return r.line, nil
			}
			return nil, err
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		i := lineEnd(buf)
		if i < 0 {
			if len(r.line)+len(buf) > r.max {
				return nil, fmt.Errorf("%w (line over %d bytes)", ErrEventTooLarge, r.max)
			}
			r.line = append(r.line, buf...)
			_, _ = r.br.Discard(len(buf))
			continue
		}
		line := buf[:i]
		if len(r.line) > 0 {
			r.line = append(r.line, line...)
			line = r.line
		}
		if len(line) > r.max {
			return nil, fmt.Errorf("%w (line over %d bytes)", ErrEventTooLarge, r.max)
		}
		if buf[i] == '\n' {
			_, _ = r.br.Discard(i + 1)
			return line, nil
		}
		// CR: a following LF belongs to it. If it is buffered, skip both;
		// if the CR ends the buffered input, peeking refills the buffer,
		// so the line is copied out first.
		if i+1 < len(buf) {
			n := 1
			if buf[i+1] == '\n' {
				n = 2
			}
			_, _ = r.br.Discard(i + n)
			return line, nil
		}
		if len(r.line) == 0 {
			r.line = append(r.line, line...)
			line = r.line
		}
		_, _ = r.br.Discard(i + 1)
		if nb, err := r.br.Peek(1); err == nil && nb[0] == '\n' {
			_, _ = r.br.Discard(1)
		}
		return line, nil
	}
}

// lineEnd is the index of the first CR or LF in b, or -1.
func lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		i = len(b)
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	if i == len(b) {
		return -1
	}
	return i
}

// eventName is the event field as a string, without allocating for the
// names providers send with every event.
func eventName(b []byte) string {
	switch string(b) { // no allocation: the compiler compares in place
	case "content_block_delta":
		return "content_block_delta"
	case "content_block_start":
		return "content_block_start"
	case "content_block_stop":
		return "content_block_stop"
	case "message_start":
		return "message_start"
	case "message_delta":
		return "message_delta"
	case "message_stop":
		return "message_stop"
	case "ping":
		return "ping"
	case "error":
		return "error"
	}
	return string(b)
}
