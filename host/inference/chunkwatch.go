package inference

import "bytes"

// chunkWatch follows an HTTP/1.1 answer through its header block and
// chunked body as its bytes arrive. It only counts: ready is how many body
// bytes arrived in whole chunks (data and the CRLF after it), and state
// cwEnded that the last chunk and the trailer did. Anything it does not recognise (a
// body that is not chunked, an interim 1xx answer) stops it, and then it
// claims nothing.
type chunkWatch struct {
	st   uint8
	line int   // bytes of the current header or trailer line, CR excluded
	size int64 // of the chunk whose size line is being read
	left int64 // data bytes of the current chunk still to arrive
	// ready: body bytes in whole chunks so far.
	ready int64
}

const (
	cwHeader  = iota // in the header block
	cwSize           // in a chunk-size line, at its hex digits
	cwExt            // in a chunk-size line, past its digits
	cwData           // in a chunk's data
	cwDataCR         // after the data: its CR
	cwDataLF         // and its LF
	cwTrailer        // after the last chunk, until the empty line
	cwEnded          // the whole answer arrived
	cwLost           // not a chunked answer, or not one understood
)

func (w *chunkWatch) reset() { *w = chunkWatch{} }

// feed follows b, the next bytes of the answer.
func (w *chunkWatch) feed(b []byte) {
	for len(b) > 0 {
		switch w.st {
		case cwHeader, cwTrailer:
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				w.line += len(b) - bytes.Count(b, []byte{'\r'})
				return
			}
			w.line += i - bytes.Count(b[:i], []byte{'\r'})
			b = b[i+1:]
			if w.line == 0 {
				if w.st == cwHeader {
					w.st = cwSize
				} else {
					w.st = cwEnded
				}
			}
			w.line = 0
		case cwSize:
			c := b[0]
			switch {
			case '0' <= c && c <= '9':
				w.size = w.size<<4 | int64(c-'0')
			case 'a' <= c && c <= 'f':
				w.size = w.size<<4 | int64(c-'a'+10)
			case 'A' <= c && c <= 'F':
				w.size = w.size<<4 | int64(c-'A'+10)
			case c == '\r' || c == ';' || c == ' ' || c == '\t':
				w.st = cwExt
			case c == '\n':
				w.endSize()
			default:
				w.st = cwLost
			}
			if w.size > 1<<40 {
				w.st = cwLost
			}
			b = b[1:]
		case cwExt:
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				return
			}
			b = b[i+1:]
			w.endSize()
		case cwData:
			n := min(int64(len(b)), w.left)
			w.left -= n
			b = b[n:]
			if w.left == 0 {
				w.st = cwDataCR
			}
		case cwDataCR, cwDataLF:
			c := b[0]
			b = b[1:]
			switch {
			case w.st == cwDataCR && c == '\r':
				w.st = cwDataLF
			case c == '\n':
				w.ready += w.size
				w.size = 0
				w.st = cwSize
			default:
				w.st = cwLost
			}
		default:
			return
		}
	}
}

// endSize is the end of a chunk-size line.
func (w *chunkWatch) endSize() {
	if w.size == 0 {
		w.st = cwTrailer
		return
	}
	w.left = w.size
	w.st = cwData
}
