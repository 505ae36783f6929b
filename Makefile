# hookpack — see README.md. Every target runs on a fresh machine of this
# project's image: emulators are installed/started by the targets themselves.

SHELL := /bin/bash
GO ?= go
FUNCTIONS := $(notdir $(patsubst %/,%,$(wildcard functions/*/)))
LAMBDA_ENV := CGO_ENABLED=0 GOOS=linux GOARCH=arm64
LAMBDA_BUILD := $(GO) build -tags lambda.norpc -trimpath -ldflags "-s -w"
FUZZTIME ?= 10s

# make run's addresses (README, "Make variables"); make send, make invoke and
# make events use the same. Set them in the environment or on the command
# line (`make run MOTO_PORT=5000`), which also hands them to make run.
ADDR ?= 127.0.0.1:3000
MOTO_PORT ?= 4566
DYNAMODB_PORT ?= 8000
TENANTS_FILE ?= events/tenants.json
TEMPLATES := template.yaml template-tenant.yaml

.PHONY: test-long build test unit integration vet lint run demo send inspect bench bench-e2e cost fuzz emulators clean invoke events chaos rehearse

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

vet:
	$(GO) vet ./...

## test: vet, unit + integration tests with -race on real emulators, every benchmark once, template lint
# The deploy rehearsal is in make test (pkg/local/rehearsal's tests): one
# rehearsal (stacks on moto, 1 ingest + 5 worker bootstraps, 32 requests) and
# three representative negative runs with one statement removed each: 70 s on
# an idle machine, about 100 s with -race on a loaded 2-core one (tenant.sh's
# aws CLI calls dominate), next to the ~8 minutes the rest takes and well
# inside CI's 90. It runs one moto and small mostly idle processes and waits
# on outcomes (never on fixed sleeps) with minutes of slack, so load only makes
# it slower. Removing every statement in turn (11 runs, ~4 min) is in
# make test-long.
# Every benchmark runs once (-benchtime 1x) in the same test binaries, so none
# rots unseen; it adds about 8 s. Budgets are read with make bench/benchstat.
test: emulators vet
	@scripts/prerequisites.sh cfn-lint
	$(GO) test -race -count=1 -timeout 30m -bench . -benchtime 1x ./...
	cfn-lint $(TEMPLATES)

lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	cfn-lint $(TEMPLATES)

## test-long: the slow cases kept out of make test (build tag long): tenant removal keeping dead letters; the rehearsal without each statement of both roles
test-long: emulators
	$(GO) test -tags long -count=1 -timeout 60m ./scripts/tenant ./pkg/local/rehearsal

## run: the pipeline locally on emulators (ADDR, TARGET_ADDR, MOTO_PORT, DYNAMODB_PORT, EMULATOR_HOST, TENANTS_FILE)
run: emulators
	@$(GO) build -o bin/devstack ./scripts/devstack
	@exec bin/devstack

## demo: show the guarantees against `make run` (or a stack it starts)
demo: emulators
	@$(GO) run ./scripts/demo

## send: post a provider's sample delivery to `make run` (PROVIDER=stripe [SAMPLE=customer-created])
send:
	@$(GO) run ./scripts/send -provider "$(PROVIDER)" -sample "$(SAMPLE)" -url "http://$(ADDR)" -tenants "$(TENANTS_FILE)"

## inspect: where an event is on `make run` (TENANT=demo EVENT=evt_123), or the tenant's summary (TENANT=demo); read-only
inspect:
	@test -n "$(TENANT)" || { echo "usage: make inspect TENANT=demo [EVENT=evt_123]   (deployed stacks: go run ./scripts/inspect -stack <name> …, docs/inspect.md)"; exit 2; }
	@$(GO) run ./scripts/inspect -local -tenant "$(TENANT)" -endpoint http://127.0.0.1:$(MOTO_PORT) \
	  -dynamodb-endpoint http://127.0.0.1:$(DYNAMODB_PORT) $(if $(EVENT),"$(EVENT)",-summary)

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

## fuzz: run every fuzz target for FUZZTIME each
fuzz:
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

clean:
	rm -rf bin .aws-sam
