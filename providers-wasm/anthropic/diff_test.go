package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/providers-wasm/anthropic/oracle"
)

// Differential tests against a frozen copy of the adapter before the
// single-pass rewrite (./oracle): for every input both must give the same
// bytes, or the same error. Temporary: they exist to show the rewrite
// changed no behaviour and go away with the oracle.

func oracleAdapter(skip bool) *oracle.Adapter {
	return oracle.NewTest(func() time.Time { return time.Unix(1700000000, 0) }, skip)
}

func sameOutput(t *testing.T, what string, in []byte, got pluginsdk.Output, gerr error, want pluginsdk.Output, werr error) {
	t.Helper()
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%s %q: error %v, oracle %v", what, in, gerr, werr)
	}
	if gerr != nil {
		g, w := pluginsdk.AsError(gerr), pluginsdk.AsError(werr)
		if *g != *w {
			t.Fatalf("%s %q: error %v, oracle %v", what, in, g, w)
		}
		return
	}
	if got.Status != want.Status || !bytes.Equal(got.Body, want.Body) || !bytes.Equal(got.State, want.State) {
		t.Fatalf("%s %q:\nstatus %v body %s\nstate %s\noracle %v body %s\nstate %s", what, in, got.Status, got.Body, got.State, want.Status, want.Body, want.State)
	}
}

func diffSeeds(f *testing.F) {
	for _, dir := range []string{"request", "response", "ingress", "egress"} {
		seedGoldens(f, dir)
	}
	req, resp, _ := benchPayloads()
	f.Add(req)
	f.Add(resp)
}

func FuzzDiffAdaptRequest(f *testing.F) {
	diffSeeds(f)
	a, o := testAdapter(), oracleAdapter(false)
	au, ou := testAdapter(), oracleAdapter(true)
	au.skipValidation = true
	f.Fuzz(func(t *testing.T, in []byte) {
		got, gerr := a.AdaptRequest(in)
		want, werr := o.AdaptRequest(in)
		sameOutput(t, "adapt_request", in, got, gerr, want, werr)
		if json.Valid(in) {
			got, gerr = au.AdaptRequest(in)
			sameOutput(t, "adapt_request unvalidated", in, got, gerr, want, werr)
		} else {
			_, _ = au.AdaptRequest(in)
			_, _ = ou.AdaptRequest(in)
		}
	})
}

func FuzzDiffAdaptResponse(f *testing.F) {
	diffSeeds(f)
	a, o := testAdapter(), oracleAdapter(false)
	au := testAdapter()
	au.skipValidation = true
	f.Fuzz(func(t *testing.T, in []byte) {
		got, gerr := a.AdaptResponse(in)
		want, werr := o.AdaptResponse(in)
		sameOutput(t, "adapt_response", in, got, gerr, want, werr)
		if json.Valid(in) {
			got, gerr = au.AdaptResponse(in)
			sameOutput(t, "adapt_response unvalidated", in, got, gerr, want, werr)
		} else {
			_, _ = au.AdaptResponse(in)
		}
	})
}

func FuzzDiffNative(f *testing.F) {
	diffSeeds(f)
	a, o := testAdapter(), oracleAdapter(false)
	f.Fuzz(func(t *testing.T, in []byte) {
		got, gerr := a.IngressRequest(in)
		want, werr := o.IngressRequest(in)
		sameOutput(t, "ingress_request", in, got, gerr, want, werr)
		got, gerr = a.EgressResponse(in)
		want, werr = o.EgressResponse(in)
		sameOutput(t, "egress_response", in, got, gerr, want, werr)
	})
}

func FuzzDiffStream(f *testing.F) {
	for _, file := range []string{"fake_stream_tool_thinking.sse", "fake_stream_text.sse", "two_tools.sse"} {
		b, _ := readFileBytes("testdata/" + file)
		events := readSSE(f, b)
		batch, _ := json.Marshal(events)
		f.Add([]byte{}, batch, false)
		for i := range events {
			one, _ := json.Marshal(events[i : i+1])
			mid, _ := json.Marshal(events[:i])
			out, _ := testAdapter().AdaptStream(pluginsdk.StreamInput{Batch: mid})
			f.Add(out.State, one, i%2 == 0)
		}
	}
	f.Add([]byte(`{"u":[1,2`), []byte(`[{"event":"error","data":"x"}]`), true)
	f.Add([]byte(`{"id":"m","u":[1,2,3,4],"tb":[1,3],"r":1}`), []byte(`[{"data":{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"a"}}}]`), true)
	a, o := testAdapter(), oracleAdapter(false)
	au := testAdapter()
	au.skipValidation = true
	f.Fuzz(func(t *testing.T, state, batch []byte, end bool) {
		in := pluginsdk.StreamInput{State: state, Batch: batch, End: end}
		got, gerr := a.AdaptStream(in)
		want, werr := o.AdaptStream(in)
		sameOutput(t, "adapt_stream", batch, got, gerr, want, werr)
		// Unvalidated, the host's promise is that state and batch are JSON.
		if json.Valid(batch) && (len(state) == 0 || json.Valid(state)) {
			got, gerr = au.AdaptStream(in)
			sameOutput(t, "adapt_stream unvalidated", batch, got, gerr, want, werr)
		} else {
			_, _ = au.AdaptStream(in)
		}
		got, gerr = a.EgressStream(in)
		want, werr = o.EgressStream(in)
		sameOutput(t, "egress_stream", batch, got, gerr, want, werr)
	})
}

// gen builds random documents shaped like the adapter's inputs: the right
// keys in any order, sometimes repeated, with values of the right and the
// wrong types, so the differential tests reach the branches mutation of
// valid JSON rarely does.
type gen struct{ r *rand.Rand }

func (g gen) pick(vals ...string) string { return vals[g.r.IntN(len(vals))] }

func (g gen) chance(n int) bool { return g.r.IntN(n) == 0 }

// obj writes an object of the members that are not empty, shuffled, and
// now and then one member twice.
func (g gen) obj(members ...string) string {
	var ms []string
	for i := 0; i+1 < len(members); i += 2 {
		if members[i+1] != "" {
			ms = append(ms, `"`+members[i]+`":`+members[i+1])
		}
	}
	if len(ms) > 0 && g.chance(8) {
		ms = append(ms, ms[g.r.IntN(len(ms))])
	}
	if g.chance(3) {
		g.r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	}
	return "{" + strings.Join(ms, ",") + "}"
}

func (g gen) arr(n int, f func() string) string {
	var es []string
	for i := g.r.IntN(n + 1); i > 0; i-- {
		if v := f(); v != "" {
			es = append(es, v)
		}
	}
	return "[" + strings.Join(es, ",") + "]"
}

// opt is v or nothing.
func (g gen) opt(v string) string {
	if g.chance(3) {
		return ""
	}
	return v
}

// must is v, or rarely nothing or a value of another type: for the fields
// without which every case would end in the same error.
func (g gen) must(v string) string {
	switch g.r.IntN(30) {
	case 0:
		return ""
	case 1:
		return g.scalar()
	}
	return v
}

func (g gen) mustf(f func() string) string { return g.must(f()) }

func (g gen) scalar() string {
	return g.pick(`""`, `"x"`, `"a\"b\\c\n"`, `"\u00e9t\u00e9"`, `0`, `12`, `1.5`, `-3`, `true`, `false`, `null`, `{}`, `[]`, `"{\"k\":1}"`)
}

func (g gen) str() string {
	return g.pick(`""`, `"hi"`, `"two words"`, `"q\"uote"`, `"line\nbreak"`, `"caf\u00e9"`, `"emoji \ud83d\ude00"`, `" "`)
}

func (g gen) val(typed func() string) string {
	if g.chance(6) {
		return g.scalar()
	}
	return typed()
}

func (g gen) cc() string {
	return g.opt(g.val(func() string { return g.pick(`{"type":"ephemeral"}`, `null`) }))
}

func (g gen) part() string {
	typ := g.pick(`"text"`, `"refusal"`, `"image_url"`, `"file"`, `"input_audio"`, `"tool_result"`, `"document"`, `"search_result"`, `5`, `"te\u0078t"`)
	url := g.pick(`"data:image/png;base64,iVBORw0KGgo="`, `"data:image/png,raw"`, `"data:image/png;base64"`, `"https://example.com/a.png"`, `""`)
	return g.obj("type", g.opt(typ), "text", g.opt(g.val(g.str)), "refusal", g.opt(g.val(g.str)),
		"image_url", g.opt(g.val(func() string {
			if g.chance(3) {
				return url
			}
			return g.obj("url", g.opt(g.val(func() string { return url })), "detail", g.opt(`"high"`))
		})),
		"file", g.opt(g.val(func() string {
			return g.obj("file_data", g.opt(g.val(func() string { return g.pick(`"data:application/pdf;base64,JVBERi0="`, `"data:x"`) })),
				"file_id", g.opt(g.val(func() string { return `"file_1"` })))
		})),
		"tool_use_id", g.opt(`"t1"`), "content", g.opt(g.str()), "cache_control", g.cc(), "source", g.opt(`{"type":"text","data":"d"}`))
}

func (g gen) content() string {
	return g.val(func() string {
		if g.chance(2) {
			return g.str()
		}
		return g.arr(3, g.part)
	})
}

func (g gen) message() string {
	role := g.pick(`"system"`, `"developer"`, `"user"`, `"user"`, `"user"`, `"assistant"`, `"assistant"`, `"assistant"`, `"tool"`, `"tool"`, `"critic"`, `"us\u0065r"`)
	return g.mustf(func() string {
		return g.obj("role", g.must(role), "content", g.must(g.content()),
			"tool_calls", g.opt(g.val(func() string {
				return g.arr(2, func() string {
					return g.val(func() string {
						return g.obj("id", g.opt(g.val(func() string { return g.pick(`"call_1"`, `"call_2"`) })), "type", g.opt(`"function"`),
							"function", g.opt(g.val(func() string {
								return g.obj("name", g.opt(g.val(func() string { return `"get_weather"` })),
									"arguments", g.opt(g.val(func() string {
										return g.pick(`"{\"city\":\"Paris\"}"`, `" {\"a\":[1,2]} "`, `""`, `"  "`, `"[1]"`, `"{\"a\":"`, `{"x":1}`, `"{\"s\":\"\\u00e9\\n\"}"`)
									})))
							})))
					})
				})
			})),
			"thinking_blocks", g.opt(g.val(func() string {
				return g.arr(2, func() string {
					return g.obj("type", g.pick(`"thinking"`, `"redacted_thinking"`, `"other"`), "thinking", g.opt(g.val(g.str)),
						"signature", g.opt(g.val(func() string { return g.pick(`"sig"`, `""`) })), "data", g.opt(g.val(func() string { return `"enc"` })))
				})
			})),
			"tool_call_id", g.opt(g.val(func() string { return `"call_1"` })), "is_error", g.opt(g.pick(`true`, `false`, `"true"`)),
			"name", g.opt(`"bob"`))
	})
}

func (g gen) tool() string {
	return g.val(func() string {
		return g.obj("type", g.opt(g.pick(`"function"`, `"web_search_20250305"`, `1`)),
			"function", g.opt(g.val(func() string {
				return g.obj("name", g.opt(g.val(func() string { return `"f"` })), "description", g.opt(g.val(g.str)),
					"parameters", g.opt(g.val(func() string { return `{"type":"object","properties":{"a":{"type":"string"}}}` })),
					"cache_control", g.cc())
			})), "cache_control", g.cc(), "name", g.opt(`"web_search"`))
	})
}

func (g gen) chatBody() string {
	return g.obj("model", g.opt(g.val(func() string { return `"claude-x"` })),
		"messages", g.must(g.arr(6, g.message)),
		"max_tokens", g.opt(g.val(func() string { return g.pick(`100`, `2000`, `5000.0`, `1e3`, `20000`) })),
		"max_completion_tokens", g.opt(g.val(func() string { return g.pick(`300`, `1025`) })),
		"temperature", g.opt(g.val(func() string { return g.pick(`0.2`, `1`, `1.0`) })),
		"top_p", g.opt(g.val(func() string { return g.pick(`0.5`, `0.99`, `1`) })),
		"stop", g.opt(g.val(func() string { return g.pick(`"END"`, `["a","b"]`) })),
		"tools", g.opt(g.val(func() string { return g.arr(3, g.tool) })),
		"tool_choice", g.opt(g.val(func() string {
			return g.pick(`"auto"`, `"none"`, `"required"`, `"any"`, `"other"`, `{"type":"function","function":{"name":"f"}}`, `{"type":"any"}`, `{"type":"none"}`, `{"type":"x"}`, `{"type":"function"}`)
		})),
		"parallel_tool_calls", g.opt(g.pick(`false`, `true`)),
		"user", g.opt(g.val(func() string { return g.pick(`"u1"`, `""`) })),
		"reasoning_effort", g.opt(g.val(func() string { return g.pick(`"minimal"`, `"low"`, `"medium"`, `"high"`, `"max"`) })),
		"thinking", g.opt(g.pick(`{"type":"enabled","budget_tokens":2048}`, `null`)),
		"stream", g.opt(`true`), "n", g.opt(`2`), "top_k", g.opt(`5`), "metadata", g.opt(`{"a":1}`), "system", g.opt(`"s"`),
		"stop_sequences", g.opt(`["x"]`), "container", g.opt(`{"id":"c"}`), `x\"y`, g.opt(`1`))
}

func (g gen) adaptRequest() string {
	return g.obj("request_type", g.must(g.pick(`"chat.completion"`, `"chat.completion"`, `"chat.completion"`, `"count_tokens"`, `"list_models"`, `"embedding"`, `"chat.completio\u006e"`)),
		"provider", g.opt(`"anthropic"`), "model", g.must(g.pick(`"claude-sonnet-4"`, `"m\u00e9"`, `"a<b"`, `""`)),
		"stream", g.opt(g.pick(`true`, `false`)), "base_url", g.opt(`"https://x"`), "body", g.must(g.chatBody()))
}

func (g gen) respBlock() string {
	return g.val(func() string {
		return g.obj("type", g.opt(g.pick(`"text"`, `"thinking"`, `"redacted_thinking"`, `"tool_use"`, `"server_tool_use"`, `"te\u0078t"`)),
			"text", g.opt(g.val(g.str)), "thinking", g.opt(g.val(g.str)), "signature", g.opt(`"sig"`), "data", g.opt(`"d"`),
			"id", g.opt(g.val(func() string { return `"toolu_1"` })), "name", g.opt(g.val(func() string { return `"f"` })),
			"input", g.opt(g.val(func() string {
				return g.pick(`{"a":1}`, `{ "a" : [ 1 , "x y" ] , "b" : { } }`, `{"s":"q\"\\ \u00e9 <>&\n"}`, `{}`, "{\n  \"k\": \"v\"\n}")
			})), "citations", g.opt(`[]`))
	})
}

func (g gen) usage() string {
	n := func() string { return g.pick(`0`, `5`, `100`, `1.0`, `null`, `"7"`) }
	return g.val(func() string {
		return g.obj("input_tokens", g.opt(n()), "output_tokens", g.opt(n()), "cache_read_input_tokens", g.opt(n()),
			"cache_creation_input_tokens", g.opt(n()), "service_tier", g.opt(`"standard"`))
	})
}

func (g gen) message2() string {
	return g.val(func() string {
		return g.obj("id", g.opt(g.val(func() string { return `"msg_1"` })), "type", g.opt(`"message"`), "role", g.opt(`"assistant"`),
			"model", g.opt(g.val(func() string { return `"claude-x"` })), "content", g.must(g.arr(4, g.respBlock)),
			"stop_reason", g.opt(g.val(func() string {
				return g.pick(`"end_turn"`, `"max_tokens"`, `"tool_use"`, `"refusal"`, `"pause_turn"`, `"model_context_window_exceeded"`)
			})), "usage", g.opt(g.usage()), "input_tokens", g.opt(g.val(func() string { return `42` })),
			"data", g.opt(`[{"id":"claude-x","created_at":"2025-01-01T00:00:00Z","display_name":"X"},{"id":1},{"id":"y","created_at":"bad"}]`))
	})
}

func (g gen) adaptResponse() string {
	return g.obj("request_type", g.must(g.pick(`"chat.completion"`, `"chat.completion"`, `"chat.completion"`, `"count_tokens"`, `"list_models"`, `"embedding"`)),
		"model", g.opt(g.val(func() string { return `"fallback"` })), "status", g.opt(`200`), "body", g.must(g.message2()))
}

func (g gen) event() string {
	name := g.pick(`"message_start"`, `"content_block_start"`, `"content_block_delta"`, `"content_block_delta"`, `"message_delta"`, `"message_stop"`, `"ping"`, `"error"`, `"content_block_stop"`)
	idx := func() string { return g.pick(`0`, `1`, `2`, `"1"`) }
	data := g.mustf(func() string {
		return g.obj("type", g.must(name), "index", g.must(idx()),
			"message", g.opt(g.val(func() string {
				return g.obj("id", g.opt(g.val(func() string { return `"msg_1"` })), "model", g.opt(g.val(func() string { return `"claude-x"` })), "usage", g.opt(g.usage()))
			})),
			"content_block", g.opt(g.respBlock()),
			"delta", g.opt(g.val(func() string {
				return g.obj("type", g.opt(g.pick(`"text_delta"`, `"input_json_delta"`, `"thinking_delta"`, `"signature_delta"`, `"citations_delta"`)),
					"text", g.opt(g.val(g.str)), "partial_json", g.opt(g.val(func() string { return g.pick(`""`, `"{\"a\":"`, `"1}"`) })),
					"thinking", g.opt(g.val(g.str)), "signature", g.opt(g.val(func() string { return `"sig"` })),
					"stop_reason", g.opt(g.val(func() string { return g.pick(`"end_turn"`, `"tool_use"`) })))
			})),
			"usage", g.opt(g.usage()),
			"error", g.opt(g.val(func() string {
				return g.obj("type", g.opt(g.pick(`"overloaded_error"`, `"rate_limit_error"`, `"timeout_error"`, `"api_error"`)), "message", g.opt(g.val(g.str)))
			})))
	})
	return g.must(g.obj("event", g.opt(name), "data", g.must(data)))
}

func (g gen) state() string {
	if g.chance(3) {
		return ""
	}
	return g.obj("id", g.opt(g.val(func() string { return `"msg_1"` })), "model", g.opt(`"claude-x"`), "created", g.opt(g.pick(`1700000000`, `"x"`)),
		"u", g.opt(g.val(func() string { return g.pick(`[1,2,3,4]`, `[1,2]`, `[1,2,3,4,5]`, `[]`) })),
		"tb", g.opt(g.val(func() string { return g.pick(`[1]`, `[0,2]`, `["x"]`) })), "r", g.opt(`1`), "d", g.opt(`1`))
}

func TestDiffGenerated(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(1, 2))}
	a, o := testAdapter(), oracleAdapter(false)
	au := testAdapter()
	au.skipValidation = true
	for i := 0; i < 30000; i++ {
		in := []byte(g.adaptRequest())
		if !json.Valid(in) {
			t.Fatalf("generator: %s", in)
		}
		if i%1000 == 0 && testing.Verbose() {
			t.Logf("sample: %s", in)
		}
		got, gerr := a.AdaptRequest(in)
		want, werr := o.AdaptRequest(in)
		sameOutput(t, "adapt_request", in, got, gerr, want, werr)
		got, gerr = au.AdaptRequest(in)
		sameOutput(t, "adapt_request unvalidated", in, got, gerr, want, werr)

		in = []byte(g.adaptResponse())
		got, gerr = a.AdaptResponse(in)
		want, werr = o.AdaptResponse(in)
		sameOutput(t, "adapt_response", in, got, gerr, want, werr)
		got, gerr = au.AdaptResponse(in)
		sameOutput(t, "adapt_response unvalidated", in, got, gerr, want, werr)

		st := pluginsdk.StreamInput{State: []byte(g.state()), Batch: []byte(g.arr(4, g.event)), End: g.chance(2)}
		got, gerr = a.AdaptStream(st)
		want, werr = o.AdaptStream(st)
		sameOutput(t, "adapt_stream", append(append(st.State, ' '), st.Batch...), got, gerr, want, werr)
		if len(st.State) > 0 && !json.Valid(st.State) {
			t.Fatalf("generator: state %s", st.State)
		}
		got, gerr = au.AdaptStream(st)
		sameOutput(t, "adapt_stream unvalidated", append(append(st.State, ' '), st.Batch...), got, gerr, want, werr)
	}
}
