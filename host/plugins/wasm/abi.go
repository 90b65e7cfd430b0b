package wasm

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/wasmgate/gateway/pluginsdk"
)

const wasiModule = "wasi_snapshot_preview1"

// checkABI rejects a module of unknown ABI from its compiled metadata alone,
// so none of its code (not even _initialize) runs.
func checkABI(c wazero.CompiledModule) error {
	exports := c.ExportedFunctions()
	if _, ok := exports[pluginsdk.ExportMarker]; !ok {
		var markers []string
		for name := range exports {
			if strings.HasPrefix(name, "wasmgate_abi_") {
				markers = append(markers, name)
			}
		}
		sort.Strings(markers)
		if len(markers) > 0 {
			return fmt.Errorf("unsupported plugin ABI: module exports %s, this host speaks %s (rebuild the plugin with a matching pluginsdk)",
				strings.Join(markers, ", "), pluginsdk.ExportMarker)
		}
		return fmt.Errorf("not a wasmgate plugin: export %q missing (build it with pluginsdk.Register and -buildmode=c-shared)", pluginsdk.ExportMarker)
	}
	want := []struct {
		name           string
		params, result []api.ValueType
	}{
		{pluginsdk.ExportMarker, nil, nil},
		{pluginsdk.ExportInput, []api.ValueType{api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}},
		{pluginsdk.ExportCall, []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}},
	}
	for _, w := range want {
		def, ok := exports[w.name]
		if !ok {
			return fmt.Errorf("plugin ABI v%d: export %q missing", pluginsdk.ABIVersion, w.name)
		}
		if !sameTypes(def.ParamTypes(), w.params) || !sameTypes(def.ResultTypes(), w.result) {
			return fmt.Errorf("plugin ABI v%d: export %q has signature %v -> %v", pluginsdk.ABIVersion, w.name, def.ParamTypes(), def.ResultTypes())
		}
	}
	if _, ok := exports["_initialize"]; !ok {
		return fmt.Errorf("plugin ABI v%d: export _initialize missing (build with -buildmode=c-shared)", pluginsdk.ABIVersion)
	}
	for _, def := range c.ImportedFunctions() {
		mod, name, _ := def.Import()
		switch mod {
		case pluginsdk.ImportModule, wasiModule:
		default:
			return fmt.Errorf("unsupported plugin ABI: module imports %s.%s; only %s and %s are provided",
				mod, name, pluginsdk.ImportModule, wasiModule)
		}
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
