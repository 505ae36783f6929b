# hookpack — see README.md. Every target runs on a fresh machine of this
# project's image: emulators are installed/started by the targets themselves.

SHELL := /bin/bash
GO ?= go
FUNCTIONS := $(notdir $(patsubst %/,%,$(wildcard functions/*/)))
LAMBDA_ENV := CGO_ENABLED=0 GOOS=linux GOARCH=arm64
LAMBDA_BUILD := $(GO) build -tags lambda.norpc -trimpath -ldflags "-s -w"
FUZZTIME ?= 10s

# make run's addresses and files (docs/development.md, "Make variables");
# make demo, make send, make inspect, make console, make invoke and make events use the
# same. Set them in the environment or on the command line
# (`make run MOTO_PORT=5000`), which also hands them to the programs.
ADDR ?= 127.0.0.1:3000
MOTO_PORT ?= 4566
DYNAMODB_PORT ?= 8000
TENANTS_FILE ?= events/tenants.json
LOG_FILE ?= .cache/run/functions.log
CONSOLE_ADDR ?= 127.0.0.1:3002
TEMPLATES := template.yaml template-tenant.yaml

.PHONY: help test-long build test vet lint run demo send inspect console bench bench-e2e cost fuzz simulate emulators clean invoke events chaos rehearse

## build: linux/arm64 bootstrap per function under bin/<function>/bootstrap
build: $(FUNCTIONS:%=bin/%/bootstrap)

bin/%/bootstrap: FORCE
	$(LAMBDA_ENV) $(LAMBDA_BUILD) -o $@ ./functions/$*
	@ls -l $@ | awk '{printf "%s %.2f MB\n", $$9, $$5/1048576}'

# The same bootstraps for this machine (make invoke, make test, the
# rehearsal, pkg/local/bootstrap): make build's flags, so every build of a
# function shares one build cache.
bin/local/%/bootstrap: FORCE
	CGO_ENABLED=0 $(LAMBDA_BUILD) -o $@ ./functions/$*

.PHONY: FORCE
FORCE:

# sam build (BuildMethod: makefile) calls build-<LogicalId>; IngestFunction
# builds ./functions/ingest into $(ARTIFACTS_DIR)/bootstrap.
build-%Function:
	$(LAMBDA_ENV) $(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/$(shell echo '$*' | tr '[:upper:]' '[:lower:]')

## emulators: install what integration tests need that the image lacks
emulators:
	@scripts/prerequisites.sh
	@scripts/install-dynamodb-local.sh
	@scripts/install-verifiers.sh

## vet: go vet ./...
vet:
	$(GO) vet ./...

## test: vet, unit + integration tests with -race on real emulators, every benchmark once, template lint
# 3m24s to 3m53s on 2 idle cores with warm caches, both of them busy: the
# run is CPU-bound (396 to 454 s of CPU), so what shortens it is CPU saved;
# docs/development.md has the numbers.
# What makes it fit:
# - one DynamoDB Local for the whole run (scripts/testenv; each test names
#   its own tables) instead of a JVM per test binary, and every JVM with C1
#   only and the serial collector (pkg/local/emulator); moto stays one per
#   test binary (its FIFO corrections keep server-wide state; one shared by
#   the product packages' tests failed pkg/ledger's), each forked warm from
#   one zygote at the test binary's nice value (a cold start is about 2 s
#   of CPU);
# - each template rendered once for the run (package render; the SAM
#   transform is about 3 s of CPU), the pyenv shims of aws, python3 and
#   cfn-lint resolved once (scripts/testenv), go test's vet off after the
#   full go vet above;
# - the race detector's one-second sleep at each test binary's exit off
#   (GORACE=atexit_sleep_ms=0);
# - the bootstraps built once, with make build's flags, before the tests
#   (HOOKPACK_BOOTSTRAP_DIR; package pkg/local/bootstrap);
# - -p 4 test binaries at a time: the slow ones (the deploy rehearsal,
#   tenant.sh's aws CLI calls) mostly wait, so they are named first and
#   overlap the rest;
# - pkg/local/chaos in a go test of its own, alongside, at normal priority
#   while the rest runs under nice: its 1,000 deliveries race real clocks
#   (leases, a 2-minute queue retention, a 75 s outage), and starved of CPU
#   by the packages beside it (sending took 3m21s instead of about 1m) the
#   run reported expired and doubled effects;
# - every benchmark runs once (-test.bench after -args, in the same test
#   binaries, so none rots unseen; budgets are read with make bench and
#   benchstat). Given to go test as -bench it would run the packages one at
#   a time ("benchmarks run in serial"), which took the run to 8-10 minutes.
# - the race detector where the product's goroutines run: every package
#   but the local harness and the tools (pkg/local/..., scripts/...). The
#   harness's tests run the product through subprocesses (bootstraps,
#   tenant.sh, moto) or one request at a time; instrumenting them cost a
#   third of the run's CPU and checks no product code the race-run packages
#   do not. The chaos run drives the handlers in-process under concurrent
#   invocations: make test-long runs it under the detector (a third more
#   CPU), make test without.
# make test-long (CI runs it) holds what does not fit: the chaos run under
# the race detector, the rehearsal without each statement of both roles, a
# forced tenant removal keeping its dead letters, concurrent onboardings
# racing for the tenant list's lock, and make demo and make run's Ctrl-C
# run as a fresh machine runs them (each starts its own moto and JVM;
# pkg/local/demo and pkg/local/devstack test the same code in make test on
# the run's shared emulators).
# -vet=off: make test has just run go vet ./... (every analyzer, test files
# included), a superset of the checks go test would run again per package.
TEST_FLAGS := -race -count=1 -vet=off -timeout 30m
HARNESS_FLAGS := -count=1 -vet=off -timeout 30m
TEST_BENCH := -args -test.bench=. -test.benchtime=1x
# Each group names its slowest packages first: go test starts them in the
# order given, so they overlap the many short ones instead of ending last.
TEST_FIRST := ./pkg/local/rehearsal ./scripts/tenant ./scripts/inspect ./scripts/template ./pkg/local/samples ./scripts/replay ./pkg/local/demo ./scripts/devstack
RACE_FIRST := ./pkg/worker ./pkg/inspect ./pkg/ingest ./functions ./pkg/provider ./pkg/idempotency ./pkg/tenant ./pkg/watch ./pkg/replay ./pkg/ledger
test: emulators vet $(FUNCTIONS:%=bin/local/%/bootstrap)
	@scripts/prerequisites.sh cfn-lint
	@mkdir -p bin
	HOOKPACK_BOOTSTRAP_DIR=$(CURDIR)/bin/local $(GO) run ./scripts/testenv -- bash -c '\
	  $(GO) test $(HARNESS_FLAGS) ./pkg/local/chaos $(TEST_BENCH) > bin/test-chaos.log 2>&1 & chaos=$$!; \
	  nice -n 10 $(GO) test $(HARNESS_FLAGS) -p 4 $(TEST_FIRST) $$($(GO) list ./pkg/local/... ./scripts/... | grep -v /pkg/local/chaos$$) $(TEST_BENCH) > bin/test-harness.log 2>&1 & harness=$$!; \
	  GORACE=atexit_sleep_ms=0 nice -n 10 $(GO) test $(TEST_FLAGS) -p 4 $(RACE_FIRST) $$($(GO) list ./... | grep -v -e /pkg/local/ -e /pkg/local$$ -e /scripts/) $(TEST_BENCH); rest=$$?; \
	  wait $$harness; h=$$?; cat bin/test-harness.log; \
	  wait $$chaos; c=$$?; cat bin/test-chaos.log; exit $$(( rest != 0 || h != 0 || c != 0 ))'

## lint: vet, gofmt -l over the tracked Go files, cfn-lint over both templates
lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	cfn-lint $(TEMPLATES)

## test-long: what make test leaves out: the chaos run under the race detector; (build tag long) tenant removal keeping dead letters, concurrent onboardings, the rehearsal without each statement of both roles, make demo and make run's Ctrl-C as a fresh machine runs them, the console in Chromium
# The chaos run first, alone: under the race detector it takes about a core
# and races real clocks (make test runs it without the detector). The
# console's browser test (24 s and 9.6 s of CPU under the race detector,
# Chromium, its moto and the stack included, measured in a cpuacct cgroup
# on a busy machine: more than make test's few seconds a test) needs
# Chromium: scripts/install-chromium.sh installs it.
test-long: emulators $(FUNCTIONS:%=bin/local/%/bootstrap)
	@scripts/install-chromium.sh
	HOOKPACK_BOOTSTRAP_DIR=$(CURDIR)/bin/local $(GO) run ./scripts/testenv -- bash -c '\
	  $(GO) test -race -count=1 -timeout 30m ./pkg/local/chaos && \
	  $(GO) test -tags long -race -count=1 -p 4 -timeout 60m ./pkg/local/rehearsal ./scripts/tenant ./scripts/demo ./scripts/devstack ./scripts/console'

# make run installs only what it runs (DynamoDB Local); the npm libraries
# of scripts/verifiers and scripts/senders are the tests' (make emulators).
## run: the pipeline locally on emulators (ADDR, TARGET_ADDR, MOTO_PORT, DYNAMODB_PORT, DYNAMODB_LOCAL_DIR, EMULATOR_HOST, TENANTS_FILE, LOG_FILE)
run:
	@scripts/prerequisites.sh
	@scripts/install-dynamodb-local.sh
	@$(GO) build -o bin/devstack ./scripts/devstack
	@exec bin/devstack

## demo: show the guarantees against `make run` (or a stack it starts as make run would, with the same variables)
demo: emulators
	@$(GO) run ./scripts/demo

## send: post a provider's sample delivery to `make run` (PROVIDER=stripe [SAMPLE=customer-created])
send:
	@$(GO) build -o bin/send ./scripts/send
	@bin/send -provider "$(PROVIDER)" -sample "$(SAMPLE)" -url "http://$(ADDR)" -tenants "$(TENANTS_FILE)"

## inspect: where an event is on `make run` (TENANT=demo EVENT=<any id of it> [PROVIDER=github] [EFFECTS=a,b] [SCAN=1]), or the tenant's summary (TENANT=demo: per destination, with a Scan of make run's small ledger); read-only
# inspect and replay are built, not `go run`: go run exits 1 whatever the
# command's status. make itself exits 2 on any failing recipe; its
# "Error N" is the command's status (docs/inspect.md). A variable given
# empty (EVENT=, a script's unset variable) is passed on, and refused:
# $(if $(EVENT)…) would read it as not given, and select everything.
given = $(filter-out undefined,$(origin $(1)))
inspect:
	@test -n "$(TENANT)" || { echo "usage: make inspect TENANT=demo [EVENT=<sender's id, eventId or key>] [PROVIDER=…] [EFFECTS=…] [SCAN=1]   (deployed stacks: go run ./scripts/inspect -stack <name> …, docs/inspect.md)" >&2; exit 2; }
	@$(GO) build -o bin/inspect ./scripts/inspect
	@bin/inspect -local -tenant "$(TENANT)" -endpoint http://127.0.0.1:$(MOTO_PORT) \
	  -dynamodb-endpoint http://127.0.0.1:$(DYNAMODB_PORT) -log-file "$(LOG_FILE)" \
	  $(if $(PROVIDER),-provider "$(PROVIDER)") $(if $(EFFECTS),-effects "$(EFFECTS)") $(if $(SCAN),-scan) \
	  $(if $(call given,EVENT),"$(EVENT)",-summary -scan)

## replay: a tenant's dead letters on `make run`: list, or move back what was dead-lettered before the run (TENANT=demo [ACTION=list|redrive] [DRY_RUN=1] [CONVERSATION=…] [TYPE=…] [EVENT=<any id of it>] [DESTINATION=<name>])
.PHONY: replay
replay:
	@test -n "$(TENANT)" || { echo "usage: make replay TENANT=demo [ACTION=list|redrive] [DRY_RUN=1] [CONVERSATION=…] [TYPE=…] [EVENT=<sender's id, eventId or key>] [DESTINATION=<name>]   (deployed stacks: go run ./scripts/replay -stack <name> …, docs/operations.md)" >&2; exit 2; }
	@$(GO) build -o bin/replay ./scripts/replay
	@bin/replay -local -tenant "$(TENANT)" -endpoint http://127.0.0.1:$(MOTO_PORT) \
	  -dynamodb-endpoint http://127.0.0.1:$(DYNAMODB_PORT) -log-file "$(LOG_FILE)" \
	  $(if $(call given,CONVERSATION),-conversation "$(CONVERSATION)") $(if $(call given,TYPE),-type "$(TYPE)") \
	  $(if $(call given,EVENT),-event "$(EVENT)") \
	  $(if $(call given,DESTINATION),-destination "$(DESTINATION)") $(if $(DRY_RUN),-dry-run) $(or $(ACTION),list)

## pause: pause a destination of a tenant on `make run`: its events wait until make resume (TENANT=demo DESTINATION=billing REASON="…")
# Built, not `go run`, so that its exit status (2: an unknown tenant or
# destination) reaches make (docs/operations.md, "Pause and resume a destination").
.PHONY: pause resume
pause:
	$(destination)

## resume: resume a paused destination on `make run`: its waiting events are delivered in order (TENANT=demo DESTINATION=billing)
resume:
	$(destination)

define destination
@test -n "$(TENANT)" -a -n "$(DESTINATION)" || { echo "usage: make $@ TENANT=demo DESTINATION=billing$(if $(filter pause,$@), REASON=\"…\")   (deployed stacks: scripts/tenant/tenant.sh $@ <tenant> <destination>…)" >&2; exit 2; }
@$(GO) build -o bin/destination ./scripts/destination
@bin/destination -local -endpoint http://127.0.0.1:$(MOTO_PORT) -dynamodb-endpoint http://127.0.0.1:$(DYNAMODB_PORT) \
  $@ "$(TENANT)" "$(DESTINATION)" $(if $(filter pause,$@),-reason "$(REASON)")
endef

## console: the operator console in the browser over `make run` (CONSOLE_ADDR, default 127.0.0.1:3002; deployed: go run ./scripts/console -stack <name>, docs/operations.md)
console:
	@$(GO) build -o bin/console ./scripts/console
	@exec bin/console -local -addr "$(CONSOLE_ADDR)" -endpoint http://127.0.0.1:$(MOTO_PORT) \
	  -dynamodb-endpoint http://127.0.0.1:$(DYNAMODB_PORT) -log-file "$(LOG_FILE)"

## invoke: Docker-free `sam local invoke` (FUNCTION=IngestFunction EVENT=events/…), against `make run`
invoke:
	@test -n "$(FUNCTION)" -a -n "$(EVENT)" || { echo "usage: make invoke FUNCTION=IngestFunction EVENT=events/ingest/github-issues-opened.json"; exit 2; }
	@fn=$$(echo '$(FUNCTION)' | sed 's/Function$$//' | tr '[:upper:]' '[:lower:]'); \
	$(MAKE) -s bin/local/$$fn/bootstrap && \
	$(GO) run ./scripts/invoke -function $(FUNCTION) -event $(EVENT) -binary bin/local/$$fn/bootstrap \
	  -endpoint http://127.0.0.1:$(MOTO_PORT) -dynamodb-endpoint http://127.0.0.1:$(DYNAMODB_PORT)

## events: every event, signed now, into events/local/ (git-ignored; tracked events never change)
events:
	$(GO) run ./scripts/events -tenants "$(TENANTS_FILE)"

## bench: performance budgets (compare runs with benchstat)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=$${COUNT:-1} ./...

## bench-e2e: whole-pipeline webhooks/s and POST → effect latency on the local stack, per scenario (minutes; not in make test)
bench-e2e: emulators
	@$(GO) run ./scripts/bench-e2e

## rehearse: deploy rehearsal on moto: the stacks from template.yaml and tenant.sh, the real bootstraps on what they created, every AWS call against the roles (docs/rehearsal.md)
rehearse: emulators
	@$(GO) run ./scripts/rehearse

## chaos: seeded fault-injection run of the whole pipeline, 10,000 deliveries (SEED=… replays a run)
chaos: emulators
	@$(GO) run ./scripts/chaos

## cost: measure the whole path on emulators and price a million webhooks (writes docs/cost.md)
cost: emulators
	@$(GO) run ./scripts/cost

## simulate: the property-based search of ingest, queue, worker and ledger under faults (SEED=…, STEPS=… searched, about 21 per run), after a replay of the stored failures; prints each's runs and steps apart, and the first violation's shrunk history
SEED ?= 1
STEPS ?= 30000
simulate:
	set -o pipefail; $(GO) test -count=1 -timeout 3h -run '^TestSimulation$$' -v ./pkg/worker -rapid.seed=$(SEED) -rapid.checks=$$(( $(STEPS) / 21 )) -rapid.steps=30 2>&1 | grep -v -e '^=== RUN' -e 'OK, passed 0 tests'

## fuzz: run every fuzz target for FUZZTIME each
fuzz:
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

## clean: remove bin/ and .aws-sam/ (the builds; .cache/ keeps the emulators and npm libraries)
clean:
	rm -rf bin .aws-sam

## help: every target, one line each (from the `## target: text` line above its rule)
help:
	@awk '/^## [a-z][a-z0-9-]*: / { sub(/^## /, ""); i = index($$0, ": "); printf "%-10s %s\n", substr($$0, 1, i - 1), substr($$0, i + 2) }' $(firstword $(MAKEFILE_LIST))
