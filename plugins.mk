# Build of the first-party plugin modules and examples. Included by the main
# Makefile; usable alone with `make -f plugins.mk plugins`.
#
# Go's build cache makes rebuilding an unchanged module cheap, so the wasm
# targets are always handed to `go build` (FORCE) instead of guessing their
# dependencies here.

GO ?= go
PLUGIN_WASM_ENV := GOOS=wasip1 GOARCH=wasm
PLUGIN_BIN := bin/plugins
PLUGIN_EXAMPLES_BIN := bin/examples
FIRST_PARTY_PLUGINS := pii maxtokens
# Provider adapters: one module per wire family under providers-wasm/.
PROVIDER_ADAPTERS := $(notdir $(wildcard providers-wasm/*))

.PHONY: plugins plugins-examples plugins-test plugins-race plugins-bench plugins-clean FORCE

## plugins: first-party wasm modules -> bin/plugins/<name>.wasm
plugins: $(FIRST_PARTY_PLUGINS:%=$(PLUGIN_BIN)/%.wasm) $(PROVIDER_ADAPTERS:%=$(PLUGIN_BIN)/adapter-%.wasm)

$(PLUGIN_BIN)/adapter-%.wasm: FORCE
	@mkdir -p $(PLUGIN_BIN)
	$(PLUGIN_WASM_ENV) $(GO) build -buildmode=c-shared -o $@ ./providers-wasm/$*

$(PLUGIN_BIN)/%.wasm: FORCE
	@mkdir -p $(PLUGIN_BIN)
	$(PLUGIN_WASM_ENV) $(GO) build -buildmode=c-shared -o $@ ./plugins/$*

## plugins-examples: the third-party-style examples (own go.mod each)
plugins-examples: $(PLUGIN_EXAMPLES_BIN)/wasm-guardrail.wasm $(PLUGIN_EXAMPLES_BIN)/process-plugin

$(PLUGIN_EXAMPLES_BIN)/wasm-guardrail.wasm: FORCE
	@mkdir -p $(PLUGIN_EXAMPLES_BIN)
	cd examples/wasm-guardrail && $(PLUGIN_WASM_ENV) $(GO) build -buildmode=c-shared -o $(CURDIR)/$@ .

$(PLUGIN_EXAMPLES_BIN)/process-plugin: FORCE
	@mkdir -p $(PLUGIN_EXAMPLES_BIN)
	cd examples/process-plugin && $(GO) build -o $(CURDIR)/$@ .

## plugins-test: plugin host, SDK and first-party plugin tests (builds the
## test modules itself, no prior make step needed)
plugins-test:
	$(GO) test ./pluginsdk/... ./host/plugins/... ./plugins/...
	cd examples/wasm-guardrail && $(GO) test ./...

plugins-race:
	$(GO) test -race ./host/plugins/...

## plugins-bench: the figures in BENCHMARKS.md, section "Plugin host"
plugins-bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s ./host/plugins/
	$(GO) test -run '^$$' -bench . ./plugins/pii/

plugins-clean:
	rm -rf $(PLUGIN_BIN) $(PLUGIN_EXAMPLES_BIN)

FORCE:
