package main

import (
	"flag"
	"testing"

	"github.com/wasmgate/gateway/pluginsdk"
	"github.com/wasmgate/gateway/pluginsdk/plugintest"
)

var update = flag.Bool("update", false, "rewrite the golden .want.json files")

// The golden harness lives in pluginsdk/plugintest; these wrappers keep the
// tests short.
func runGolden(t *testing.T, dir string, fn func(t *testing.T, in []byte) (any, error)) {
	t.Helper()
	plugintest.Golden(t, dir, *update, fn)
}

func normalize(t *testing.T, v any) any { t.Helper(); return plugintest.Normalize(t, v) }

func runStream(t *testing.T, in []byte, hook func(pluginsdk.StreamInput) (pluginsdk.Output, error)) (any, error) {
	t.Helper()
	return plugintest.RunStream(t, in, hook)
}

func errCode(err error) int { return plugintest.ErrCode(err) }

// streamCase is the stream golden input (see plugintest.StreamCase).
type streamCase = plugintest.StreamCase
