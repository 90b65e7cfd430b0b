package inference

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestAppendEventsMatchesMarshal: the hand-written batch encoding is what
// json.Marshal gives for the same events (modulo Marshal's compaction of
// data, which the inputs here already are).
func TestAppendEventsMatchesMarshal(t *testing.T) {
	batches := [][]UpstreamEvent{
		nil,
		{},
		{{Data: json.RawMessage(`{"a":1}`)}},
		{{Event: "message_start", Data: json.RawMessage(`{"type":"message_start","message":{"id":"x"}}`)},
			{Event: "content_block_delta", Data: json.RawMessage(`{"delta":{"text":"h\u00e9 \"q\""}}`)},
			{Event: `we"ird<>&`, Data: json.RawMessage(`"[DONE]"`)},
			{Event: "ThrottlingException", Data: json.RawMessage(`{"message":"slow down"}`), Exception: true},
			{Event: "empty"}},
	}
	for _, b := range batches {
		want, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			want = []byte("[]")
		}
		if got := appendEvents(nil, b); !bytes.Equal(got, want) {
			t.Errorf("appendEvents:\n got %s\nwant %s", got, want)
		}
	}
}
