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

// chunked returns its input in reads of the given sizes, cycling.
type chunked struct {
	b     []byte
	sizes []int
	n     int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(c.sizes[c.n%len(c.sizes)], len(p), len(c.b))
	c.n++
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

// TestReaderFramingIndependentOfChunking: lines are found in whatever is
// buffered, so every split of the input (a CR ending one read and its LF
// starting the next, lines longer than the 4 KiB buffer, a last line
// without terminator) must give the same events.
func TestReaderFramingIndependentOfChunking(t *testing.T) {
	long := strings.Repeat("x", 40<<10)
	in := "event: a\r\ndata: 1\r\n\r\n" + // CRLF
		"data: " + long + "\n\n" + // spans several buffer fills
		"event: b\rdata: 2\r\rdata: 3\n\n" + // CR alone
		": comment\r\n\r\n" +
		"data: a\ndata: b\r\ndata: " + long[:100] + "\r\n\n" +
		"data: last" // no terminator at the end
	want, err := readAll(t, strings.NewReader(in), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 6 || string(want[1].Data) != long || want[2].Event != "b" || string(want[2].Data) != "2" || string(want[3].Data) != "3" ||
		string(want[4].Data) != "a\nb\n"+long[:100] || string(want[5].Data) != "last" {
		t.Fatalf("reference parse: %d events %q", len(want), func() []string {
			var s []string
			for _, ev := range want {
				s = append(s, ev.Event+"|"+string(ev.Data[:min(len(ev.Data), 20)]))
			}
			return s
		}())
	}
	for _, sizes := range [][]int{{1}, {2}, {3, 5}, {7}, {8, 1}, {4096}, {16 << 10}, {100000}} {
		got, err := readAll(t, &chunked{b: []byte(in), sizes: sizes}, 0)
		if err != nil {
			t.Fatalf("sizes %v: %v", sizes, err)
		}
		if len(got) != len(want) {
			t.Fatalf("sizes %v: %d events, want %d", sizes, len(got), len(want))
		}
		for i := range want {
			if got[i].Event != want[i].Event || string(got[i].Data) != string(want[i].Data) || got[i].ID != want[i].ID {
				t.Fatalf("sizes %v, event %d: %q/%d bytes, want %q/%d bytes", sizes, i, got[i].Event, len(got[i].Data), want[i].Event, len(want[i].Data))
			}
		}
	}
	// The cap applies to a line however it arrives.
	if _, err := readAll(t, &chunked{b: []byte("data: " + long + "\n\n"), sizes: []int{1000}}, 1000); !errors.Is(err, sse.ErrEventTooLarge) {
		t.Fatalf("long line over the cap: %v", err)
	}
}

func BenchmarkReaderEvents(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 8; i++ {
		sb.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello there, world\"}}\n\n")
	}
	in := sb.String()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		rd := sse.NewReader(strings.NewReader(in), 0)
		for {
			if _, err := rd.Next(); err != nil {
				break
			}
		}
	}
}
