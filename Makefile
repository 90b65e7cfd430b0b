# wasmgate build. `make run` builds the host and every wasm module, then
# starts the gateway on its embedded defaults; `make test` runs all tests.
GO      ?= go
BIN     := bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# Runtime defaults linked into the gateway (GODEBUG in the environment
# still wins). schedtrace keeps Go's sysmon thread from its deep sleep:
# in that sleep every system call entry has to wake it with a futex, a
# thread wake-up (an IPI on a VM) on each request of a lightly loaded
# gateway. Kept awake it polls every 10 ms when idle. Measured: 18-28% less
# CPU per request at concurrency 1, passthrough and translated, and no
# change at 64 (BENCHMARKS.md). The interval is the largest Go accepts
# (24.8 days); on a host up for longer the runtime prints one `SCHED`
# summary line to stderr at start and one per interval.
RUNTIME_DEFAULTS ?= schedtrace=2147483647
LDFLAGS := -s -w -X github.com/wasmgate/gateway/host/server.Version=$(VERSION) -X runtime.godebugDefault=$(RUNTIME_DEFAULTS)
# Test timeout is generous: the suite builds wasm modules and subprocesses.
TESTFLAGS ?= -count=1 -timeout 20m

-include plugins.mk

.PHONY: all build host wasm run test test-deps test-race fuzz bench bench-go vet fmt clean

all: build

build: host wasm

host:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/gateway ./cmd/gateway

# Every wasm module: first-party plugins and provider adapters (plugins.mk),
# and the third-party-style examples.
wasm: plugins plugins-examples

run: build
	./$(BIN)/gateway $(ARGS)

test: build
	$(GO) vet ./...
	$(GO) test $(TESTFLAGS) ./...
	cd examples/wasm-guardrail && $(GO) test $(TESTFLAGS) ./...

# Node packages the tests run against (pinned by package-lock.json files).
NPM_TEST_DIRS := host/webhooks/testdata/verifier cmd/gateway/testdata/sdk host/inference/convert/testdata/sdk host/mcp/testdata/oidc
test-deps:
	@command -v node >/dev/null || (apt-get update && apt-get install -y nodejs npm)
	@for d in $(NPM_TEST_DIRS); do echo "npm ci $$d"; npm ci --no-audit --no-fund --prefix $$d >/dev/null || exit 1; done

test-race:
	$(GO) test -race $(TESTFLAGS) ./host/... ./store/...

# Short fuzzing of every fuzz target (CI runs the seed corpus via `make test`).
FUZZTIME ?= 20s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# Load benchmark against a local mock upstream (nginx is the floor); writes
# its section of BENCHMARKS.md. SOAK=0 skips the 5-minute soak.
SOAK ?= 5m
BENCH_DURATION ?= 8s
bench: build mockupstream
	@command -v nginx >/dev/null || test -x /usr/sbin/nginx || (apt-get update -qq && apt-get install -y -qq nginx-light || apt-get install -y -qq nginx)
	$(GO) run ./cmd/loadbench -bin $(BIN) -duration $(BENCH_DURATION) -soak $(SOAK)

# Micro-benchmarks (go test -bench) of every package.
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./...

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN)

# Fake upstream providers on 127.0.0.1 for the load benchmark (see cmd/mockupstream).
.PHONY: mockupstream
mockupstream:
	$(GO) build -trimpath -o $(BIN)/mockupstream ./cmd/mockupstream
