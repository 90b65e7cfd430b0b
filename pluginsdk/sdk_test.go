package pluginsdk

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestUnknownFieldsSurviveRoundTrip(t *testing.T) {
	in := []byte(`{"model":"m","messages":[{"role":"user","content":"hi","cache_control":{"type":"ephemeral"}}],"top_k":5,"stream_options":{"include_usage":true,"x":1}}`)
	var r ChatRequest
	if err := json.Unmarshal(in, &r); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var a, b map[string]any
	_ = json.Unmarshal(in, &a)
	_ = json.Unmarshal(out, &b)
	aj, _ := json.Marshal(a)
	bj, _ := json.Marshal(b)
	if !bytes.Equal(aj, bj) {
		t.Fatalf("round trip lost data:\n%s\n%s", aj, bj)
	}
	var u Usage
	if err := json.Unmarshal([]byte(`{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":4,"audio_tokens":1},"completion_tokens_details":{"reasoning_tokens":3,"image_tokens":2}}`), &u); err != nil {
		t.Fatal(err)
	}
	if u.PromptTokensDetails.CachedTokens != 4 || u.CompletionTokensDetails.ReasoningTokens != 3 || u.CompletionTokensDetails.ImageTokens != 2 {
		t.Fatalf("usage details: %+v", u)
	}
}

func TestStreamFrameAndDispatch(t *testing.T) {
	f := AppendStreamFrame(nil, StreamInput{State: []byte("st"), Batch: []byte("[1]"), End: true})
	in, err := ParseStreamFrame(f)
	if err != nil || string(in.State) != "st" || string(in.Batch) != "[1]" || !in.End {
		t.Fatalf("%+v %v", in, err)
	}
	if _, err := ParseStreamFrame([]byte{0, 0, 0, 0, 9, 0, 0, 0}); err == nil {
		t.Fatal("bad frame accepted")
	}
	for h := Hook(0); h < hookCount; h++ {
		if got, ok := ParseHook(h.String()); !ok || got != h {
			t.Fatalf("hook %d name round trip", h)
		}
	}
}
