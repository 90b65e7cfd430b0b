package jsonx

// Reader walks one JSON document front to back, once. ObjectField and
// WalkMembers find a member by skipping over the ones before it, and a
// caller that then looks into the member's value scans it a second time;
// a translator that reads a message's role, then its content, then its
// tool calls scans the message three or four times. In a wasm guest that
// scanning is most of an adapter's time, so the hot paths read with a
// Reader: each byte is looked at once, and a value is only skipped when
// the caller does not descend into it.
//
// The Reader is pull-style (no callbacks: every call is a direct call,
// which matters under Go's wasm code generation):
//
//	r := jsonx.NewReader(doc)
//	if r.Object() {
//		for key, ok := r.Member(); ok; key, ok = r.Member() {
//			switch string(key) {
//			case "model":
//				model = r.Value()
//			case "messages":
//				for r.Array(); r.Element(); {
//					... read the element, or not ...
//				}
//			}
//		}
//	}
//	if r.Failed() { ... }
//
// A member or element value the caller leaves unread is skipped by the next
// Member or Element call. A caller that enters an object or array (Object,
// Array) reads it to its end, as the loops above do. Like the rest of the
// package it expects well-formed JSON: on malformed input it never panics
// or loops, it fails (Failed reports true and every later call returns
// nothing), but it does not diagnose every fault either (a missing comma
// passes).
type Reader struct {
	b []byte
	// i is the read position: just after what was read last, or at the
	// first byte of the value Member or Element positioned on.
	i int
	// val is where the value of the last Member or Element starts (-1:
	// none pending). While i is still there the caller has not read it.
	val int
	bad bool
}

// NewReader returns a Reader at the start of doc.
func NewReader(doc []byte) Reader { return Reader{b: doc, val: -1} }

// Failed reports whether the document turned out to be malformed.
func (r *Reader) Failed() bool { return r.bad }

// Pos is the read position (see Reader.i), for callers that keep spans.
func (r *Reader) Pos() int { return r.i }

// Since returns the document from start, an earlier Pos, to the read
// position: the raw text of a value read since, say.
func (r *Reader) Since(start int) []byte { return r.b[start:r.i] }

func (r *Reader) fail() {
	r.bad = true
	r.i = len(r.b)
	r.val = -1
}

// Kind is the first byte of the next value ('{', '[', '"', 't', 'f', 'n',
// '-' or a digit) without reading it, or 0 at the end or after a failure.
func (r *Reader) Kind() byte {
	if r.bad {
		return 0
	}
	r.i = skipWS(r.b, r.i)
	if r.i >= len(r.b) {
		return 0
	}
	return r.b[r.i]
}

// Value reads the next value and returns its raw bytes (nil on failure).
func (r *Reader) Value() []byte {
	if r.bad {
		return nil
	}
	s := r.i
	if s >= len(r.b) || r.b[s] <= ' ' {
		s = skipWS(r.b, s)
	}
	var e int
	if s < len(r.b) && r.b[s] == '"' {
		// Most values are strings: one call fewer than through SkipValue,
		// which counts under wasm.
		e = skipString(r.b, s)
	} else {
		e = SkipValue(r.b, s)
	}
	if e < 0 {
		r.fail()
		return nil
	}
	r.i = e
	return r.b[s:e]
}

// Object enters the object that is the next value and reports true, or
// reports false and reads nothing when the next value is not an object.
func (r *Reader) Object() bool { return r.enter('{') }

// Array enters the array that is the next value, like Object.
func (r *Reader) Array() bool { return r.enter('[') }

func (r *Reader) enter(c byte) bool {
	if r.Kind() != c {
		return false
	}
	r.i++
	return true
}

// Member moves to the next member of the object being read and returns its
// key, raw (still escaped, without quotes); the reader is then at the
// member's value. ok is false after the closing brace, which it reads, or
// on failure.
func (r *Reader) Member() (key []byte, ok bool) {
	i, ok := r.next('}')
	if !ok {
		return nil, false
	}
	b := r.b
	if b[i] != '"' {
		r.fail()
		return nil, false
	}
	// Keys are short and seldom escaped: a plain loop finds their end
	// without a call into the string skipper.
	ke := i + 1
	for ke < len(b) && b[ke] != '"' && b[ke] != '\\' {
		ke++
	}
	if ke < len(b) && b[ke] == '"' {
		ke++
	} else if ke = skipString(b, i); ke < 0 {
		r.fail()
		return nil, false
	}
	j := ke
	if j >= len(b) || b[j] != ':' {
		if j = skipWS(b, j); j >= len(b) || b[j] != ':' {
			r.fail()
			return nil, false
		}
	}
	j++
	if j >= len(b) || b[j] <= ' ' {
		j = skipWS(b, j)
	}
	r.i, r.val = j, j
	return b[i+1 : ke-1], true
}

// Element moves to the next element of the array being read; false after
// the closing bracket, which it reads, or on failure.
func (r *Reader) Element() bool {
	i, ok := r.next(']')
	if !ok {
		return false
	}
	r.i, r.val = i, i
	return true
}

// next skips an unread pending value and a separating comma, then reads
// the closing byte (false) or returns where the next member or element
// starts (true). Whitespace is only looked for where there is some: most
// documents the host hands over are compact.
func (r *Reader) next(closing byte) (int, bool) {
	if r.bad {
		return 0, false
	}
	if r.i == r.val {
		// The caller did not read the last value: skipping it here is what
		// guarantees progress, so no loop over a Reader can spin.
		if r.Value() == nil {
			return 0, false
		}
	}
	b := r.b
	i := r.i
	if i < len(b) && b[i] <= ' ' {
		i = skipWS(b, i)
	}
	if i < len(b) && b[i] == ',' {
		i++
		if i < len(b) && b[i] <= ' ' {
			i = skipWS(b, i)
		}
	}
	if i >= len(b) {
		r.fail()
		return 0, false
	}
	if b[i] == closing {
		r.i, r.val = i+1, -1
		return 0, false
	}
	return i, true
}
