# durawait — the two commands a newcomer needs are `make run` and `make test`.

GO      ?= go
BIN     := bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all help build release release-noengine images run test unit e2e e2e-cluster tools fuzz vet fmt-check cross bench bench-check bench-capacity bench-recovery bench-stalls bench-cluster bench-actions cluster-bins soak screenshot deploy-check clean

all: build

## help: this list of targets (the ## comments above each)
help:
	@awk '/^## [a-z0-9-]+:/ { sub(/^## /, ""); split($$0, a, ":"); printf "  make %-18s%s\n", a[1], substr($$0, length(a[1]) + 2); next } /^## / { sub(/^## /, ""); printf "  %-23s%s\n", "", $$0 }' $(MAKEFILE_LIST)

## build: the durawait binary and the demo probe server, into bin/
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/durawait ./cmd/durawait
	$(GO) build -o $(BIN)/demoprobe ./cmd/demoprobe

# RUN_FLAGS: flags of `make run` beyond the demo config, made from HTTP,
# ENGINE_PORT, UI_PORT and DATA_DIR given on make's command line (not from
# the environment, where a DATA_DIR may mean something else), e.g.
# make run HTTP=127.0.0.1:9000.
cmdline = $(if $(filter command line,$(origin $(1))),$(2) $($(1)))
RUN_FLAGS = $(call cmdline,HTTP,--http) $(call cmdline,ENGINE_PORT,--engine-port) $(call cmdline,UI_PORT,--ui-port) $(call cmdline,DATA_DIR,--data-dir)

## run: durawait serve with the demo config (MCP at http://127.0.0.1:8765/mcp, UI at http://127.0.0.1:8233);
## HTTP=, ENGINE_PORT=, UI_PORT=, DATA_DIR= change them (make run HTTP=127.0.0.1:9000 ENGINE_PORT=0)
run: build
	$(BIN)/durawait serve --config deploy/examples/demo.toml $(RUN_FLAGS)

## test: formatting, vet, and every test (unit and end-to-end). Every fuzz
## target's seed corpus (the seeds in the test file plus testdata/fuzz, where
## each crasher ever found is kept) runs as an ordinary unit test here, which
## is what CI needs; `make fuzz` explores beyond the seeds.
test: fmt-check vet tools
	$(GO) test -count=1 -timeout 30m ./...
	$(GO) vet -tags noengine ./cmd/durawait/
	$(GO) test -count=1 -tags noengine ./cmd/durawait/

# TEMPORAL_CLI_VERSION: the Temporal CLI the end-to-end tests start a dev
# server with (v1.5.1: later releases do not build from the module proxy).
TEMPORAL_CLI_VERSION := v1.5.1

## tools: the Temporal CLI into bin/temporal (its dev server is a Temporal
## started outside durawait for the end-to-end tests), built only when missing
tools: $(BIN)/temporal

$(BIN)/temporal:
	GOBIN=$(CURDIR)/$(BIN) $(GO) install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_CLI_VERSION)

## e2e-cluster: the roles end-to-end test on a production Temporal cluster:
## temporal-server and temporal-sql-tool built from go.temporal.io/server at
## the version go.mod pins (its tool lines), on PostgreSQL 15 (apt-get install
## -y postgresql), the frontend serving mTLS; two fronts and two workers
e2e-cluster: tools cluster-bins
	DURAWAIT_E2E_CLUSTER=1 DURAWAIT_TEMPORAL_SERVER=$(CURDIR)/$(BIN)/temporal-server \
		DURAWAIT_TEMPORAL_SQL_TOOL=$(CURDIR)/$(BIN)/temporal-sql-tool DURAWAIT_TEMPORAL_CLI=$(CURDIR)/$(BIN)/temporal \
		$(GO) test -count=1 -timeout 15m -run '^TestRolesOnAProductionCluster$$' -v ./internal/e2e/

# cluster-bins: the production temporal-server and its SQL schema tool,
# built from go.temporal.io/server at the version go.mod pins
cluster-bins:
	$(GO) build -o $(BIN)/temporal-server go.temporal.io/server/cmd/server
	$(GO) build -o $(BIN)/temporal-sql-tool go.temporal.io/server/cmd/tools/sql

## unit: the fast tests only (no Temporal, no durawait process; -short skips
## the tmux crash loop)
unit:
	$(GO) test -count=1 -short ./workflows/... ./activities/... ./mcpfront/... ./mcpwire/... ./worker/... ./cmd/... ./internal/archtest/... ./internal/config/... ./internal/datadir/... ./internal/samplehub/... ./internal/stdiobridge/... ./internal/auth/... ./internal/agentproc/...

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
	./activities/tmuxwatch:FuzzTmuxDecode \
	./mcpwire:FuzzInvalidUTF8
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
## the systemd unit (systemd-analyze verify) and its sysusers file; see deploy/check.sh
deploy-check:
	./deploy/check.sh

vet:
	$(GO) vet ./...

## release: the stripped, static release binary (no symbol table or DWARF:
## 160 MB instead of 226 MB), into bin/release/, as the images build it
release:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(BIN)/release/durawait ./cmd/durawait

## release-noengine: the same without the embedded Temporal engine, for
## `durawait front` and `durawait worker` on a cluster (what the images
## ship), into bin/release/durawait-noengine; see docs/deploy.md
release-noengine:
	CGO_ENABLED=0 $(GO) build -tags noengine -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(BIN)/release/durawait-noengine ./cmd/durawait

## images: the front and worker images, tagged with the version (and latest)
images:
	docker build -f deploy/docker/Dockerfile --target front --build-arg VERSION=$(VERSION) -t durawait-front:$(VERSION) -t durawait-front:latest .
	docker build -f deploy/docker/Dockerfile --target worker --build-arg VERSION=$(VERSION) -t durawait-worker:$(VERSION) -t durawait-worker:latest .

# CROSS_TARGETS: the GOOS/GOARCH pairs `make cross` builds and vets.
CROSS_TARGETS := darwin/arm64 linux/arm64

## cross: build and vet every package for CROSS_TARGETS (the Linux-only
## process attributes sit behind build tags; see *_linux.go / *_other.go)
cross:
	@set -e; for t in $(CROSS_TARGETS); do \
		echo "== GOOS=$${t%/*} GOARCH=$${t#*/}"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build ./...; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) vet ./...; \
	done

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## bench: benchmarks (timing claims live here, not in tests)
bench:
	$(GO) test -run '^$$' -bench 'ColdStart|Detection|Latency|Overhead' -benchtime 10x -timeout 30m ./internal/e2e/ | tee bench-report.txt
	$(GO) test -run '^$$' -bench 'Capacity' -benchtime 1x -timeout 30m ./internal/e2e/ | tee -a bench-report.txt

## bench-check: the single-wait figures of make bench (10 runs each) held to
## their targets in docs/performance.md, each with a margin for a shared CI
## machine (internal/e2e/benchcheck says which); fails when one misses. In CI.
## (A benchmark that fails leaves its figures unmeasured, which fails the check.)
bench-check:
	$(GO) test -run '^$$' -bench 'ColdStart|Detection|Latency|Overhead' -benchtime 10x -timeout 30m ./internal/e2e/ > bench-check.txt 2>&1 || true
	$(GO) run ./internal/e2e/benchcheck < bench-check.txt

## bench-capacity: issue 12's capacity curve (100 to 10,000 waits; rows appended to capacity-report.md)
bench-capacity:
	DURAWAIT_BENCH_WAITS=$${DURAWAIT_BENCH_WAITS:-100,1000,5000,10000} $(GO) test -run '^$$' -bench 'Capacity' -benchtime 1x -timeout 3h ./internal/e2e/ | tee -a bench-report.txt

## bench-recovery: issue 22's recovery at load (1,000 waits unless
## DURAWAIT_BENCH_WAITS says otherwise, the default lease): kill -9 of
## durawait serve and its restart, and kill -9 of one of two workers
bench-recovery:
	DURAWAIT_BENCH_WAITS=$${DURAWAIT_BENCH_WAITS:-1000} $(GO) test -run '^$$' -bench 'Recovery' -benchtime 1x -timeout 1h ./internal/e2e/ | tee -a bench-report.txt

## bench-stalls: durawait stopped (SIGSTOP) for 5, 30 and 120 s with waits
## of all three kinds and an agent open (make test stops it for 5 s)
bench-stalls:
	DURAWAIT_STALL_SEC=$${DURAWAIT_STALL_SEC:-5,30,120} $(GO) test -count=1 -timeout 30m -run '^TestAStalledDurawaitKillsNoAgentAndLosesNoWait$$' -v ./internal/e2e/ | tee -a bench-report.txt

## bench-cluster: the capacity benchmark on the production temporal-server
## and PostgreSQL 15 of make e2e-cluster instead of the embedded engine
## (DURAWAIT_BENCH_WAITS sizes, 1000,5000 by default)
bench-cluster: cluster-bins
	DURAWAIT_BENCH_CLUSTER=1 DURAWAIT_BENCH_WAITS=$${DURAWAIT_BENCH_WAITS:-1000,5000} \
		DURAWAIT_TEMPORAL_SERVER=$(CURDIR)/$(BIN)/temporal-server DURAWAIT_TEMPORAL_SQL_TOOL=$(CURDIR)/$(BIN)/temporal-sql-tool \
		$(GO) test -run '^$$' -bench 'Capacity' -benchtime 1x -timeout 3h ./internal/e2e/ | tee -a bench-report.txt

## bench-actions: billable Temporal actions per wait at the issue's scale
## (docs/observability.md): wait_for 10 s against 300 s at poll_sec 1, an
## agent run of 1 min against ACTIONS_AGENT_SEC (600; 3600 is the issue's
## hour) with the default 300 s wait_agent window, wait_for_text 10 s against
## 60 s, on the embedded engine; then wait_for on the production
## temporal-server and PostgreSQL 15 of make e2e-cluster. The table goes to
## actions-report.txt
ACTIONS_AGENT_SEC ?= 600
bench-actions: cluster-bins
	@rm -f $(CURDIR)/actions-report.txt; status=0; \
	DURAWAIT_ACTIONS_LONG=1 DURAWAIT_ACTIONS_AGENT_SEC=$(ACTIONS_AGENT_SEC) DURAWAIT_ACTIONS_REPORT=$(CURDIR)/actions-report.txt \
		DURAWAIT_E2E_CLUSTER=1 DURAWAIT_TEMPORAL_SERVER=$(CURDIR)/$(BIN)/temporal-server DURAWAIT_TEMPORAL_SQL_TOOL=$(CURDIR)/$(BIN)/temporal-sql-tool \
		$(GO) test -count=1 -timeout 3h -run '^TestActionsPerWait' -v ./internal/e2e/ || status=$$?; \
	cat $(CURDIR)/actions-report.txt 2>/dev/null; exit $$status

# SOAK_WAITS, SOAK_KILLS: the crash soak's size (make test runs a small one).
# SOAK_STALLS: the SIGSTOPs of durawait, spread over the run (three each of
# 5 s, 30 s and 120 s).
SOAK_WAITS ?= 200
SOAK_KILLS ?= 1000
SOAK_STALLS ?= 5s,30s,120s,5s,30s,120s,5s,30s,120s

## soak: the crash soak: SOAK_WAITS waits of all three kinds in flight while
## durawait is killed -9 SOAK_KILLS times (and its downstream server at
## random) and stopped for SOAK_STALLS; every wait must end right, once, and
## the judge counts every answer, run and failed call (docs/soak.md). Report
## in soak-report.txt; DURAWAIT_SOAK_SEED=<seed> replays a run
soak:
	{ DURAWAIT_SOAK_WAITS=$(SOAK_WAITS) DURAWAIT_SOAK_KILLS=$(SOAK_KILLS) DURAWAIT_SOAK_STALLS=$(SOAK_STALLS) DURAWAIT_SOAK_LOG=$(CURDIR)/soak-durawait.log \
		$(GO) test -count=1 -timeout 6h -run '^TestSoakCrashes$$' -v ./internal/e2e/ 2>&1; echo "exit status $$?"; } | tee soak-report.txt
	@grep -q '^exit status 0$$' soak-report.txt

clean:
	rm -rf $(BIN)
