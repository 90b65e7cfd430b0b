// Command faulty is a test plugin that misbehaves on request: the first
// word of a pre_request body picks the failure. It builds for both runtimes
// (wasip1 module and go-plugin subprocess) from the same code.
package main

import (
	"bytes"
	"os"
	"strconv"
	"time"
	"unsafe"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
)

type faulty struct {
	tag string
	// signing is a write-only setting in the config schema: the registry
	// never shows it, and "signing" answers it so tests can see what the
	// plugin was configured with.
	signing string
}

// configSchema marks signing (and upstream.auth) writeOnly; their names
// do not look like secrets, so only the schema can hide them.
const configSchema = `{"type":"object","properties":{"tag":{"type":"string"},"signing":{"type":"string","writeOnly":true},` +
	`"upstream":{"type":"object","properties":{"auth":{"type":"string","writeOnly":true},"url":{"type":"string"}}}}}`

var sink [][]byte
var spin uint64

func (f *faulty) Manifest() pluginsdk.Manifest {
	return pluginsdk.Manifest{Name: "faulty", Version: "1.0.0", Kind: pluginsdk.KindTransform, ConfigSchema: pluginsdk.RawJSON(configSchema)}
}

func (f *faulty) Configure(cfg []byte) error {
	if bytes.Contains(cfg, []byte(`"fail_configure"`)) {
		return pluginsdk.Reject(400, "config rejected on purpose")
	}
	if tag, ok := jsonx.StringField(cfg, "tag"); ok {
		f.tag = string(tag)
	}
	f.signing = ""
	if s, ok := jsonx.StringField(cfg, "signing"); ok {
		f.signing = string(s)
	}
	return nil
}

func (f *faulty) PreRequest(req []byte) (pluginsdk.Output, error) {
	word, _, _ := bytes.Cut(req, []byte(" "))
	switch string(word) {
	case "panic":
		panic("boom: asked to panic")
	case "trap":
		// An out-of-bounds load is a real wasm trap, not a Go panic.
		p := (*uint64)(unsafe.Pointer(uintptr(0xFFFFFFF0)))
		spin += *p
	case "loop":
		for {
			spin++
		}
	case "oom":
		for {
			sink = append(sink, make([]byte, 16<<20))
		}
	case "exit":
		os.Exit(3)
	case "hang":
		time.Sleep(time.Hour)
	case "reject":
		return pluginsdk.Output{}, pluginsdk.Reject(403, "rejected on purpose")
	case "respond":
		return pluginsdk.Respond([]byte(`{"id":"short","choices":[]}`)), nil
	case "signing":
		return pluginsdk.Output{Status: pluginsdk.StatusOK, Body: []byte(f.signing)}, nil
	case "env": // "env NAME" answers the guest's environment variable
		_, name, _ := bytes.Cut(req, []byte(" "))
		return pluginsdk.Output{Status: pluginsdk.StatusOK, Body: []byte(os.Getenv(string(name)))}, nil
	}
	out := append([]byte(f.tag+":"), req...)
	return pluginsdk.Output{Status: pluginsdk.StatusOK, Body: out, Headers: map[string]string{"x-faulty-tag": f.tag}}, nil
}

// StreamBatch counts batches in the host-kept state and echoes the batch.
func (f *faulty) StreamBatch(in pluginsdk.StreamInput) (pluginsdk.Output, error) {
	n, _ := strconv.Atoi(string(in.State))
	n++
	if in.End {
		return pluginsdk.Output{Status: pluginsdk.StatusOK, Body: []byte("end:" + strconv.Itoa(n)), State: []byte(strconv.Itoa(n))}, nil
	}
	if len(in.Batch) == 0 {
		return pluginsdk.Drop(), nil
	}
	return pluginsdk.Output{Status: pluginsdk.StatusOK, Body: in.Batch, State: []byte(strconv.Itoa(n))}, nil
}

// AdaptRequest returns an upstream request spec, the shape a provider
// adapter produces.
func (f *faulty) AdaptRequest(req []byte) (pluginsdk.Output, error) {
	model, _ := jsonx.StringField(req, "model")
	spec := `{"method":"POST","path":"/v1/chat/completions","headers":{"x-model":` + strconv.Quote(string(model)) + `},"body":` + string(req) + `}`
	return pluginsdk.Replace([]byte(spec)), nil
}

var plugin = &faulty{}
