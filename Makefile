# durawait — the two commands a newcomer needs are `make run` and `make test`.

GO      ?= go
BIN     := bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all build run test unit e2e fuzz vet fmt-check bench screenshot deploy-check clean

all: build

## build: the durawait binary and the demo probe server, into bin/
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/durawait ./cmd/durawait
	$(GO) build -o $(BIN)/demoprobe ./cmd/demoprobe

## run: durawait serve with the demo config (MCP at http://127.0.0.1:8765/mcp, UI at http://127.0.0.1:8233)
run: build
	$(BIN)/durawait serve --config deploy/examples/demo.toml

## test: formatting, vet, and every test (unit and end-to-end). Every fuzz
## target's seed corpus (the seeds in the test file plus testdata/fuzz, where
## each crasher ever found is kept) runs as an ordinary unit test here, which
## is what CI needs; `make fuzz` explores beyond the seeds.
test: fmt-check vet
	$(GO) test -count=1 -timeout 30m ./...

## unit: the fast tests only (no processes started)
unit:
	$(GO) test -count=1 ./workflows/... ./activities/... ./mcpfront/... ./worker/... ./cmd/... ./internal/archtest/... ./internal/config/... ./internal/datadir/... ./internal/samplehub/... ./internal/stdiobridge/... ./internal/auth/... ./internal/agentproc/...

## e2e: the end-to-end tests only
e2e:
	$(GO) test -count=1 -timeout 30m ./internal/e2e/...

# FUZZ_TARGETS: package:target pairs of every go test -fuzz target.
FUZZ_TARGETS := \
	./workflows:FuzzParseWaitFor \
	./workflows:FuzzParseStartAgent \
	./workflows:FuzzParseInvocationID \
	./workflows:FuzzParseWaitForText \
	./activities/agentstream:FuzzAgentStream \
	./activities/tmuxwatch:FuzzTmuxDecode
FUZZTIME ?= 60s

## fuzz: run each fuzz target for FUZZTIME (default 60s; e.g. make fuzz FUZZTIME=10s).
## A crasher is written to the package's testdata/fuzz/<target>/: commit it
## with the fix, and it runs as a regression test in make test from then on.
fuzz:
	@set -e; for pt in $(FUZZ_TARGETS); do \
		pkg=$${pt%%:*}; target=$${pt##*:}; \
		echo "== $$target ($$pkg, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

## screenshot: docs/img/operator-view.png (the Temporal UI's list of running
## waits in the operator's saved view) and docs/img/wait-detail.png (one wait),
## rendered by headless Chromium (apt-get install -y chromium) from a real durawait serve
screenshot:
	DURAWAIT_SCREENSHOTS=$(CURDIR)/docs/img $(GO) test -count=1 -run '^TestUIScreenshot$$' -v ./internal/e2e/

## deploy-check: validate deploy/ without a container engine or a cluster: the
## compose file (docker-compose config), every kustomization (kubectl kustomize),
## the systemd unit (systemd-analyze verify, when installed); see deploy/check.sh
deploy-check:
	./deploy/check.sh

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## bench: benchmarks (timing claims live here, not in tests)
bench:
	$(GO) test -run '^$$' -bench 'ColdStart|Detection|Latency|Overhead' -benchtime 10x -timeout 30m ./internal/e2e/ | tee bench-report.txt
	$(GO) test -run '^$$' -bench 'ConcurrentWaits' -benchtime 1x -timeout 30m ./internal/e2e/ | tee -a bench-report.txt

clean:
	rm -rf $(BIN)
