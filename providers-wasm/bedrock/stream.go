package main

import (
	"strconv"
	"time"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// streamState is what the adapter keeps between batches of one stream, as
// a small JSON object the host stores: {"id","created","role","tools"}.
// tools lists the Converse content block index of each tool call in the
// order they started, so a block's position is its OpenAI tool_calls index.
type streamState struct {
	id       string
	created  int64
	roleSent bool
	tools    []int64
	// jsonBlock is the content block of the structured output tool call
	// (see jsonToolName), -1 when there is none: its input streams as
	// content.
	jsonBlock int64
}

func parseState(b []byte) (streamState, error) {
	s := streamState{jsonBlock: -1}
	if len(b) == 0 {
		s.id, s.created = newID(), time.Now().Unix()
		return s, nil
	}
	if !jsonx.Valid(b) || b[skipWS(b, 0)] != '{' {
		return s, &pluginsdk.Error{Code: 500, Message: "bedrock: stream state is corrupt"}
	}
	s.id = strValue(b, "id")
	s.created, _ = intValue(b, "created")
	if v, ok := field(b, "role"); ok {
		s.roleSent = string(v) == "true"
	}
	if n, ok := intValue(b, "json"); ok {
		s.jsonBlock = n
	}
	if v, ok := field(b, "tools"); ok && len(v) > 0 && v[0] == '[' {
		eachElement(v, func(n []byte) {
			i, _ := strconv.ParseInt(string(n), 10, 64)
			s.tools = append(s.tools, i)
		})
	}
	return s, nil
}

func (s *streamState) encode() []byte {
	b := make([]byte, 0, 64+8*len(s.tools))
	b = append(b, `{"id":`...)
	b = appendString(b, s.id)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, s.created, 10)
	b = append(b, `,"role":`...)
	b = strconv.AppendBool(b, s.roleSent)
	b = append(b, `,"json":`...)
	b = strconv.AppendInt(b, s.jsonBlock, 10)
	b = append(b, `,"tools":[`...)
	for i, t := range s.tools {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, t, 10)
	}
	return append(b, "]}"...)
}

// toolIndex returns the tool_calls index of content block blk, registering
// it when it is new.
func (s *streamState) toolIndex(blk int64) (int, bool) {
	for i, b := range s.tools {
		if b == blk {
			return i, false
		}
	}
	s.tools = append(s.tools, blk)
	return len(s.tools) - 1, true
}

// exceptionStatus maps a ConverseStream exception to the HTTP status it
// stands for, which drives the host's retry and fallback decisions.
func exceptionStatus(name string) int {
	// Exception types are camelCase in :exception-type but an :error-code
	// may spell them with a capital first letter.
	if name != "" && name[0] >= 'A' && name[0] <= 'Z' {
		name = string(name[0]+'a'-'A') + name[1:]
	}
	switch name {
	case "throttlingException":
		return 429
	case "serviceUnavailableException":
		return 503
	case "validationException":
		return 400
	case "modelTimeoutException":
		return 408
	}
	// internalServerException, modelStreamErrorException and anything new.
	return 500
}

// AdaptStream maps a batch of ConverseStream events to chat.completion.chunk
// objects.
func (*Adapter) AdaptStream(in pluginsdk.StreamInput) (pluginsdk.Output, error) {
	if v, ok := field(in.State, "invoke"); ok && string(v) == "true" {
		if len(in.Batch) == 0 {
			return invokeStream(in.State, []byte("[]"))
		}
		if !jsonx.Valid(in.Batch) {
			return pluginsdk.Output{}, badUpstream("stream batch is not a JSON array of events")
		}
		return invokeStream(in.State, in.Batch)
	}
	st, err := parseState(in.State)
	if err != nil {
		return pluginsdk.Output{}, err
	}
	batch := in.Batch
	if len(batch) == 0 {
		batch = []byte("[]")
	}
	if !jsonx.Valid(batch) || batch[skipWS(batch, 0)] != '[' {
		return pluginsdk.Output{}, badUpstream("stream batch is not a JSON array of events")
	}
	c := chunker{st: &st}
	c.out = append(c.out, '[')
	eachElement(batch, func(ev []byte) {
		if err == nil && ev[0] == '{' {
			err = c.event(ev)
		}
	})
	if err != nil {
		return pluginsdk.Output{}, err
	}
	c.out = append(c.out, ']')
	if c.n == 0 {
		return pluginsdk.Output{Status: pluginsdk.StatusNoOutput, State: st.encode()}, nil
	}
	return pluginsdk.Output{Status: pluginsdk.StatusOK, Body: c.out, State: st.encode()}, nil
}

// chunker accumulates the chunks of one batch.
type chunker struct {
	st  *streamState
	out []byte
	d   []byte // scratch for one delta
	n   int
}

func (c *chunker) event(ev []byte) error {
	name := strValue(ev, "event")
	data, _ := field(ev, "data")
	if v, ok := field(ev, "exception"); ok && string(v) == "true" {
		msg := ""
		if len(data) > 0 && data[0] == '{' {
			if msg = strValue(data, "message"); msg == "" {
				msg = strValue(data, "Message")
			}
		}
		if msg == "" {
			msg = "upstream reported " + name
		}
		return &pluginsdk.Error{Code: exceptionStatus(name), Message: "bedrock " + name + ": " + msg}
	}
	if len(data) == 0 || data[0] != '{' {
		return nil
	}
	d := c.d[:0]
	switch name {
	case "messageStart":
		// The role goes out with the first content instead of now: until a
		// chunk is emitted the host can still retry or fall back when an
		// exception follows.
	case "contentBlockStart":
		tu, ok := path(data, "start", "toolUse")
		if !ok || len(tu) == 0 || tu[0] != '{' {
			return nil
		}
		blk, _ := intValue(data, "contentBlockIndex")
		if n, _ := strField(tu, "name"); string(n) == jsonToolName {
			c.st.jsonBlock = blk
			return nil
		}
		idx, _ := c.st.toolIndex(blk)
		d = append(d, `"tool_calls":[`...)
		var err error
		if d, err = appendToolCall(d, tu, idx); err != nil {
			return err
		}
		c.choice(append(d, ']'), "null")
	case "contentBlockDelta":
		delta, ok := field(data, "delta")
		if !ok || len(delta) == 0 || delta[0] != '{' {
			return nil
		}
		if t, ok := strField(delta, "text"); ok {
			if len(t) > 0 {
				c.choice(appendRawString(append(d, `"content":`...), t), "null")
			}
		} else if tu, ok := field(delta, "toolUse"); ok && len(tu) > 0 && tu[0] == '{' {
			frag, _ := strField(tu, "input")
			blk, _ := intValue(data, "contentBlockIndex")
			if blk == c.st.jsonBlock {
				if len(frag) > 0 {
					c.choice(appendRawString(append(d, `"content":`...), frag), "null")
				}
				c.d = d
				return nil
			}
			idx, _ := c.st.toolIndex(blk)
			d = append(d, `"tool_calls":[{"index":`...)
			d = strconv.AppendInt(d, int64(idx), 10)
			d = append(d, `,"function":{"arguments":`...)
			d = appendRawString(d, frag)
			c.choice(append(d, "}}]"...), "null")
		} else if rc, ok := field(delta, "reasoningContent"); ok && len(rc) > 0 && rc[0] == '{' {
			// Signatures and redacted blocks have no OpenAI counterpart.
			if t, ok := strField(rc, "text"); ok && len(t) > 0 {
				c.choice(appendRawString(append(d, `"reasoning_content":`...), t), "null")
			}
		}
	case "messageStop":
		stop, _ := strField(data, "stopReason")
		finish := finishReason(stop)
		if c.st.jsonBlock >= 0 && len(c.st.tools) == 0 {
			finish = "stop" // a structured answer, not a tool call
		}
		c.choice(d, `"`+finish+`"`)
	case "metadata":
		u, ok := field(data, "usage")
		if !ok || len(u) == 0 || u[0] != '{' {
			return nil
		}
		c.header()
		c.out = append(c.out, `"choices":[],"usage":`...)
		c.out = appendUsage(c.out, u)
		c.out = append(c.out, '}')
	}
	// contentBlockStop and unknown events carry nothing to forward.
	c.d = d
	return nil
}

// header opens a chunk object up to its choices.
func (c *chunker) header() {
	if c.n > 0 {
		c.out = append(c.out, ',')
	}
	c.n++
	c.out = append(c.out, `{"id":`...)
	c.out = appendString(c.out, c.st.id)
	c.out = append(c.out, `,"object":"chat.completion.chunk","created":`...)
	c.out = strconv.AppendInt(c.out, c.st.created, 10)
	// adapt_stream is not told the model; the host knows it.
	c.out = append(c.out, `,"model":"",`...)
}

// choice appends a chunk with one choice whose delta holds the members in
// delta, plus the role on the first chunk of the stream.
func (c *chunker) choice(delta []byte, finish string) {
	c.header()
	c.out = append(c.out, `"choices":[{"index":0,"delta":{`...)
	if !c.st.roleSent {
		c.st.roleSent = true
		c.out = append(c.out, `"role":"assistant"`...)
		if len(delta) > 0 {
			c.out = append(c.out, ',')
		}
	}
	c.out = append(c.out, delta...)
	c.out = append(c.out, `},"finish_reason":`...)
	c.out = append(c.out, finish...)
	c.out = append(c.out, "}]}"...)
}
