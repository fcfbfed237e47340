# natscoord developer tasks. `make help` lists them.
GO            ?= go
STATICCHECK_VERSION := v0.8.2
BIN           := $(CURDIR)/.bin
STATICCHECK   := $(BIN)/staticcheck-$(STATICCHECK_VERSION)
BENCHTIME     ?= 2s
# BENCH selects benchmarks (a -bench regexp), BENCHPKGS the packages,
# BENCHCOUNT the runs of each (BENCHMARKS.md reports the median of 3).
# NATSCOORD_BENCH_HOLD sets the 10k-lease hold (default 60s).
BENCH         ?= .
BENCHPKGS     ?= ./...
BENCHCOUNT    ?= 3
FUZZTIME      ?= 10s
# TESTFLAGS adds go test flags to make test; CI runs one package at a time
# (-p=1): on 2 cores two packages that each start clusters and time
# renewals starve each other.
TESTFLAGS     ?=
SOAKTIME      ?= 5m
# Nested modules: kept apart so that what importers of the core module read
# in its go.mod holds no test-only or optional dependency (OpenTelemetry for
# the observers; client_golang for the Prometheus collector; porcupine for
# the fault tests; chromedp for the dashboard's browser tests).
SUBMODULES    := kvlock/otelobserver kvledger/worker/otelworker opstats/promcollector internal/testsuite/chaos dashboard/browsertest

.PHONY: help test bench fuzz lint demo soak tidy

help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*## "}{printf "  %-8s %s\n", $$1, $$2}'

test: ## Run every test with the race detector against embedded nats-servers.
	$(GO) test -race -count=1 -timeout 15m $(TESTFLAGS) ./...
	@set -e; for m in $(SUBMODULES); do (cd $$m && $(GO) test -race -count=1 -timeout 15m $(TESTFLAGS) ./...); done

bench: ## Run the benchmarks (ratios against raw KV operations in the same run; see BENCHMARKS.md).
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT) -timeout 30m $(BENCHPKGS)

fuzz: ## Run each fuzz target briefly (FUZZTIME each).
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

$(STATICCHECK):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(BIN)/staticcheck $(STATICCHECK)

lint: $(STATICCHECK) ## go vet plus staticcheck (installed at a pinned version into .bin/).
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...
	@set -e; for m in $(SUBMODULES); do (cd $$m && $(GO) vet ./... && $(STATICCHECK) ./...); done

demo: ## Run a task graph on Go services and natscoord work processes, on an embedded server (ARGS=--detail: the ledger underneath).
	$(GO) run ./cmd/natscoord demo $(ARGS)

soak: ## Long fault-injection run, bounded by SOAKTIME.
	NATSCOORD_SOAK=$(SOAKTIME) $(GO) test -race -count=1 -run 'Soak' -timeout 60m ./...
	@set -e; for m in $(SUBMODULES); do (cd $$m && NATSCOORD_SOAK=$(SOAKTIME) $(GO) test -race -count=1 -run 'Soak' -timeout 60m ./...); done

tidy: ## go mod tidy in the core module and in each nested module.
	$(GO) mod tidy
	@set -e; for m in $(SUBMODULES); do (cd $$m && $(GO) mod tidy); done
