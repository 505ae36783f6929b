package docs

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/console"
	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/ingest"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/local/demo"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/provider/catalog"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/ratelimit"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/tenantid"
	"github.com/hookpack/hookpack/pkg/watch"
	"github.com/hookpack/hookpack/pkg/worker"
)

// localDefaults returns the Options make run takes with none of its
// variables set.
func localDefaults(t *testing.T) devstack.Options {
	for _, v := range []string{"ADDR", "TARGET_ADDR", "TENANTS_FILE", "MOTO_PORT", "DYNAMODB_LOCAL_DIR", "DYNAMODB_PORT", "EMULATOR_HOST", "AWS_ENDPOINT_URL", "LOG_FILE"} {
		t.Setenv(v, "")
	}
	return devstack.EnvOptions()
}

// statements are the checked statements of README.md and docs/: each
// value comes from the code (a constant, a default, the Makefile, a
// template), read here, so a page that states another fails TestNumbers.
func statements(t *testing.T, root string) []statement {
	t.Helper()
	mk := makeDefaults(t, root)
	local := localDefaults(t)
	core := func(path ...string) string { return yamlValue(t, root, "template.yaml", path...) }
	tenantTpl := func(path ...string) string { return yamlValue(t, root, "template-tenant.yaml", path...) }

	// Where the same value lives in two places, they must agree before
	// the docs are held to either.
	equal(t, mk["ADDR"], local.Addr, "Makefile ADDR ?= and devstack.EnvOptions' ADDR default")
	equal(t, mk["MOTO_PORT"], strconv.Itoa(local.MotoPort), "Makefile MOTO_PORT ?= and devstack.EnvOptions' MOTO_PORT default")
	equal(t, mk["DYNAMODB_PORT"], strconv.Itoa(local.DynamoDBLocalPort), "Makefile DYNAMODB_PORT ?= and devstack.EnvOptions' DYNAMODB_PORT default")
	equal(t, mk["TENANTS_FILE"], local.TenantsFile, "Makefile TENANTS_FILE ?= and devstack.EnvOptions' default")
	equal(t, mk["LOG_FILE"], local.LogFile, "Makefile LOG_FILE ?= and devstack.DefaultLogFile")
	equal(t, mk["CONSOLE_ADDR"], console.DefaultAddr, "Makefile CONSOLE_ADDR ?= and console.DefaultAddr")
	dedupHours := strconv.Itoa(int(idempotency.DefaultRetention / time.Hour))
	equal(t, core("Parameters", "DedupRetentionHours", "Default"), dedupHours, "template.yaml DedupRetentionHours default and idempotency.DefaultRetention in hours")
	retention := time.Duration(number(t, tenantTpl("Resources", "Queue", "Properties", "MessageRetentionPeriod"), "tenant queue retention")) * time.Second
	equal(t, retention.String(), worker.DefaultQueueRetention.String(), "template-tenant.yaml Queue MessageRetentionPeriod and worker.DefaultQueueRetention")
	equal(t, tenantTpl("Resources", "DeadLetterQueue", "Properties", "MessageRetentionPeriod"), tenantTpl("Resources", "Queue", "Properties", "MessageRetentionPeriod"), "template-tenant.yaml DLQ and queue retention")
	equal(t, tenantTpl("Resources", "Queue", "Properties", "MaximumMessageSize"), strconv.Itoa(queue.MaxMessageBytes), "template-tenant.yaml MaximumMessageSize and queue.MaxMessageBytes")
	attempts := number(t, core("Parameters", "WorkerMaxAttempts", "Default"), "WorkerMaxAttempts")
	equal(t, core("Parameters", "WorkerAutoPauseHours", "Default"), strconv.Itoa(int(worker.DefaultAutoPause/time.Hour)), "template.yaml WorkerAutoPauseHours default and worker.DefaultAutoPause")
	equal(t, tenantTpl("Parameters", "TenantMaxConcurrency", "Default"), strconv.Itoa(devstack.TenantConcurrency), "template-tenant.yaml TenantMaxConcurrency default and devstack.TenantConcurrency (make run's pollers per tenant queue)")
	equal(t, tenantTpl("Parameters", "MaxReceiveCount", "Default"), strconv.Itoa(worker.MinMaxReceiveCount(attempts)), "template-tenant.yaml MaxReceiveCount default and worker.MinMaxReceiveCount(WorkerMaxAttempts)")
	equal(t, tenant.MaxHorizon.String(), (worker.DefaultQueueRetention - worker.DefaultExpiryMargin).String(), "tenant.MaxHorizon and worker.DefaultQueueRetention less worker.DefaultExpiryMargin")
	equal(t, forward.DefaultTimeout.String(), worker.DefaultEffectTimeout.String(), "forward.DefaultTimeout and worker.DefaultEffectTimeout")
	env, err := os.ReadFile(root + "/events/env.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"http://127.0.0.1:` + mk["MOTO_PORT"] + `"`, `"http://127.0.0.1:` + mk["DYNAMODB_PORT"] + `"`} {
		if !strings.Contains(string(env), want) {
			t.Errorf("events/env.json has no endpoint %s: make invoke would not reach make run's emulators", want)
		}
	}

	dedup := days(idempotency.DefaultRetention)
	ledgerDays := days(ledger.DefaultRetention)
	queueDays := days(worker.DefaultQueueRetention)
	apiPort, targetPort := port(t, local.Addr), port(t, devstack.DefaultTargetAddr)
	stackName := strings.TrimSuffix(strings.TrimPrefix(tenantTpl("Parameters", "CoreStack", "AllowedPattern"), "^[A-Za-z][A-Za-z0-9-]{0,"), "}$")
	stackMax := strconv.Itoa(number(t, stackName, "CoreStack AllowedPattern's repeat") + 1)
	expiryAlarm := watch.DefaultDeadLetterExpiry
	oldest := time.Duration(number(t, tenantTpl("Parameters", "OldestMessageAlarmSeconds", "Default"), "OldestMessageAlarmSeconds")) * time.Second

	cost := costFigures(t, root)
	const (
		costSrc   = "docs/cost.md, as make cost wrote it"
		dedupSrc  = "idempotency.DefaultRetention"
		ledgerSrc = "ledger.DefaultRetention"
		queueSrc  = "worker.DefaultQueueRetention, template-tenant.yaml MessageRetentionPeriod"
		apiSrc    = "Makefile ADDR ?=, devstack.EnvOptions"
		targetSrc = "devstack.DefaultTargetAddr"
		lambdaSrc = "ingest.MaxLambdaBodyBytes"
		sqsSrc    = "queue.MaxMessageBytes"
	)
	relay, err := devstack.LoadTenant(filepath.Join(root, "events", "tenants.json"), demo.BacklogTenant)
	if err != nil {
		t.Fatal(err)
	}
	var billing tenant.Destination
	for _, d := range relay.Outbound.Destinations {
		if d.Name == demo.BacklogDestination {
			billing = d
		}
	}
	relaySrc := "events/tenants.json, tenant " + demo.BacklogTenant + ", destination " + demo.BacklogDestination
	out := []statement{
		{"docs/operations.md", "`" + demo.BacklogDestination + "`: `stripe:invoice\\.\\*` at `([^`]+)`", billing.Rate, relaySrc + " rate"},
		{"docs/operations.md", "`" + demo.BacklogDestination + "`: `stripe:invoice\\.\\*` at `[^`]+`, burst (\\d+)", strconv.Itoa(billing.Burst), relaySrc + " burst"},
		{"docs/operations.md", `runs a backlog: (\d+) Stripe events`, strconv.Itoa(demo.DefaultBacklogEvents), "demo.DefaultBacklogEvents"},
		{"docs/operations.md", `sent at once over (\d+) customers`, strconv.Itoa(demo.DefaultBacklogCustomers), "demo.DefaultBacklogCustomers"},
		// What make cost measured (docs/cost.md, which it writes): the
		// pages that quote it must quote this run's figures.
		{"README.md", `About \*\*\$(\d+\.\d+) per million webhooks\*\*`, cost["first"], costSrc},
		{"README.md", `^\$(\d+\.\d+) per idle tenant-month`, cost["idle"], costSrc},
		{"docs/operations.md", `\*\*\$(\d+\.\d+) and \$\d+\.\d+ per million webhooks all-in\*\*`, cost["first"], costSrc},
		{"docs/operations.md", `\*\*\$\d+\.\d+ and \$(\d+\.\d+) per million webhooks all-in\*\*`, cost["duplicates"], costSrc},
		{"docs/operations.md", `under the \$(\d+\.\d+)$`, cost["budget"], costSrc},
		{"docs/operations.md", `the first workload costs \$(\d+\.\d+)`, cost["sensitivity"], costSrc},
		{"docs/operations.md", `idle tenant ≈ \*\*\$(\d+\.\d+)/month\*\*`, cost["idle"], costSrc},
		// The ingest's dedup window.
		{"README.md", `deduplicated for (\d+) days`, dedup, dedupSrc},
		{"README.md", "duplicate` for (\\d+) days", dedup, dedupSrc},
		{"docs/architecture.md", `(\d+)-day (?:dedup )?window`, dedup, dedupSrc},
		{"docs/reliability.md", `Window (\d+) days`, dedup, dedupSrc},
		{"docs/reliability.md", `the (\d+)-day dedup window`, dedup, dedupSrc},
		{"docs/reliability.md", `^\| (\d+) days \| the ingest's dedup window`, dedup, dedupSrc},
		{"docs/security.md", `dedup window \((\d+) days\)`, dedup, dedupSrc},
		{"docs/cost.md", `B for (\d+) days`, dedup, dedupSrc},
		{"docs/cost.md", `deduplicated for (\d+) days`, dedup, dedupSrc},
		{"docs/ledger.md", `the ingest's (\d+)-day dedup`, dedup, dedupSrc},
		{"docs/providers/github.md", `for the (\d+)-day$`, dedup, dedupSrc},
		{"docs/providers/*.md", `(\d+)-day (?:dedup|window)`, dedup, dedupSrc},
		{"docs/operations.md", "`DedupRetentionHours` \\((\\d+)\\)", dedupHours, dedupSrc + ", template.yaml DedupRetentionHours"},
		// Senders' retry horizons, as their rows state them.
		{"docs/providers/paddle.md", `up to 60 times over (\d+) days`, horizon("paddle", 24*time.Hour), "catalog row paddle, Retries.Horizon"},
		{"docs/providers/calendly.md", `not answered 2xx for (\d+) hours`, horizon("calendly", time.Hour), "catalog row calendly, Retries.Horizon"},

		// The ledger's retention, and what follows from it.
		{"docs/ledger.md docs/reliability.md", `\((\d+) days(?:,| less)|^\| (\d+) days \| effect records`, ledgerDays, ledgerSrc},
		{"docs/inspect.md docs/ledger.md", `(\d+)-day records`, ledgerDays, ledgerSrc},
		{"README.md", `ledger keeps its records (\d+) days`, ledgerDays, ledgerSrc},
		{"docs/ledger.md", `\(the (\d+)-day$`, ledgerDays, ledgerSrc},
		{"docs/reliability.md docs/ledger.md README.md", `(\d+) days after it was received|more than (\d+) days ago`, days(ledger.DefaultRetention - worker.DefaultReplayMargin), "ledger.DefaultRetention less worker.DefaultReplayMargin"},

		// Queue and DLQ retention, and the alarms and margins below it.
		{"docs/reliability.md docs/architecture.md", `at (\d+) days|\((\d+) days in the DLQ\)|(\d+)-day retention`, queueDays, queueSrc},
		{"docs/operations.md", `SQS deletes it at (\d+)`, queueDays, queueSrc},
		{"docs/reliability.md", `\((\d+)-day queue and DLQ retention`, queueDays, queueSrc},
		{"docs/reliability.md", `, (\d+)-day ledger\)`, ledgerDays, ledgerSrc},
		{"docs/inspect.md", `(\d+) days back`, sinceDays(t, root), "scripts/inspect's -since default"},
		{"docs/operations.md docs/reliability.md docs/scale.md", `dead letter is (\d+) days old|^\| (\d+) days in the DLQ`, days(expiryAlarm), "pkg/watch DefaultDeadLetterExpiry"},
		{"docs/reliability.md", `^\| (\d+) days in the queue`, days(worker.DefaultQueueRetention - worker.DefaultExpiryMargin), "worker.DefaultQueueRetention less worker.DefaultExpiryMargin"},
		// A destination's retry horizon.
		{"README.md", "retry `horizon` \\((\\d+) days by default\\)", days(tenant.DefaultHorizon), "tenant.DefaultHorizon"},
		{"docs/receiving.md", "destination's `horizon` \\((\\d+) days by default\\)", days(tenant.DefaultHorizon), "tenant.DefaultHorizon"},
		{"docs/reliability.md", `^\| (\d+) days \| large bodies`, core("Parameters", "PayloadRetentionDays", "Default"), "template.yaml PayloadRetentionDays"},
		{"docs/operations.md", `expiring (\d+) days after its last`, days(watch.DefaultStateRetention), "pkg/watch DefaultStateRetention"},
		{"docs/architecture.md", `Retry-After, or (\d+) s doubling`, seconds(ratelimit.DefaultPenalty), "ratelimit.DefaultPenalty"},
		{"docs/architecture.md", `doubling up to (\d+) min`, strconv.Itoa(int(ratelimit.DefaultMaxPenalty / time.Minute)), "ratelimit.DefaultMaxPenalty"},
		{"docs/architecture.md", `climb back over (\d+) s`, seconds(ratelimit.DefaultRecovery), "ratelimit.DefaultRecovery"},
		// The longest sleep for a rate slot inside an invocation.
		{"docs/architecture.md docs/reliability.md", "`(?:worker\\.)?MaxSlotWait`(?:,| \\() ?(\\d+) s", seconds(worker.MaxSlotWait), "worker.MaxSlotWait"},
		// The local mapping's pollers per tenant queue.
		{"docs/architecture.md", `invocations of a tenant's queue at once \((\d+) by`, tenantTpl("Parameters", "TenantMaxConcurrency", "Default"), "template-tenant.yaml TenantMaxConcurrency"},
		{"docs/reliability.md", `event source mapping \((\d+) pollers per`, tenantTpl("Parameters", "TenantMaxConcurrency", "Default"), "template-tenant.yaml TenantMaxConcurrency, chaos Options.Pollers"},
		{"docs/ledger.md", `each expires (\d+) hour after it goes`, strconv.Itoa(int(ratelimit.DefaultRetention / time.Hour)), "ratelimit.DefaultRetention"},
		{"docs/operations.md", `not seen for (\d+) minutes`, strconv.Itoa(int(watch.DefaultGap / time.Minute)), "pkg/watch DefaultGap"},
		{"docs/operations.md", `events waiting > (\d+) min`, strconv.Itoa(int(oldest / time.Minute)), "template-tenant.yaml OldestMessageAlarmSeconds"},
		{"docs/operations.md", `within (\d+) minutes`, strconv.Itoa(int(tenant.DefaultTTL / time.Minute)), "tenant.DefaultTTL"},

		// make run's addresses.
		{"README.md", `HTTP API :(\d+)`, apiPort, apiSrc},
		{"README.md", `target service :(\d+)`, targetPort, targetSrc},
		{"README.md", `http://127\.0\.0\.1:(\d+)/webhooks`, apiPort, apiSrc},
		{"README.md", `http://127\.0\.0\.1:(\d+)/applied`, targetPort, targetSrc},
		{"docs/development.md", "targetUrl`s on `127\\.0\\.0\\.1:(\\d+)`", targetPort, targetSrc},
		{"docs/development.md", "the target `:(\\d+)`", targetPort, targetSrc},
		{"docs/development.md", "`127\\.0\\.0\\.1:(\\d+)`\\s+inside the container|`127\\.0\\.0\\.1:(\\d+)`$", targetPort, targetSrc},
		{"docs/development.md", "host\\.docker\\.internal:(\\d+)|TARGET_ADDR=0\\.0\\.0\\.0:(\\d+)", targetPort, targetSrc},
		{"docs/development.md", "^\\| `MOTO_PORT` .*`events/env\\.json` expects (\\d+)", mk["MOTO_PORT"], "events/env.json AWS_ENDPOINT_URL"},
		{"docs/development.md", "^\\| `DYNAMODB_PORT` .*`events/env\\.json` expects (\\d+)", mk["DYNAMODB_PORT"], "events/env.json AWS_ENDPOINT_URL_DYNAMODB"},
		{"docs/development.md", "make run MOTO_PORT=(\\d+)|make invoke MOTO_PORT=(\\d+)", "5000", "the example's own port (not a default)"},
		{"docs/development.md", `\(.TARGET_ADDR., .127\.0\.0\.1:(\d+).\)|http://127\.0\.0\.1:(\d+)/control`, targetPort, targetSrc},
		{"docs/development.md", `http://127\.0\.0\.1:(\d+)/webhooks`, apiPort, apiSrc},
		{"docs/operations.md", `http://127\.0\.0\.1:(\d+)/`, port(t, console.DefaultAddr), "console.DefaultAddr"},
		{"docs/development.md", "outbound `timeout` \\((\\d+) s by default\\)", strconv.Itoa(int(forward.DefaultTimeout / time.Second)), "forward.DefaultTimeout"},
		{"docs/development.md", `retried, (\d+) attempts over about a minute under .make run.`, strconv.Itoa(devstack.LocalMaxAttempts), "devstack.LocalMaxAttempts"},
		{"docs/development.md", `with .status. \((\d+) by default\)`, strconv.Itoa(http.StatusTooManyRequests), "the local target's rate rule (pkg/local/devstack/rules.go: cmp.Or(r.Status, http.StatusTooManyRequests))"},

		// Limits.
		{"README.md", `^\| a body over (\d+) MiB`, strconv.Itoa(ingest.MaxLambdaBodyBytes >> 20), lambdaSrc},
		{"README.md", `Bodies up to (\d+) MB`, strconv.Itoa(ingest.MaxLambdaBodyBytes >> 20), lambdaSrc},
		{"docs/operations.md docs/rehearsal.md", `Lambda (\d+) MB|the (\d+) MB`, strconv.Itoa(ingest.MaxLambdaBodyBytes >> 20), lambdaSrc},
		{"README.md docs/architecture.md docs/operations.md docs/reliability.md", `(?:[Bb]odies over|[Ee]nvelope over|Events over|SQS's|about) (\d+) MiB`, strconv.Itoa(queue.MaxMessageBytes >> 20), sqsSrc},
		{"docs/reliability.md", `over (\d+) MiB \(through`, strconv.Itoa(queue.MaxMessageBytes >> 20), sqsSrc},
		{"docs/operations.md", "`MaximumMessageSize` (\\d+)", strconv.Itoa(queue.MaxMessageBytes), sqsSrc},
		{"docs/operations.md", `less (\d+) KiB kept`, strconv.Itoa((queue.MaxMessageBytes - queue.MaxEventBytes) >> 10), "queue.MaxMessageBytes less queue.MaxEventBytes"},
		{"README.md docs/development.md docs/inspect.md", `(\d+)–\d+ characters`, "1", "tenantid.Validate (an empty id is invalid)"},
		{"README.md docs/development.md docs/inspect.md", `\d+–(\d+) characters`, strconv.Itoa(tenantid.MaxLen), "tenantid.MaxLen"},
		{"docs/security.md", `ids of (\d+) characters`, strconv.Itoa(tenantid.MaxLen), "tenantid.MaxLen"},
		{"docs/scale.md", `core stack name \((\d+) characters\)`, stackMax, "template-tenant.yaml CoreStack AllowedPattern"},
		{"README.md", `a core stack name at most (\d+)`, stackMax, "template-tenant.yaml CoreStack AllowedPattern"},
		{"docs/operations.md", `stack name ≤ (\d+) characters`, stackMax, "template-tenant.yaml CoreStack AllowedPattern"},
		{"docs/operations.md", `1 to (\d+) characters of`, strconv.Itoa(tenant.MaxNameLength), "tenant.MaxNameLength (a destination's name)"},
		{"docs/operations.md", `at most (\d+) per second`, strconv.Itoa(tenant.MaxRate), "tenant.MaxRate"},
		{"docs/operations.md", `quiet spell: 1 to (\d+)`, strconv.Itoa(tenant.MaxBurst), "tenant.MaxBurst"},
		{"README.md docs/operations.md docs/reliability.md", `API Gateway's (\d+) s`, seconds(ingest.DefaultMaxDuration + time.Second), "ingest.DefaultMaxDuration plus its second of margin"},

		// Timeouts, attempts and receives.
		{"docs/receiving.md", "the tenant's `timeout`, (\\d+) s by default", seconds(forward.DefaultTimeout), "forward.DefaultTimeout"},
		{"README.md", `"timeout": "(\d+)s"`, seconds(forward.DefaultTimeout), "forward.DefaultTimeout (the example states the default)"},
		{"docs/receiving.md", `from (\d+) s, at most \d+ h`, seconds(worker.DefaultRetryBase), "worker.DefaultRetryBase"},
		{"docs/receiving.md", `from \d+ s, at most (\d+) h`, strconv.Itoa(int(worker.MaxDelay / time.Hour)), "worker.MaxDelay"},
		{"docs/reliability.md docs/architecture.md", `^\| (\d+) h \| SQS's visibility limit|Retry-After, at most (\d+) h`, strconv.Itoa(int(worker.MaxDelay / time.Hour)), "worker.MaxDelay"},
		{"docs/receiving.md", "`WorkerMaxAttempts` attempts \\((\\d+) by default", strconv.Itoa(attempts), "template.yaml WorkerMaxAttempts"},
		{"docs/receiving.md", `\(\d+ by default, spanning at least (\d+) h`, retrySpan(attempts, 0), "worker.Retry's delays between WorkerMaxAttempts attempts, least jitter"},
		{"docs/reliability.md", "^\\| (\\d+) days \\(a destination's default `horizon`\\)", days(tenant.DefaultHorizon), "tenant.DefaultHorizon"},
		{"docs/operations.md", `\((\d+) attempts span \d+ to \d+ hours\)`, strconv.Itoa(attempts), "template.yaml WorkerMaxAttempts"},
		{"docs/operations.md", `attempts span (\d+) to \d+ hours\)|per \d+ hours beyond (\d+)`, retrySpan(attempts, 0), "worker.Retry's delays between WorkerMaxAttempts attempts, least jitter"},
		{"docs/operations.md", `attempts span \d+ to (\d+) hours\)`, retrySpan(attempts, 1), "worker.Retry's delays between WorkerMaxAttempts attempts, most jitter"},
		{"docs/operations.md", `one more attempt per (\d+) hours`, strconv.Itoa(int(worker.MaxDelay / 2 / time.Hour)), "worker.MaxDelay at its least jitter"},
		{"docs/operations.md", `the longest one \((\d+) receives\)`, strconv.Itoa(worker.MinMaxReceiveCount(attemptsFor(tenant.MaxHorizon))), "worker.MinMaxReceiveCount of the attempts spanning tenant.MaxHorizon"},
		{"docs/reliability.md", `\((\d+) attempts\)`, strconv.Itoa(attempts), "template.yaml WorkerMaxAttempts"},
		{"docs/reliability.md", `^\| (\d+)–\d+ h \(\d+ attempts\)`, retrySpan(attempts, 0), "worker.Retry's delays between WorkerMaxAttempts attempts, least jitter"},
		{"docs/reliability.md", `^\| \d+–(\d+) h \(\d+ attempts\)`, retrySpan(attempts, 1), "worker.Retry's delays between WorkerMaxAttempts attempts, most jitter"},
		{"docs/reliability.md", `a (\d+) s margin|^  (\d+) s margin`, seconds(ingest.DefaultSafetyMargin), "ingest.DefaultSafetyMargin"},
		{"docs/reliability.md", "`maxReceiveCount` \\(default (\\d+)\\)", strconv.Itoa(worker.MinMaxReceiveCount(attempts)), "template-tenant.yaml MaxReceiveCount, worker.MinMaxReceiveCount"},

		// Paused destinations.
		{"docs/architecture.md docs/operations.md", "`WorkerAutoPauseHours` \\(default (\\d+)\\)", core("Parameters", "WorkerAutoPauseHours", "Default"), "template.yaml WorkerAutoPauseHours"},
		{"docs/architecture.md", `\((\d+) receives over 3 days\)`, strconv.Itoa(pollReceives(72 * time.Hour)), "destination.Poll over a 3-day pause"},
		{"docs/operations.md", `\((\d+) days, then dead-lettered with the reason;`, days(worker.DefaultQueueRetention - worker.DefaultExpiryMargin), "worker.DefaultQueueRetention less worker.DefaultExpiryMargin"},
	}

	// development.md's table of make variables and their defaults.
	for v, want := range map[string]string{
		"ADDR": mk["ADDR"], "TARGET_ADDR": local.TargetAddr, "MOTO_PORT": mk["MOTO_PORT"], "DYNAMODB_PORT": mk["DYNAMODB_PORT"],
		"EMULATOR_HOST": local.Host, "TENANTS_FILE": mk["TENANTS_FILE"], "DYNAMODB_LOCAL_DIR": local.DynamoDBLocalDir,
		"LOG_FILE": mk["LOG_FILE"], "FUZZTIME": mk["FUZZTIME"], "COUNT": mk["COUNT"], "CONSOLE_ADDR": mk["CONSOLE_ADDR"],
	} {
		src := "Makefile " + v + " ?="
		if _, ok := mk[v]; !ok {
			src = "devstack.EnvOptions' " + v + " default"
		}
		out = append(out, statement{"docs/development.md", "^\\| `" + v + "` \\| `([^`]+)`", want, src})
	}
	out = append(out,
		statement{"docs/development.md", "^\\| `SEED`, `STEPS` \\| `(\\w+)`, `\\w+`", mk["SEED"], "Makefile SEED ?="},
		statement{"docs/development.md", "^\\| `SEED`, `STEPS` \\| `\\w+`, `(\\w+)`", mk["STEPS"], "Makefile STEPS ?="},
	)

	out = append(out, responseStatements(t, root)...)

	// The chaos run's shortened settings.
	chaos := chaosConsts(t, root)
	out = append(out,
		statement{"docs/reliability.md", `function timeouts \((\d+) s ingest`, chaos["ingestTimeout"], "pkg/local/chaos ingestTimeout"},
		statement{"docs/reliability.md", `s ingest, (\d+) s worker\)|the worker's timeout is (\d+) s`, chaos["workerTimeout"], "pkg/local/chaos workerTimeout"},
		statement{"docs/reliability.md", `effect timeouts \((\d+) s\)`, chaos["effectTimeout"], "pkg/local/chaos effectTimeout"},
		statement{"docs/reliability.md", `^timeout \((\d+) s\) are shortened`, chaos["visibilityTimeout"], "pkg/local/chaos visibilityTimeout"},
		statement{"docs/reliability.md", `it sleeps (\d+) s`, chaos["effectHang"], "pkg/local/chaos effectHang"},
	)

	// The parameters operations.md lists with their defaults: every
	// parameter of the core template that has one, and the tenant
	// parameters tenant.sh sets, under their variable names.
	for _, p := range []string{"DedupRetentionHours", "IngestMemorySize", "WorkerMemorySize", "WorkerMaxAttempts", "WorkerCompleteEffects", "PayloadRetentionDays", "LogRetentionDays"} {
		out = append(out, statement{"docs/operations.md", "`" + p + "`(?:/`\\w+`)? \\(`?(\\w+)`?", core("Parameters", p, "Default"), "template.yaml " + p})
	}
	for v, p := range map[string]string{"TENANT_MAX_CONCURRENCY": "TenantMaxConcurrency", "MAX_RECEIVE_COUNT": "MaxReceiveCount", "OLDEST_MESSAGE_ALARM_SECONDS": "OldestMessageAlarmSeconds"} {
		out = append(out, statement{"docs/operations.md", "`" + v + "` \\((\\d+)", tenantTpl("Parameters", p, "Default"), "template-tenant.yaml " + p})
	}
	out = append(out,
		statement{"docs/operations.md", "^minimum (\\d+)\\), `MAX_RECEIVE_COUNT`", tenantTpl("Parameters", "TenantMaxConcurrency", "MinValue"), "template-tenant.yaml TenantMaxConcurrency MinValue"},
		statement{"docs/operations.md", `refuses less than (\d+) × the core stack's ` + "`WorkerMaxAttempts` \\+ \\d+", strconv.Itoa(worker.MinMaxReceiveCount(1) - worker.MinMaxReceiveCount(0)), "worker.MinMaxReceiveCount"},
		statement{"docs/operations.md", `refuses less than \d+ × the core stack's ` + "`WorkerMaxAttempts` \\+ (\\d+)", strconv.Itoa(worker.MinMaxReceiveCount(0)), "worker.MinMaxReceiveCount"},
	)
	return out
}

var sinceFlag = regexp.MustCompile(`fs\.DurationVar\(&f\.Since, "since", (\d+) ?\* ?24 ?\* ?time\.Hour`)

// sinceDays reads scripts/inspect's -since default, in days, from the
// package defining it (scripts/internal/stack: internal to scripts/, it
// cannot be imported here).
func sinceDays(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(root + "/scripts/internal/stack/stack.go")
	if err != nil {
		t.Fatal(err)
	}
	m := sinceFlag.FindSubmatch(b)
	if m == nil {
		t.Fatalf("scripts/internal/stack/stack.go: no -since flag matches %s", sinceFlag)
	}
	return string(m[1])
}

var chaosConst = regexp.MustCompile(`(?m)^\s+(\w+)\s+= (\d+)(?: \* (time\.Second|\w+))?`)

// chaosConsts reads the chaos run's shortened settings, in seconds, from
// pkg/local/chaos/run.go (unexported constants of a package this one
// does not import).
func chaosConsts(t *testing.T, root string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(root + "/pkg/local/chaos/run.go")
	if err != nil {
		t.Fatal(err)
	}
	secs := map[string]int{}
	for _, m := range chaosConst.FindAllStringSubmatch(string(b), -1) {
		n, _ := strconv.Atoi(m[2])
		switch unit := m[3]; {
		case unit == "" || unit == "time.Second":
			secs[m[1]] = n
		default:
			if base, ok := secs[unit]; ok {
				secs[m[1]] = n * base
			}
		}
	}
	out := map[string]string{}
	for _, name := range []string{"ingestTimeout", "workerTimeout", "effectTimeout", "visibilityTimeout", "effectHang"} {
		n, ok := secs[name]
		if !ok {
			t.Fatalf("pkg/local/chaos/run.go: read no %s in seconds", name)
		}
		out[name] = strconv.Itoa(n)
	}
	return out
}

// retrySpan is how long worker.Retry's delays between attempts take, in
// hours rounded, with the jitter at its least (0) or most (1).
func retrySpan(attempts int, jitter float64) string {
	r := worker.Retry{Jitter: func() float64 { return jitter }}
	var total time.Duration
	for n := 1; n < attempts; n++ {
		total += r.Delay(n, 0)
	}
	return strconv.Itoa(int(total.Round(time.Hour) / time.Hour))
}

// attemptsFor returns the fewest attempts whose delays between them, at
// the least jitter, span h.
func attemptsFor(h time.Duration) int {
	r := worker.Retry{Jitter: func() float64 { return 0 }}
	n := 1
	for total := time.Duration(0); total < h; n++ {
		total += r.Delay(n, 0)
	}
	return n
}

// horizon returns the retry horizon of catalog row name in units.
func horizon(name string, unit time.Duration) string {
	for _, r := range catalog.Rows {
		if r.Name == name && r.Retries != nil {
			return strconv.Itoa(int(r.Retries.Horizon / unit))
		}
	}
	return "no catalog row " + name + " with Retries"
}

// allowances are the swept numbers that state nothing the code decides.
var allowances = []allowed{
	{"docs/operations.md", `\+\$0\.63 per million`, "one write unit at on-demand's $0.625 per million, as docs/ledger.md derives it"},
	{"docs/operations.md", `polls ≈ \$0\.32, the watch's two queue reads every 5 minutes ≈ \$0\.007`, "the idle tenant-month's lines, which the total beside them is checked against"},
	{"docs/providers/github.md", `\(for up to 3 days\)|^3 days\)`, "GitHub's own redelivery horizon"},
	{"docs/providers/openai.md", `for up to 72 hours`, "OpenAI's own retry horizon, quoted from its docs"},
	{"docs/providers/razorpay.md", `for 24 hours after`, "Razorpay's own retry horizon, quoted from its docs"},
	{"docs/providers/twilio.md", "`:443`/`:80`", "the default ports Twilio may sign a URL with"},
	{"docs/operations.md", `accepts 10 MB`, "API Gateway HTTP API's own payload limit, not the pack's"},
	{"docs/reliability.md", `retries \(for 3 days\)`, "the simulation's sender retries as Stripe does (pkg/worker's simulation, not product code)"},
	{"docs/reliability.md", `of up to 13 days`, "the simulation's clock jumps (pkg/worker's simulation, not product code)"},
	{"docs/reliability.md", `ledger 7 days \+ 10 h 30 min`, "the simulation's compressed ledger retention (pkg/worker's simulation, not product code)"},
	{"docs/providers/square.md", `retried for up to 24 hours`, "Square's own retry horizon, quoted from its docs"},
	{"docs/providers/linear.md", `after 1 minute, 1 hour and 6 hours`, "Linear's own retry schedule, quoted from its docs (their sum is the row's Retries.Horizon, on the page's Retries line, which TestRetries checks)"},
}

// costFigures reads what make cost measured from docs/cost.md, which it
// writes: each workload's total, the budget, the sensitivity's price and
// the idle tenant-month.
func costFigures(t *testing.T, root string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "cost.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for name, pattern := range map[string]string{
		"first":       `(?m)^\| 200 webhooks, conversations of 5 \| \*\*(\d+\.\d+)\*\*`,
		"duplicates":  `(?m)^\| 200 webhooks, 30% duplicates, conversations of 10 \| \*\*(\d+\.\d+)\*\*`,
		"budget":      `\| against \$(\d+\.\d+) \|`,
		"sensitivity": `the first workload costs \$(\d+\.\d+);`,
		"idle":        `(?s)Fixed cost per tenant per month.*?\*\*total\*\* \| \| \*\*(\d+\.\d+)\*\*`,
	} {
		m := regexp.MustCompile(pattern).FindSubmatch(b)
		if m == nil {
			t.Fatalf("docs/cost.md has no %s figure (%s): make cost changed its report; change costFigures", name, pattern)
		}
		out[name] = string(m[1])
	}
	return out
}

// pollReceives is how many times a message waiting for a destination paused
// for d comes back (destination.Poll).
func pollReceives(d time.Duration) int {
	n := 0
	for at := time.Duration(0); at < d; at += destination.Poll(at) {
		n++
	}
	return n
}
