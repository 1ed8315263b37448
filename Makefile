# Two commands on a fresh clone: `make run` and `make test`. Each installs
# what it needs (npm ci, through scripts/install) first. Node 24 comes from the
# node-linux-<cpu> optional dependency (docs/decisions/0015).
SHELL := /bin/bash
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)
NODE_FLAGS := --disable-warning=ExperimentalWarning

.PHONY: explore run test install bundle cni go-test image image-test typecheck lint unit coverage test-count sync-path bench bench-quiet-watches bench-azure-full crash-long fuzz-long interleave-long explore-sim chaos rbac-audit prometheus-check clean format

node_modules/.installed: package.json package-lock.json scripts/install
	scripts/install
	@touch $@

install: node_modules/.installed

# The node agent as one bundled file, which bin/pool-monitor runs the sidecar
# from while no source is newer (docs/decisions/0027).
dist/sidecar.js: node_modules/.installed scripts/bundle-sidecar.ts package.json package-lock.json $(shell find src -name '*.ts')
	node $(NODE_FLAGS) scripts/bundle-sidecar.ts

bundle: dist/sidecar.js

# The CNI IPAM plugin, a static Go program (cni-plugin/, the standard library
# only; docs/decisions/0032): built when a source is newer, and written under
# a temporary name then renamed, so a plugin running meanwhile never sees a
# half-written file. bin/pool-monitor-cni runs it in a clone; the image
# builds its own and the DaemonSet installs that one file. Without go, `cni`
# says so in one line and the tests that need the plugin say they skipped.
GO := $(shell command -v go 2>/dev/null)
CNI_SOURCES := cni-plugin/go.mod $(filter-out %_test.go,$(wildcard cni-plugin/*.go cni-plugin/internal/*/*.go))
dist/pool-monitor-cni: $(CNI_SOURCES)
	@mkdir -p dist
	cd cni-plugin && CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags='-s -w' -o ../dist/.pool-monitor-cni.$$$$ . && mv -f ../dist/.pool-monitor-cni.$$$$ ../dist/pool-monitor-cni

ifdef GO
cni: dist/pool-monitor-cni

# The plugin's own tests: gofmt, go vet, go test.
go-test:
	@cd cni-plugin && out=$$(gofmt -l .) && { [ -z "$$out" ] || { echo "gofmt: not formatted: $$out" >&2; exit 1; }; }
	cd cni-plugin && go vet ./... && go test ./...
else
cni:
	@echo "make cni: skipped, no go on PATH: dist/pool-monitor-cni not built, the CNI plugin's tests will say they were skipped (apt-get install golang-go)"

go-test:
	@echo "make go-test: skipped, no go on PATH: the CNI plugin's Go tests (cni-plugin/) did not run (apt-get install golang-go)"
endif

run: install
	bin/pool-monitor embedded --scenario default

typecheck: install
	tsc -p tsconfig.json --noEmit

# eslint, prettier, and the subjects of the commits since the rule began
# (at most 72 characters: scripts/commit-subjects, CONTRIBUTING.md).
lint: install
	eslint .
	prettier --check .
	scripts/commit-subjects

# Every test file in two lanes (scripts/unit): the whole-cluster end-to-end
# files one at a time, beside the others UNIT_JOBS (2) at a time, slowest
# first, in a temp dir of their own that must be empty afterwards.
UNIT_JOBS ?= 2
unit: install bundle cni
	UNIT_JOBS=$(UNIT_JOBS) scripts/unit

# The same tests under c8 (the text summary; `coverage/` for more reporters).
coverage: install cni
	COVERAGE=1 UNIT_JOBS=$(UNIT_JOBS) scripts/unit

# How many tests there are, by folder, without running them (mocha's dry
# run; the Go plugin's from `go test -list`): scripts/test-count.
test-count: install
	scripts/test-count

# Install first, then type check, lint and the tests side by side; any of
# them failing fails `make test`. What each runs: docs/testing.md#make-test.
test: install
	@$(MAKE) --no-print-directory -j3 typecheck lint unit go-test

# One node's sync from the queue's handler, as a tree of the calls it
# follows (scripts/sync-path.ts; `--mermaid` for a drawing of its files).
sync-path: install
	node $(NODE_FLAGS) scripts/sync-path.ts

# Benchmarks print figures; they are not tests and not part of `make test`.
BENCHES ?= monitor ipstore nodeapi apiserver access fulfiller fulfiller-scale failover sidecar sidecar-resources connections sim embedded azure release-policy auto-budget cni
# Also: `make bench BENCHES=release-alternatives` (the alternatives of docs/decisions/0021, ~10 min).
bench: install bundle cni
	@for b in $(BENCHES); do \
	  if [ -f bench/$$b.ts ]; then echo "== bench/$$b.ts"; node $(NODE_FLAGS) bench/$$b.ts || exit 1; fi; \
	done

# A quiet cluster's watches for 5 minutes at kube-apiserver's one-minute
# bookmarks (a real sidecar and fulfiller): each re-opened at most once
# (docs/decisions/0031). Not in BENCHES: it takes 5 minutes.
bench-quiet-watches: install bundle
	node $(NODE_FLAGS) bench/quiet-watches.ts

# The Azure backend at the product's ARM budgets (writes 4/s, burst 20; reads
# 10/s, burst 50): 1,000 nodes x 30 IPs through the real fulfiller, 198.5 s
# and 206.5 s measured (bound 198.4 s; what make bench runs for bench/azure.ts).
bench-azure-full: install
	AZURE_QPS=4 AZURE_BURST=20 node $(NODE_FLAGS) bench/azure.ts 1000 30

# The kill -9 crash tests, longer than in `make test` (50 sidecar cycles,
# 12 fulfiller cycles): the sidecar, then the fulfiller.
CRASH_CYCLES ?= 1000
CRASH_FULFILLER_CYCLES ?= 200
crash-long: install
	CRASH_CYCLES=$(CRASH_CYCLES) mocha test/sidecar/crash.process.test.ts
	CRASH_FULFILLER_CYCLES=$(CRASH_FULFILLER_CYCLES) mocha test/fulfiller/crash.process.test.ts

# The CRD-object fuzz with 10,000 objects (1,000 in `make test`); FUZZ_SEED picks others.
FUZZ_OBJECTS ?= 10000
fuzz-long: install
	FUZZ_OBJECTS=$(FUZZ_OBJECTS) mocha test/fuzz/crd.fuzz.test.ts

# The interleaving explorer of two fulfillers (docs/design/fulfiller.md#high-availability)
# with 10,000 random seeds after its fixed fixtures (`make test` runs the
# fixtures and 300 seeds); INTERLEAVE_FIRST_SEED starts elsewhere.
INTERLEAVE_SEEDS ?= 10000
interleave-long: install
	INTERLEAVE_SEEDS=$(INTERLEAVE_SEEDS) mocha test/fulfiller/interleave.test.ts

# The wide explorations `make test` runs a short part of: the interleaving
# explorer's 10,000 seeds (docs/design/fulfiller.md#high-availability).
explore: interleave-long

# The idle-budget promise swept wide (bench/promise-sweep.ts; docs/decisions/0034):
# auto against CNS v2 on the serial control plane at the CIDR and the Azure
# backend's timings, every built-in trace at budgets 1, 1.2, 1.5, 2 and 3, and
# EXPLORE_RUNS generated traces from EXPLORE_FIRST_SEED (`make test` checks the
# first 40 of the same draw: test/sim/idle-budget.test.ts). Exits 1 on a break.
EXPLORE_RUNS ?= 6000
EXPLORE_FIRST_SEED ?= 1
EXPLORE_JOBS ?= 2
explore-sim: install
	RUNS=$(EXPLORE_RUNS) FIRST_SEED=$(EXPLORE_FIRST_SEED) JOBS=$(EXPLORE_JOBS) node $(NODE_FLAGS) bench/promise-sweep.ts

# The default scenario under chaos (`make test` runs a 45 s one); CHAOS_SEED replays a run.
CHAOS_RATE ?= 0.2
chaos: install
	bin/pool-monitor embedded --chaos $(CHAOS_RATE) $(if $(CHAOS_SEED),--seed $(CHAOS_SEED))

# The alert rules against a real Prometheus (Debian's prometheus; as root it
# is installed when missing, else the check says it was skipped): the
# exhaustion scenario embedded, its sidecars scraped every second, the
# PrometheusRule's groups with every `for:` at 5 s; passes once
# PoolMonitorPodsWaitingForIP fires (about 20 s). Not part of `make test`.
prometheus-check: install
	scripts/prometheus-check

# Which permissions the product was refused and which of its grants in
# manifests/ it never used: the sidecar and fulfiller tests (each under RBAC
# as its service account) and one embedded run, every request recorded.
AUDIT := .state/rbac-audit
rbac-audit: install
	@rm -rf $(AUDIT) && mkdir -p $(AUDIT)
	RBAC_AUDIT_FILE=$(CURDIR)/$(AUDIT)/tests.jsonl mocha test/sidecar test/fulfiller
	bin/pool-monitor embedded --scenario default --report $(AUDIT)/embedded.json > $(AUDIT)/embedded.txt
	node $(NODE_FLAGS) test/support/rbac-audit.ts $(AUDIT)/tests.jsonl $(AUDIT)/embedded.json

# The image (docs/decisions/0033): `make image` builds the Dockerfile with
# buildah (scripts/image-build: from the official bases where a registry
# answers, else from stand-ins made of Debian's packages and the project's
# Node 24); `make image-test` runs it as the manifests do, the sidecar and the
# fulfiller (cidr and azure) against `bin/pool-monitor apiserver` until
# /readyz (scripts/image-test.ts). Neither is part of `make test`; CI runs
# both as root.
# The tag is package.json's version, which the manifests' image tags follow.
VERSION := $(shell sed -n 's/^  "version": "\(.*\)",$$/\1/p' package.json)
IMAGE ?= localhost/ipam-pool-monitor:$(VERSION)
image: install
	IMAGE=$(IMAGE) scripts/image-build

image-test: install
	@scripts/image-need podman podman && scripts/image-need runc runc
	IMAGE=$(IMAGE) node $(NODE_FLAGS) scripts/image-test.ts

format: install
	prettier --write .

clean:
	rm -rf node_modules coverage .state dist
