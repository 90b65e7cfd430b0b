// Package eventstream encodes and decodes the AWS event-stream binary framing
// (application/vnd.amazon.eventstream) that Bedrock's ConverseStream and
// InvokeModelWithResponseStream answer with. The host frames the stream and
// hands decoded events to the provider adapter, which stays a pure
// transformer.
//
// A message is: prelude (total length, headers length, CRC32 of those 8
// bytes), headers, payload, CRC32 of everything before it. All integers are
// big-endian and CRCs are IEEE CRC32.
package eventstream

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// ValueType is a header value's wire type.
type ValueType byte

// Header value types defined by the event-stream format.
const (
	TypeBoolTrue  ValueType = 0
	TypeBoolFalse ValueType = 1
	TypeByte      ValueType = 2
	TypeInt16     ValueType = 3
	TypeInt32     ValueType = 4
	TypeInt64     ValueType = 5
	TypeBytes     ValueType = 6
	TypeString    ValueType = 7
	TypeTimestamp ValueType = 8
	TypeUUID      ValueType = 9
)

// Header is one message header. Value holds the raw value bytes (without the
// length prefix of bytes and string values); booleans have none.
type Header struct {
	Name  string
	Type  ValueType
	Value []byte
}

// StringHeader builds a string-typed header, the only kind Bedrock sends.
func StringHeader(name, value string) Header {
	return Header{Name: name, Type: TypeString, Value: []byte(value)}
}

// Message is one decoded frame.
type Message struct {
	Headers []Header
	Payload []byte
}

// Header returns the string value of a string or bytes header, "" if absent.
func (m Message) Header(name string) string {
	for _, h := range m.Headers {
		if h.Name == name && (h.Type == TypeString || h.Type == TypeBytes) {
			return string(h.Value)
		}
	}
	return ""
}

// Well-known header names.
const (
	HeaderMessageType   = ":message-type"
	HeaderEventType     = ":event-type"
	HeaderContentType   = ":content-type"
	HeaderExceptionType = ":exception-type"
	HeaderErrorCode     = ":error-code"
	HeaderErrorMessage  = ":error-message"
)

// Event builds a JSON event message as AWS services send it.
func Event(eventType string, payload []byte) Message {
	return Message{Headers: []Header{
		StringHeader(HeaderEventType, eventType),
		StringHeader(HeaderContentType, "application/json"),
		StringHeader(HeaderMessageType, "event"),
	}, Payload: payload}
}

// Exception builds a modelled exception message (e.g. throttlingException).
func Exception(exceptionType string, payload []byte) Message {
	return Message{Headers: []Header{
		StringHeader(HeaderExceptionType, exceptionType),
		StringHeader(HeaderContentType, "application/json"),
		StringHeader(HeaderMessageType, "exception"),
	}, Payload: payload}
}

// Limits from the format: a message is at least a prelude plus the message
// CRC. The maximum guards memory against a hostile length field; AWS's own
// decoders use 16 MiB.
const (
	preludeLen     = 12
	minMessageLen  = preludeLen + 4
	MaxMessageSize = 16 << 20
	maxHeadersLen  = 128 << 10
)

// Errors the decoder returns; wrapped with detail.
var (
	ErrIncomplete = errors.New("eventstream: incomplete message")
	ErrMalformed  = errors.New("eventstream: malformed message")
	ErrChecksum   = errors.New("eventstream: checksum mismatch")
)

func fixedLen(t ValueType) int {
	switch t {
	case TypeBoolTrue, TypeBoolFalse:
		return 0
	case TypeByte:
		return 1
	case TypeInt16:
		return 2
	case TypeInt32:
		return 4
	case TypeInt64, TypeTimestamp:
		return 8
	case TypeUUID:
		return 16
	}
	return -1
}

// Append encodes m onto dst.
func Append(dst []byte, m Message) ([]byte, error) {
	hlen := 0
	for _, h := range m.Headers {
		if len(h.Name) == 0 || len(h.Name) > 255 {
			return dst, fmt.Errorf("%w: header name length %d", ErrMalformed, len(h.Name))
		}
		hlen += 1 + len(h.Name) + 1
		switch h.Type {
		case TypeBytes, TypeString:
			if len(h.Value) > 0xffff {
				return dst, fmt.Errorf("%w: header %s value too long", ErrMalformed, h.Name)
			}
			hlen += 2 + len(h.Value)
		default:
			n := fixedLen(h.Type)
			if n < 0 || len(h.Value) != n {
				return dst, fmt.Errorf("%w: header %s: type %d with %d value bytes", ErrMalformed, h.Name, h.Type, len(h.Value))
			}
			hlen += n
		}
	}
	total := preludeLen + hlen + len(m.Payload) + 4
	if total > MaxMessageSize || hlen > maxHeadersLen {
		return dst, fmt.Errorf("%w: message of %d bytes too large", ErrMalformed, total)
	}
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(total))
	dst = binary.BigEndian.AppendUint32(dst, uint32(hlen))
	dst = binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:start+8]))
	for _, h := range m.Headers {
		dst = append(dst, byte(len(h.Name)))
		dst = append(dst, h.Name...)
		dst = append(dst, byte(h.Type))
		if h.Type == TypeBytes || h.Type == TypeString {
			dst = binary.BigEndian.AppendUint16(dst, uint16(len(h.Value)))
		}
		dst = append(dst, h.Value...)
	}
	dst = append(dst, m.Payload...)
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:])), nil
}

// Encode writes one message to w in a single Write, so a flushing writer
// sends whole frames.
func Encode(w io.Writer, m Message) error {
	b, err := Append(nil, m)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Parse decodes the first message in b and returns it with the number of
// bytes it used. If b holds only part of a message it returns ErrIncomplete
// (wait for more bytes); any other error means the stream is corrupt. The
// message's slices alias b.
func Parse(b []byte) (Message, int, error) {
	if len(b) < preludeLen {
		return Message{}, 0, ErrIncomplete
	}
	total := binary.BigEndian.Uint32(b[0:4])
	hlen := binary.BigEndian.Uint32(b[4:8])
	if crc32.ChecksumIEEE(b[:8]) != binary.BigEndian.Uint32(b[8:12]) {
		return Message{}, 0, fmt.Errorf("%w: prelude", ErrChecksum)
	}
	if total < minMessageLen || total > MaxMessageSize || hlen > maxHeadersLen || uint64(hlen) > uint64(total)-minMessageLen {
		return Message{}, 0, fmt.Errorf("%w: total length %d, headers length %d", ErrMalformed, total, hlen)
	}
	if uint32(len(b)) < total {
		return Message{}, 0, ErrIncomplete
	}
	msg := b[:total]
	if crc32.ChecksumIEEE(msg[:total-4]) != binary.BigEndian.Uint32(msg[total-4:]) {
		return Message{}, 0, fmt.Errorf("%w: message", ErrChecksum)
	}
	hdrs, err := parseHeaders(msg[preludeLen : preludeLen+hlen])
	if err != nil {
		return Message{}, 0, err
	}
	return Message{Headers: hdrs, Payload: msg[preludeLen+hlen : total-4]}, int(total), nil
}

func parseHeaders(b []byte) ([]Header, error) {
	var hs []Header
	for len(b) > 0 {
		nl := int(b[0])
		if nl == 0 || len(b) < 1+nl+1 {
			return nil, fmt.Errorf("%w: header name", ErrMalformed)
		}
		h := Header{Name: string(b[1 : 1+nl]), Type: ValueType(b[1+nl])}
		b = b[2+nl:]
		var vl int
		if h.Type == TypeBytes || h.Type == TypeString {
			if len(b) < 2 {
				return nil, fmt.Errorf("%w: header %q value length", ErrMalformed, h.Name)
			}
			vl = int(binary.BigEndian.Uint16(b))
			b = b[2:]
		} else if vl = fixedLen(h.Type); vl < 0 {
			return nil, fmt.Errorf("%w: header %q has unknown type %d", ErrMalformed, h.Name, h.Type)
		}
		if len(b) < vl {
			return nil, fmt.Errorf("%w: header %q value", ErrMalformed, h.Name)
		}
		h.Value = b[:vl:vl]
		b = b[vl:]
		hs = append(hs, h)
	}
	return hs, nil
}

// Decoder reads messages from a stream.
type Decoder struct {
	r   *bufio.Reader
	buf []byte
}

// NewDecoder returns a decoder reading from r.
func NewDecoder(r io.Reader) *Decoder { return &Decoder{r: bufio.NewReader(r)} }

// Decode returns the next message. It returns io.EOF at a clean end of
// stream and io.ErrUnexpectedEOF if the stream ends inside a message. The
// message's slices are valid until the next call.
func (d *Decoder) Decode() (Message, error) {
	var prelude [preludeLen]byte
	if _, err := io.ReadFull(d.r, prelude[:]); err != nil {
		if err == io.EOF {
			return Message{}, io.EOF
		}
		return Message{}, fmt.Errorf("eventstream: read prelude: %w", err)
	}
	if crc32.ChecksumIEEE(prelude[:8]) != binary.BigEndian.Uint32(prelude[8:]) {
		return Message{}, fmt.Errorf("%w: prelude", ErrChecksum)
	}
	total := binary.BigEndian.Uint32(prelude[0:4])
	// Validate before allocating: the length field is untrusted.
	if total < minMessageLen || total > MaxMessageSize {
		return Message{}, fmt.Errorf("%w: total length %d", ErrMalformed, total)
	}
	if cap(d.buf) < int(total) {
		d.buf = make([]byte, total)
	}
	d.buf = d.buf[:total]
	copy(d.buf, prelude[:])
	if _, err := io.ReadFull(d.r, d.buf[preludeLen:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Message{}, fmt.Errorf("eventstream: read message: %w", err)
	}
	m, _, err := Parse(d.buf)
	return m, err
}
