package sse

import (
	"bytes"
)

// AppendEvent appends one event in wire form. Data containing newlines is
// split over several data lines, as the format requires.
func AppendEvent(dst []byte, event string, data []byte) []byte {
	if event != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, event...)
		dst = append(dst, '\n')
	}
	for {
		i := bytes.IndexByte(data, '\n')
		dst = append(dst, "data: "...)
		if i < 0 {
			dst = append(dst, data...)
			dst = append(dst, '\n')
			break
		}
		dst = append(dst, data[:i]...)
		dst = append(dst, '\n')
		data = data[i+1:]
	}
	return append(dst, '\n')
}
