package main

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

// The decoders face bytes from upstreams and clients: whatever comes in,
// they return output or an error, never panic or loop. go test runs the
// seeds; go test -fuzz=FuzzX -fuzzminimizetime=2s explores further (the
// seeds are kilobytes, and the default minimisation of each new input then
// takes minutes, which looks like a hang but is not).

func seedGoldens(f *testing.F, dir string) {
	files, _ := globTestdata(dir)
	for _, file := range files {
		var g golden
		if b, err := readFileBytes(file); err == nil && json.Unmarshal(b, &g) == nil {
			f.Add([]byte(g.Input))
		}
	}
	f.Add([]byte(`{`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"body":"\ud800"}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}`))
}

// checkJSONOut fails when a successful call produced invalid JSON.
func checkJSONOut(t *testing.T, out pluginsdk.Output, err error) {
	if err == nil && out.Body != nil && !json.Valid(out.Body) {
		t.Fatalf("invalid output JSON: %s", out.Body)
	}
	if err != nil {
		if _, ok := err.(*pluginsdk.Error); !ok {
			t.Fatalf("error is not a *pluginsdk.Error: %v", err)
		}
	}
}

func FuzzAdaptResponse(f *testing.F) {
	seedGoldens(f, "response")
	a := testAdapter()
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := a.AdaptResponse(b)
		checkJSONOut(t, out, err)
		if !json.Valid(b) && err == nil {
			t.Fatal("malformed input accepted")
		}
	})
}

func FuzzIngressRequest(f *testing.F) {
	seedGoldens(f, "ingress")
	a := testAdapter()
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := a.IngressRequest(b)
		checkJSONOut(t, out, err)
		if !json.Valid(b) && err == nil {
			t.Fatal("malformed input accepted")
		}
	})
}

func FuzzAdaptStream(f *testing.F) {
	for _, file := range []string{"fake_stream_tool_thinking.sse", "two_tools.sse"} {
		b, _ := readFileBytes("testdata/" + file)
		events := readSSE(f, b)
		batch, _ := json.Marshal(events)
		f.Add([]byte{}, batch)
		mid, _ := json.Marshal(events[:3])
		out, _ := testAdapter().AdaptStream(pluginsdk.StreamInput{Batch: mid})
		f.Add(out.State, batch)
	}
	f.Add([]byte(`{"u":[1,2`), []byte(`[{"event":"error","data":"x"}]`))
	a := testAdapter()
	f.Fuzz(func(t *testing.T, state, batch []byte) {
		out, err := a.AdaptStream(pluginsdk.StreamInput{State: state, Batch: batch, End: len(batch)%2 == 0})
		checkJSONOut(t, out, err)
		if err == nil && out.State != nil && !json.Valid(out.State) {
			t.Fatalf("invalid state %s", out.State)
		}
		// Unified chunks feed egress_stream on the drop-in route.
		if err == nil && out.Body != nil {
			o2, err2 := a.EgressStream(pluginsdk.StreamInput{Batch: out.Body, End: true})
			checkJSONOut(t, o2, err2)
		}
	})
}

// adapt_request and egress_response take the host's own (validated)
// JSON, but must still be total.
func FuzzAdaptRequest(f *testing.F) {
	seedGoldens(f, "request")
	a := testAdapter()
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := a.AdaptRequest(b)
		checkJSONOut(t, out, err)
		o2, err2 := a.EgressResponse(b)
		checkJSONOut(t, o2, err2)
	})
}

// FuzzUnvalidatedHooks runs the hot hooks with input validation off (as the
// gateway configures its bundled adapter): malformed bytes may give an error
// or garbage, but never a panic, which would kill the wasm instance.
func FuzzUnvalidatedHooks(f *testing.F) {
	f.Add([]byte(`{"request_type":"chat.completion","model":"m","body":{"messages":[{"role":"user","content":"hi"}]}}`))
	f.Add([]byte(`{"status":200,"body":{"content":[{"type":"text","text":"x"}],"usage":{"input_tokens":1}}}`))
	f.Add([]byte(`[{"event":"message_start","data":{"message":{"id":"m"}}}]`))
	f.Add([]byte(`{"body":{"messages":[{"content":[{"type":"image_url","image_url":`))
	f.Add([]byte(`{"id":"m","u":[1,2,3,4],"tb":[1,`))
	f.Fuzz(func(t *testing.T, in []byte) {
		a := New()
		if err := a.Configure([]byte(`{"validate_input":false}`)); err != nil {
			t.Fatal(err)
		}
		_, _ = a.AdaptRequest(in)
		_, _ = a.AdaptResponse(in)
		_, _ = a.AdaptStream(pluginsdk.StreamInput{Batch: in})
		// The state blob is not validated either then.
		_, _ = a.AdaptStream(pluginsdk.StreamInput{State: in, Batch: []byte(`[{"event":"message_stop"}]`), End: true})
	})
}

// appendCompactString must write what compacting with encoding/json and
// then quoting with jsonx.AppendString writes, for every valid value.
func FuzzAppendCompactString(f *testing.F) {
	for _, s := range []string{`{}`, `{ "a" : [ 1 , "x y" ] , "b" : { } }`, `{"s":"q\"\\ \u00e9 <>&\n\/"}`, "{\n  \"k\": \"v\"\n}",
		`"\\\""`, `[" \t",true,null,-1.5e3]`, "{\"\xff\":\"\xe2\x80\xa8\"}", `"é😀"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var buf bytes.Buffer
		if json.Compact(&buf, raw) != nil {
			return
		}
		want := jsonx.AppendString(nil, buf.String())
		if got := appendCompactString(nil, raw); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s want %s", raw, got, want)
		}
	})
}

// intOf's shortcuts must answer as strconv does.
func FuzzIntOf(f *testing.F) {
	for _, s := range []string{"0", "12", "-3", "1.0", "1e3", "1.5", `"7"`, "null", "nan", "NaN", "true", "+1", ".0", "Inf", "999999999999999999", "9223372036854775808", "{}", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, gok := intOf(raw)
		var want int64
		var wok bool
		if len(raw) > 0 {
			if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
				want, wok = n, true
			} else if fl, err := strconv.ParseFloat(string(raw), 64); err == nil && fl == float64(int64(fl)) {
				want, wok = int64(fl), true
			}
		}
		if got != want || gok != wok {
			t.Fatalf("intOf(%q) = %d %v, strconv %d %v", raw, got, gok, want, wok)
		}
	})
}
