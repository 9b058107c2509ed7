# Writ's one entry point for building, running and testing. `make` lists targets.
# Recipes use the shell because make does; the product itself never runs one.

SHELL := /bin/bash
.DEFAULT_GOAL := help
export PATH := /usr/local/go/bin:$(PATH)

GO        ?= go
BIN       := $(CURDIR)/bin
TOOLS     := $(BIN)/tools
FUZZTIME  ?= 1m
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(TOOLS)/staticcheck-$(STATICCHECK_VERSION)

# Debian packages the tests run for real: the bwrap, runc (runc or crun) and
# gvisor (runsc) sandbox tiers, and busybox-static for their test rootfs. runc
# is Debian 12's 1.1.5 (with Debian's security patches), the version CI gets;
# runsc is Debian 12's 0.0~20221219. systemd gives
# systemd-analyze, which checks the agent's unit file; chromium runs the
# dashboard's end-to-end test. iproute2's ip makes the fault suite's network
# namespaces (not in Debian's minimal images). wabt's wat2wasm checks that
# the wasm floor module's text assembles to its committed binary.
APT_PACKAGES := bubblewrap runc busybox-static systemd chromium runsc crun iproute2 wabt

.PHONY: help deps build dev cluster cluster-down test test-short check fuzz bench clean screenshots rootfs vectors dist faults overload

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-7s %s\n", $$1, $$2}'

deps: ## install what the tests need, when missing: Debian packages and Go tools
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@command -v node >/dev/null && command -v npm >/dev/null || { echo "deps: installing nodejs and npm"; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm; }
	@grep -qs '"version": "$(lastword $(subst @, ,$(MCP_TS_SDK)))"' $(NPM_MCP)/node_modules/@modelcontextprotocol/sdk/package.json || \
	  { echo "deps: installing $(MCP_TS_SDK) into $(NPM_MCP)"; npm install --prefix $(NPM_MCP) --save-exact --no-audit --no-fund --silent $(MCP_TS_SDK); }
	@test -x $(STATICCHECK) || { mkdir -p $(TOOLS) && GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) && mv $(TOOLS)/staticcheck $(STATICCHECK); }

# Node (Debian's nodejs and npm) and the official TypeScript MCP SDK, pinned,
# which make deps installs into .npm-mcp/ (ignored by git): TestMCPTypeScript
# drives writ mcp with that SDK's client.
MCP_TS_SDK := @modelcontextprotocol/sdk@1.32.2
NPM_MCP := $(CURDIR)/.npm-mcp

build: ## build bin/writ and the WASM tools of writ dev
	$(GO) build -o $(BIN)/writ ./cmd/writ
	GOOS=wasip1 GOARCH=wasm $(GO) build -trimpath -buildmode=c-shared -o $(BIN)/tools/echo.wasm ./sandbox/tools/echo
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/tools/echo ./sandbox/tools/echo

dev: build ## start a local Writ (writ dev, state in .dev/) and print how to submit an intent
	$(BIN)/writ dev --data-dir $(CURDIR)/.dev

cluster: build ## start a local 3-server cluster and two node agents on loopback (state and dev.json with "addrs" in .cluster/)
	WRIT=$(BIN)/writ WRIT_CLUSTER_DIR=$(CURDIR)/.cluster deploy/cluster.sh up

cluster-down: ## stop the local cluster's agents and servers (state stays in .cluster/)
	WRIT=$(BIN)/writ WRIT_CLUSTER_DIR=$(CURDIR)/.cluster deploy/cluster.sh down

# CI fuzzes each target for a number of executions, not a duration: a
# duration races Go's fuzzing coordinator on a loaded machine and fails with
# "context deadline exceeded" when nothing was found (go.dev/issue/75804).
# The largest packages (cmd/writ, sandbox/wasm) take 6-8 minutes under -race
# on a loaded 2-core machine: -timeout 30m, not go test's default 10m.
test: deps rootfs ## run every test, then each fuzz target for 30,000 executions (CI=true: missing dependencies fail)
	WRIT_TEST_ROOTFS=$(ROOTFS) $(GO) test -race -count=1 -timeout 30m ./...
	$(MAKE) --no-print-directory fuzz FUZZTIME=30000x FUZZTIME_DISK=2000x

# The fast tier: -short leaves out the clusters, the browser, the sandbox
# conformance and escape suites, runsc sandboxes, the bench runs and the
# fault suite (each a testtier.Slow line), and runs fewer crashes and
# starts; no -race and no fuzzing. make test still runs everything; under
# CI=true a -short run fails rather than leave tests out.
# -p 4: four test binaries at once rather than one per core; several of the
# fast tier's packages (controlplane above all) wait on timers and Raft more
# than they compute, and would hold a core's turn idle (docs/development.md).
test-short: deps rootfs ## run the fast tier: go test -short (no clusters, browser, conformance and escape suites, or fuzzing)
	WRIT_TEST_ROOTFS=$(ROOTFS) $(GO) test -short -count=1 -p 4 ./...

# The fault suite (internal/faults, docs/reliability.md): its short run is
# TestFaults in `make test`; this is the long run, which prints the figures.
# It needs root (network namespaces): without, it fails. FAULTS_ROUNDS rounds
# of every scenario.
FAULTS_ROUNDS ?= 3
faults: deps build ## run the fault suite's long run (root: servers and agents in network namespaces) and print its figures
	CI=true WRIT_FAULTS=long WRIT_FAULTS_ROUNDS=$(FAULTS_ROUNDS) WRIT_FAULTS_BIN=$(BIN)/writ \
	  $(GO) test -count=1 -v -timeout 120m -run '^TestFaults$$' ./internal/faults/

# The overload test's long run (docs/reliability.md, "Overload"): 3,000
# submitters for a minute against a 3-server cluster with two agents; its
# short run (400 submitters, 10 s) is TestClusterOverload in `make test`.
overload: ## run the overload test's long run (3,000 submitters for 60 s) and print its figures
	WRIT_OVERLOAD=long $(GO) test -count=1 -v -timeout 30m -run '^TestClusterOverload$$' ./cmd/writ/

check: deps ## vet, staticcheck, gofmt, dependency boundaries, docs' links and named files, darwin and linux/arm64 builds
	$(GO) vet ./...
	$(STATICCHECK) ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	$(GO) test -count=1 -run 'TestDependency' ./cmd/writ/
	$(GO) test -count=1 ./internal/docscheck/
	GOOS=darwin GOARCH=arm64 $(GO) build -o /dev/null ./cmd/writ
	GOOS=darwin GOARCH=amd64 $(GO) build -o /dev/null ./cmd/writ
	GOOS=linux GOARCH=arm64 $(GO) build -o /dev/null ./cmd/writ

screenshots: deps ## retake the dashboard's screenshots (docs/screenshots/) with its Chromium test
	WRIT_SCREENSHOTS=1 $(GO) test -count=1 -run TestDashboardInChromium ./cmd/writ/

# The protocol vectors the repository publishes for client implementers
# (protocol/testdata/vectors), refreshed from the normative set beside the
# repository; TestPublishedVectors fails when they differ.
VECTORS ?= $(or $(WRIT_VECTORS),$(CURDIR)/../shared/vectors)

vectors: ## copy the normative protocol vectors into protocol/testdata/vectors
	@test -d $(VECTORS) || { echo "vectors: no folder $(VECTORS) (set WRIT_VECTORS)"; exit 1; }
	rm -f protocol/testdata/vectors/*.json && mkdir -p protocol/testdata/vectors && cp $(VECTORS)/*.json protocol/testdata/vectors/

# Fuzz targets that write to the disk on every input run for FUZZTIME_DISK.
FUZZ_DISK := FuzzLayer FuzzImageIndex

fuzz: ## run every fuzz target for FUZZTIME each (default 1m; 10000x means executions); any failure stops it
	@set -e; log=$$(mktemp); trap 'rm -f "$$log"' EXIT; \
	for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    ft=$(FUZZTIME); case " $(FUZZ_DISK) " in *" $$f "*) ft=$(or $(FUZZTIME_DISK),$(FUZZTIME));; esac; \
	    echo "fuzz: $$pkg $$f for $$ft"; \
	    if ! $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $$ft $$pkg >"$$log" 2>&1; then \
	      cat "$$log"; echo "fuzz: $$f in $$pkg failed"; exit 1; \
	    fi; \
	    grep -v '^fuzz: elapsed' "$$log" || true; \
	  done; \
	done

# The root filesystem of the runc and gvisor tiers' tests and benchmark, built here from
# Debian's busybox-static (make deps), never committed: busybox, a few
# applets that are no shell, an /etc/passwd, and the directories the tier
# mounts over. The runc tier's tests use it through WRIT_TEST_ROOTFS (plain
# `go test` builds the same in a temporary directory).
ROOTFS := $(CURDIR)/.rootfs
ROOTFS_APPLETS := cat ls true false echo id

rootfs: deps ## build the busybox root filesystem of the runc and gvisor tiers' tests and benchmark (.rootfs/)
	@bb=$$(command -v busybox) || { echo "rootfs: no busybox (make deps installs busybox-static)"; exit 1; }; \
	tmp=$(ROOTFS).tmp; rm -rf "$$tmp" && mkdir -p "$$tmp"/bin "$$tmp"/etc && \
	for d in dev proc sys tmp workspace; do mkdir -p "$$tmp/$$d"; done && \
	cp "$$bb" "$$tmp"/bin/busybox && chmod 0755 "$$tmp" "$$tmp"/bin/busybox && \
	for a in $(ROOTFS_APPLETS); do ln -s busybox "$$tmp/bin/$$a"; done && \
	printf 'root:x:0:0::/:/bin/false\nnobody:x:65534:65534::/:/bin/false\n' > "$$tmp"/etc/passwd && \
	rm -rf $(ROOTFS) && mv "$$tmp" $(ROOTFS) && echo "rootfs: $(ROOTFS) from $$bb"

# The ledger's 10-million-receipt figures and the 10,000-agent fleet belong
# here, not in CI.
bench: build rootfs ## run the benchmarks, each reported beside its baseline from the same run
	$(BIN)/writ bench sandbox --n 100 --rootfs $(ROOTFS) -o text
	WRIT_LEDGER_BENCH_LEAVES=10000000 WRIT_LEDGER_BENCH_DIR=$(CURDIR)/.bench/ledger \
	  $(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./...
	$(GO) build -o $(BIN)/writ ./cmd/writ
	$(BIN)/writ bench admit
	$(BIN)/writ bench e2e --n 1000 -o text
	$(BIN)/writ bench fleet --agents 10000 --dispatches 1000 -o text
	$(BIN)/writ bench load -o text

# Release archives: one writ binary (static, with the dev echo module built
# in) per platform, README.md and docs/, and SHA256SUMS over the archives.
DIST      := $(CURDIR)/dist
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

dist: ## build release archives for linux and darwin on amd64 and arm64, with SHA256SUMS (dist/)
	@rm -rf $(DIST) && mkdir -p $(DIST)
	@set -e; for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; name=writ-$(VERSION)-$$os-$$arch; dir=$(DIST)/$$name; \
	  mkdir -p $$dir; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath \
	    -ldflags "-s -w -X github.com/writhq/writ/internal/buildinfo.Version=$(VERSION)" -o $$dir/writ ./cmd/writ; \
	  cp -r README.md docs $$dir/; \
	  tar -C $(DIST) -czf $(DIST)/$$name.tar.gz $$name; rm -rf $$dir; \
	  echo "dist: $(DIST)/$$name.tar.gz"; \
	done
	cd $(DIST) && sha256sum *.tar.gz > SHA256SUMS && cat SHA256SUMS

clean: ## remove what the build, dev and bench wrote
	rm -rf $(BIN) .dev .bench .cluster .rootfs dist
