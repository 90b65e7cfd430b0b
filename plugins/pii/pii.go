// Command pii is the first-party PII guardrail: it finds email addresses,
// phone numbers and card numbers (Luhn-checked) in requests, responses and
// streamed output, and redacts them or blocks the call.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o pii.wasm ./plugins/pii
// (a native build is the same plugin as a go-plugin subprocess).
//
// Config: {"action":"redact"|"block", "types":["email","phone","card"],
// "hold_back":64}. Streams: a tail of at most hold_back bytes that could be
// the start of a PII token is held in the per-stream state until the next
// batch shows how it ends, so a number split across chunks is still caught.
package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// Guardrail is the plugin. It reuses its buffers across calls; a wasm
// instance (and grpcplugin.Serve by default) runs one call at a time.
type Guardrail struct {
	block    bool
	holdBack int
	det      detector
	out      []byte
	text     []byte
	red      []byte
	state    []byte
	tails    []tail
}

type tail struct {
	index int
	text  []byte
}

type config struct {
	Action   string   `json:"action"`
	Types    []string `json:"types"`
	HoldBack int      `json:"hold_back"`
}

const schema = `{"type":"object","properties":{
"action":{"enum":["redact","block"],"default":"redact"},
"types":{"type":"array","items":{"enum":["email","phone","card"]}},
"hold_back":{"type":"integer","minimum":8,"maximum":1024,"default":64}}}`

// New returns a guardrail with the defaults (redact everything).
func New() *Guardrail {
	g := &Guardrail{holdBack: 64}
	g.det.enabled = [3]bool{true, true, true}
	return g
}

// Manifest describes the plugin.
func (g *Guardrail) Manifest() pluginsdk.Manifest {
	return pluginsdk.Manifest{
		Name: "pii", Version: "1.0.0", Kind: pluginsdk.KindGuardrail,
		ConfigSchema: pluginsdk.RawJSON(schema),
	}
}

// Configure parses the config; json is fine here, it runs once per load.
func (g *Guardrail) Configure(raw []byte) error {
	c := config{Action: "redact", HoldBack: 64}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &c); err != nil {
			return pluginsdk.Reject(400, "pii config: %v", err)
		}
	}
	switch c.Action {
	case "redact", "":
		g.block = false
	case "block":
		g.block = true
	default:
		return pluginsdk.Reject(400, "pii config: action must be redact or block, got %q", c.Action)
	}
	if c.HoldBack < 8 || c.HoldBack > 1024 {
		return pluginsdk.Reject(400, "pii config: hold_back must be 8..1024")
	}
	g.holdBack = c.HoldBack
	if len(c.Types) > 0 {
		g.det.enabled = [3]bool{}
		for _, t := range c.Types {
			found := false
			for k, n := range kindNames {
				if n == t {
					g.det.enabled[k], found = true, true
				}
			}
			if !found {
				return pluginsdk.Reject(400, "pii config: unknown type %q", t)
			}
		}
	}
	return nil
}

// PreRequest checks every string value of the request.
func (g *Guardrail) PreRequest(req []byte) (pluginsdk.Output, error) {
	return g.document(req, "request")
}

// PostResponse checks every string value of the response.
func (g *Guardrail) PostResponse(resp []byte) (pluginsdk.Output, error) {
	return g.document(resp, "response")
}

func (g *Guardrail) document(doc []byte, what string) (pluginsdk.Output, error) {
	g.det.spans = g.det.spans[:0]
	jsonx.WalkStrings(doc, func(s, e int) { g.det.scan(doc[s:e], s) })
	if len(g.det.spans) == 0 {
		return pluginsdk.Pass(), nil
	}
	if g.block {
		return pluginsdk.Output{}, g.blockError(what)
	}
	g.out = redact(g.out[:0], doc, g.det.spans)
	return pluginsdk.Replace(g.out), nil
}

// blockError names the kinds found, never the values.
func (g *Guardrail) blockError(what string) error {
	var seen [3]bool
	var kinds []string
	for _, s := range g.det.spans {
		if !seen[s.kind] {
			seen[s.kind] = true
			kinds = append(kinds, s.kind.String())
		}
	}
	return pluginsdk.Reject(400, "%s blocked by pii guardrail: contains %s", what, strings.Join(kinds, ", "))
}

func redact(dst, src []byte, spans []span) []byte {
	prev := 0
	for _, s := range spans {
		dst = append(dst, src[prev:s.start]...)
		dst = append(dst, kindTokens[s.kind]...)
		prev = s.end
	}
	return append(dst, src[prev:]...)
}

// StreamBatch redacts delta contents of a batch of unified chunks, holding
// back a tail per choice in the state.
func (g *Guardrail) StreamBatch(in pluginsdk.StreamInput) (pluginsdk.Output, error) {
	if err := g.loadTails(in.State); err != nil {
		return pluginsdk.Output{}, err
	}
	b := in.Batch
	g.out = append(g.out[:0], '[')
	n := 0
	var ferr error
	ok := len(b) == 0 || jsonx.ForEachElement(b, 0, func(cs, ce int) {
		if ferr != nil {
			return
		}
		if n > 0 {
			g.out = append(g.out, ',')
		}
		n++
		ferr = g.chunk(b[cs:ce], in.End)
	})
	if !ok {
		return pluginsdk.Output{}, pluginsdk.Reject(500, "pii: stream batch is not a JSON array")
	}
	if ferr != nil {
		return pluginsdk.Output{}, ferr
	}
	if in.End {
		for i := range g.tails {
			t := &g.tails[i]
			if len(t.text) == 0 {
				continue
			}
			if err := g.emit(t.text); err != nil {
				return pluginsdk.Output{}, err
			}
			if n > 0 {
				g.out = append(g.out, ',')
			}
			n++
			g.out = fmt.Appendf(g.out, `{"object":"chat.completion.chunk","choices":[{"index":%d,"delta":{"content":"`, t.index)
			g.out = append(g.out, g.red...)
			g.out = append(g.out, `"},"finish_reason":null}]}`...)
			t.text = t.text[:0]
		}
	}
	g.out = append(g.out, ']')
	return pluginsdk.Output{Status: pluginsdk.StatusOK, Body: g.out, State: g.saveTails()}, nil
}

// chunk rewrites one chunk's choice contents into g.out.
func (g *Guardrail) chunk(c []byte, end bool) error {
	cs, _, ok := jsonx.Field(c, "choices")
	if !ok {
		g.out = append(g.out, c...)
		return nil
	}
	cursor := 0
	var err error
	jsonx.ForEachElement(c, cs, func(s, e int) {
		if err != nil {
			return
		}
		idx := 0
		if is, ie, ok := jsonx.ObjectField(c, s, "index"); ok {
			idx = atoi(c[is:ie])
		}
		finishing := end
		if fs, fe, ok := jsonx.ObjectField(c, s, "finish_reason"); ok && string(c[fs:fe]) != "null" {
			finishing = true
		}
		ds, de, ok := jsonx.ObjectField(c, s, "delta")
		if !ok {
			return
		}
		t := g.tail(idx)
		vs, ve, hasContent := jsonx.ObjectField(c, ds, "content")
		if hasContent && c[vs] != '"' {
			hasContent = false // "content": null
		}
		if !hasContent && !(finishing && len(t.text) > 0) {
			return
		}
		g.text = append(g.text[:0], t.text...)
		if hasContent {
			g.text = append(g.text, c[vs+1:ve-1]...)
		}
		cut := len(g.text)
		if !finishing {
			cut = safeCut(g.text, g.holdBack)
		}
		t.text = append(t.text[:0], g.text[cut:]...)
		if err = g.emit(g.text[:cut]); err != nil {
			return
		}
		if hasContent {
			g.out = append(g.out, c[cursor:vs]...)
			g.out = append(g.out, '"')
			g.out = append(g.out, g.red...)
			g.out = append(g.out, '"')
			cursor = ve
		} else {
			// Final chunk without content: add the flushed tail to delta.
			at := de - 1
			g.out = append(g.out, c[cursor:at]...)
			if jsonx.SkipValue(c[ds:de], 1) > 0 { // delta has members
				g.out = append(g.out, ',')
			}
			g.out = append(g.out, `"content":"`...)
			g.out = append(g.out, g.red...)
			g.out = append(g.out, '"')
			cursor = at
		}
	})
	g.out = append(g.out, c[cursor:]...)
	return err
}

// emit scans text and leaves the (redacted) result in g.red.
func (g *Guardrail) emit(text []byte) error {
	g.det.spans = g.det.spans[:0]
	g.det.scan(text, 0)
	if len(g.det.spans) > 0 && g.block {
		return g.blockError("stream")
	}
	g.red = redact(g.red[:0], text, g.det.spans)
	return nil
}

func (g *Guardrail) tail(idx int) *tail {
	for i := range g.tails {
		if g.tails[i].index == idx {
			return &g.tails[i]
		}
	}
	g.tails = append(g.tails, tail{index: idx})
	return &g.tails[len(g.tails)-1]
}

// State layout: repeated u32 choice index, u32 length, bytes.
func (g *Guardrail) loadTails(st []byte) error {
	g.tails = g.tails[:0]
	for len(st) > 0 {
		if len(st) < 8 {
			return pluginsdk.Reject(500, "pii: corrupt stream state")
		}
		idx, n := binary.LittleEndian.Uint32(st), binary.LittleEndian.Uint32(st[4:])
		if uint64(n) > uint64(len(st)-8) {
			return pluginsdk.Reject(500, "pii: corrupt stream state")
		}
		// Copy: the input is only valid during the call.
		g.tails = append(g.tails, tail{index: int(idx), text: append([]byte(nil), st[8:8+n]...)})
		st = st[8+n:]
	}
	return nil
}

func (g *Guardrail) saveTails() []byte {
	g.state = g.state[:0]
	for _, t := range g.tails {
		if len(t.text) == 0 {
			continue
		}
		g.state = binary.LittleEndian.AppendUint32(g.state, uint32(t.index))
		g.state = binary.LittleEndian.AppendUint32(g.state, uint32(len(t.text)))
		g.state = append(g.state, t.text...)
	}
	return g.state
}

// safeCut returns how much of text can be emitted now: everything before
// the last point where no PII token can straddle, keeping at most hold
// bytes back. Spaces next to a letter are such points (emails have no
// spaces, and the spaces inside phone and card numbers sit between digits);
// so is any character that never occurs in a token. A cut never splits a
// JSON escape.
func safeCut(s []byte, hold int) int {
	cut := 0
	for p := len(s) - 1; p >= 0; p-- {
		c := s[p]
		if c == ' ' {
			if !(digitSide(s, p, -1) && digitSide(s, p, +1)) {
				cut = p
				break
			}
			continue
		}
		if c == '\\' && !escaped(s, p) {
			cut = p
			break
		}
		if !isAlnum(c) && !strings.ContainsRune("@._%+-()\\\"", rune(c)) && !escaped(s, p) {
			cut = p + 1
			break
		}
	}
	if len(s)-cut > hold {
		cut = len(s) - hold
		for k := 1; k <= 5 && cut-k >= 0; k++ {
			if s[cut-k] == '\\' {
				cut -= k
				break
			}
		}
	}
	return cut
}

// digitSide reports whether the nearest character from p in direction dir,
// skipping number separators, can be part of a phone or card number.
func digitSide(s []byte, p, dir int) bool {
	for i := p + dir; i >= 0 && i < len(s); i += dir {
		c := s[i]
		if isDigit(c) || (dir > 0 && c == '+') {
			return true
		}
		if !isNumSep(c) {
			return false
		}
	}
	return false
}

func atoi(b []byte) int {
	n := 0
	for _, c := range b {
		if !isDigit(c) {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}
