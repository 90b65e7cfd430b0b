package sse_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/wasmgate/gateway/host/sse"
)

func readAll(t testing.TB, r io.Reader, max int) ([]sse.Event, error) {
	rd := sse.NewReader(r, max)
	var out []sse.Event
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestReaderFraming(t *testing.T) {
	in := ": comment\n\nevent: message_start\ndata: {\"a\":1}\n\r\ndata: line1\r\ndata: line2\r\n\r\nid: 7\ndata:no-space\n\ndata: [DONE]"
	// One byte at a time proves framing does not depend on read boundaries.
	evs, err := readAll(t, iotest.OneByteReader(strings.NewReader(in)), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []sse.Event{
		{Event: "message_start", Data: []byte(`{"a":1}`)},
		{Data: []byte("line1\nline2")},
		{ID: "7", Data: []byte("no-space")},
		{Data: []byte("[DONE]")},
	}
	if len(evs) != len(want) {
		t.Fatalf("got %d events: %+v", len(evs), evs)
	}
	for i := range want {
		if evs[i].Event != want[i].Event || string(evs[i].Data) != string(want[i].Data) || (want[i].ID != "" && evs[i].ID != want[i].ID) {
			t.Errorf("event %d: %+v want %+v", i, evs[i], want[i])
		}
	}
}

func TestReaderCapsEvents(t *testing.T) {
	_, err := readAll(t, strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\n"), 50)
	if !errors.Is(err, sse.ErrEventTooLarge) {
		t.Fatalf("want ErrEventTooLarge, got %v", err)
	}
}

func TestWriterRoundTrip(t *testing.T) {
	b := sse.AppendEvent(nil, "content_block_delta", []byte("a\nb"))
	b = sse.AppendEvent(b, "", []byte(`{"x":1}`))
	if string(b) != "event: content_block_delta\ndata: a\ndata: b\n\ndata: {\"x\":1}\n\n" {
		t.Fatalf("%q", b)
	}
	evs, _ := readAll(t, strings.NewReader(string(b)), 0)
	if len(evs) != 2 || string(evs[0].Data) != "a\nb" {
		t.Fatalf("%+v", evs)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("event: x\ndata: y\n\n"), 64)
	f.Add([]byte("data: a\r\rdata"), 8)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max > 1<<16 {
			max = 1 << 16
		}
		evs, _ := readAll(t, strings.NewReader(string(in)), max)
		if len(evs) > len(in)+1 {
			t.Fatalf("%d events from %d bytes", len(evs), len(in))
		}
	})
}
