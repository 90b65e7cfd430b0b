package eventstream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"testing"
)

// Every header type survives encode -> decode -> encode byte for byte (the
// headers mirror the AWS event-stream suite's "all_headers" case).
func TestAllHeaderTypesRoundTrip(t *testing.T) {
	m := Message{Headers: []Header{
		{Name: "event-type", Type: TypeInt32, Value: []byte{0, 0, 0, 40}},
		{Name: "content-type", Type: TypeString, Value: []byte("application/json")},
		{Name: "bool false", Type: TypeBoolFalse},
		{Name: "bool true", Type: TypeBoolTrue},
		{Name: "byte", Type: TypeByte, Value: []byte{0xcf}},
		{Name: "byte buf", Type: TypeBytes, Value: []byte("I'm a little teapot!")},
		{Name: "timestamp", Type: TypeTimestamp, Value: []byte{0, 0, 0, 0, 0x00, 0x84, 0x5f, 0xed}},
		{Name: "int16", Type: TypeInt16, Value: []byte{0, 42}},
		{Name: "int64", Type: TypeInt64, Value: []byte{0, 0, 0, 0, 0, 0, 0x00, 0x2a}},
		{Name: "uuid", Type: TypeUUID, Value: bytes.Repeat([]byte{0xab}, 16)},
	}, Payload: []byte(`{'foo':'bar'}`)}
	b, err := Append(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	got, n, err := Parse(b)
	if err != nil || n != len(b) {
		t.Fatalf("parse: %v n=%d", err, n)
	}
	b2, _ := Append(nil, got)
	if !bytes.Equal(b, b2) {
		t.Fatal("round trip differs")
	}
	if got.Header("content-type") != "application/json" || string(got.Payload) != `{'foo':'bar'}` {
		t.Fatalf("decoded %+v", got)
	}
}

// Known vector from the AWS event-stream spec test suite: an empty message.
func TestEmptyMessageVector(t *testing.T) {
	want := []byte{0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x05, 0xc2, 0x48, 0xeb, 0x7d, 0x98, 0xc8, 0xff}
	b, _ := Append(nil, Message{})
	if !bytes.Equal(b, want) {
		t.Fatalf("empty message % x, want % x", b, want)
	}
}

func TestBedrockEventLayout(t *testing.T) {
	b, err := Append(nil, Event("contentBlockDelta", []byte(`{"contentBlockIndex":0,"delta":{"text":"hi"}}`)))
	if err != nil {
		t.Fatal(err)
	}
	total := binary.BigEndian.Uint32(b)
	hlen := binary.BigEndian.Uint32(b[4:])
	if int(total) != len(b) {
		t.Fatalf("total %d, len %d", total, len(b))
	}
	if crc32.ChecksumIEEE(b[:8]) != binary.BigEndian.Uint32(b[8:]) {
		t.Fatal("prelude crc")
	}
	if crc32.ChecksumIEEE(b[:len(b)-4]) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		t.Fatal("message crc")
	}
	// First header: name length, ":event-type", type 7, uint16 length, value.
	h := b[12 : 12+hlen]
	if h[0] != 11 || string(h[1:12]) != ":event-type" || h[12] != 7 || binary.BigEndian.Uint16(h[13:]) != 17 || string(h[15:32]) != "contentBlockDelta" {
		t.Fatalf("header bytes % x", h[:32])
	}
}

func TestDecoderStream(t *testing.T) {
	var buf bytes.Buffer
	Encode(&buf, Event("messageStart", []byte(`{"role":"assistant"}`)))
	Encode(&buf, Exception("throttlingException", []byte(`{"message":"slow down"}`)))
	d := NewDecoder(&oneByteReader{r: &buf})
	m, err := d.Decode()
	if err != nil || m.Header(HeaderEventType) != "messageStart" || m.Header(HeaderMessageType) != "event" {
		t.Fatalf("first: %v %+v", err, m)
	}
	m, err = d.Decode()
	if err != nil || m.Header(HeaderExceptionType) != "throttlingException" || m.Header(HeaderMessageType) != "exception" {
		t.Fatalf("second: %v %+v", err, m)
	}
	if _, err := d.Decode(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

func TestDecoderErrors(t *testing.T) {
	good, _ := Append(nil, Event("x", []byte("{}")))
	flip := func(i int) []byte { b := bytes.Clone(good); b[i] ^= 0xff; return b }
	cases := map[string]struct {
		in   []byte
		want error
	}{
		"truncated":     {good[:len(good)-3], io.ErrUnexpectedEOF},
		"prelude crc":   {flip(9), ErrChecksum},
		"message crc":   {flip(len(good) - 1), ErrChecksum},
		"payload flip":  {flip(len(good) - 5), ErrChecksum},
		"short prelude": {good[:5], io.ErrUnexpectedEOF},
	}
	for name, c := range cases {
		_, err := NewDecoder(bytes.NewReader(c.in)).Decode()
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", name, err, c.want)
		}
	}
	// A huge length with a valid prelude CRC must be rejected before allocating.
	var p [12]byte
	binary.BigEndian.PutUint32(p[0:], 0xfffffff0)
	binary.BigEndian.PutUint32(p[8:], crc32.ChecksumIEEE(p[:8]))
	if _, err := NewDecoder(bytes.NewReader(p[:])).Decode(); !errors.Is(err, ErrMalformed) {
		t.Errorf("huge length: %v", err)
	}
	if _, _, err := Parse(good[:20]); err != ErrIncomplete {
		t.Errorf("partial parse: %v", err)
	}
}

type oneByteReader struct{ r io.Reader }

func (o *oneByteReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}
