package inspect

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/replay"
	"github.com/hookpack/hookpack/pkg/worker"
)

// Sentinel errors.
var (
	// ErrUnknownEvent: no claim, effect record or dead letter of the event.
	ErrUnknownEvent = errors.New("no trace of the event")
	// ErrUnknownTenant: the tenant has no queue in this deployment.
	ErrUnknownTenant = errors.New("no queue for the tenant")
)

// Deployment names the stores of one stack (FromStack reads them from a
// deployed stack's outputs; the local stack's come from its harness).
type Deployment struct {
	IdempotencyTable string
	LedgerTable      string
	// PayloadBucket holds bodies too large for SQS; empty: not looked at.
	PayloadBucket string
	// QueueURLTemplate is a tenant's queue URL with "{tenant}"; its DLQ is
	// "<name>-dlq.fifo" (worker.DLQURL).
	QueueURLTemplate string
	// MaxAttempts is the worker's (the core stack's WorkerMaxAttempts, its
	// MAX_ATTEMPTS): a retrying event reads "attempt n of MaxAttempts".
	// 0: not known, or no limit.
	MaxAttempts int
	// DedupRetention is the idempotency table's retention
	// (idempotency.DefaultRetention when zero); it dates a claim.
	DedupRetention time.Duration
	// IngestLogGroup is the ingest's CloudWatch log group, searched with
	// Logs Insights for an event id, and WorkerLogGroup the worker's,
	// searched for an event key's attempts (NewAWS); IngestLogFile is a
	// local stack's log file, with both functions' lines, searched instead
	// when set. All empty: no log.
	IngestLogGroup string
	WorkerLogGroup string
	IngestLogFile  string
	// IngestLogSince bounds how far back Logs Insights searches both log
	// groups (default 14 days).
	IngestLogSince time.Duration
	// ReplayCommand is the command that redrives one conversation of a
	// tenant's DLQ on this deployment, as an operator types it, with
	// {tenant} and {conversation} (already quoted for a shell) in it:
	// printed in a dead-lettered event's notes. Empty: scripts/replay by
	// queue URL.
	ReplayCommand string
	// ParameterPrefix is the prefix of the tenants' SSM parameters
	// (tenant.NewSSM's: "/<stack>"), from which the tenant's outbound
	// configuration is read for its destinations' names, filters and
	// rates. Empty: not read.
	ParameterPrefix string
}

// replayCommand is d's command that redrives conversation conv of tenant
// from queueURL's DLQ.
func (d Deployment) replayCommand(tenant, conv, queueURL string) string {
	quoted := "'" + strings.ReplaceAll(conv, "'", `'\''`) + "'"
	if d.ReplayCommand == "" {
		return fmt.Sprintf("go run ./scripts/replay -queue-url %s -conversation %s redrive", queueURL, quoted)
	}
	return strings.NewReplacer("{tenant}", tenant, "{conversation}", quoted).Replace(d.ReplayCommand)
}

// State is where an event is.
type State string

// States.
const (
	StateUnknown State = "unknown"
	// StateReceiving: an INPROGRESS claim, which only earlier versions of
	// the ingest wrote (today's writes a key once its event is queued):
	// the event is not known to be queued.
	StateReceiving State = "receiving"
	// StateQueued: queued; no effect has started (it waits in the queue,
	// or behind an earlier message of its conversation).
	StateQueued State = "queued"
	// StateInFlight: a worker holds a live lease on one of its effects.
	StateInFlight State = "in_flight"
	// StateRetrying: an effect failed or was interrupted; its message is
	// received again after its backoff.
	StateRetrying State = "retrying"
	// StateDeadLettered: its message waits in the tenant's DLQ (or the
	// worker dead-lettered it and its dead letter is gone).
	StateDeadLettered State = "dead_lettered"
	// StateReplaying: the worker dead-lettered it and its dead letter has
	// left the listing for a replay: hidden in the DLQ by a redrive, or
	// moved to the queue, where a worker has not claimed it yet.
	StateReplaying State = "replaying"
	// StateDone: every effect seen completed (the forward's by the deletion
	// of its message, see docs/ledger.md).
	StateDone State = "done"
)

// Query names an event of a tenant.
type Query struct {
	Tenant string
	// Event is a provider's event id, an idempotency key
	// "{tenant}#{provider}#{eventId}", the Idempotency-Key an effect's call
	// carried (64 hex digits) or a forward's webhook-id ("msg_…"). The last
	// two are one-way hashes: they are matched against the event keys of
	// the tenant's dead letters and, with Scan, of its ledger records.
	Event string
	// Provider narrows a provider event id to one provider (default: every
	// provider of Config.Providers).
	Provider string
	// Effects are custom effect names to read besides the forward and the
	// tenant's destinations' effects.
	Effects []string
	// Scan lets the inspector Scan the ledger (a read of the whole table):
	// it finds every effect of the event and resolves hashed ids.
	Scan bool

	// destinations are the tenant's, read by Inspect; their effects are
	// appended to Effects.
	destinations []Destination
}

// Claim is the event's idempotency record.
type Claim struct {
	Status idempotency.Status `json:"status"`
	// Received is when the claim was made (INPROGRESS) or completed, which
	// the ingest does within its 10 s of receiving the delivery
	// (COMPLETED): its expiration less the retention, to the second.
	Received time.Time `json:"received"`
	// Expires ends the deduplication window: until then a delivery of the
	// same key is answered duplicate (or 409 with another payload digest).
	Expires       time.Time `json:"expires"`
	LeaseExpires  time.Time `json:"leaseExpires,omitzero"`
	PayloadDigest string    `json:"payloadDigest,omitempty"`
}

// Effect is one effect record of the event.
type Effect struct {
	Name string `json:"name"`
	// State is what the record means to an operator: done, dead, in
	// progress, or failed, retrying (Status is the ledger's).
	State        EffectState   `json:"state"`
	Status       ledger.Status `json:"status"`
	LeaseExpires time.Time     `json:"leaseExpires,omitzero"`
	Expires      time.Time     `json:"expires"`
	Reason       string        `json:"reason,omitempty"`
	// DeadMessage is the message a DEAD effect's event was dead-lettered
	// from.
	DeadMessage string `json:"deadMessage,omitempty"`
	// IdempotencyKey is the Idempotency-Key header its calls carry.
	IdempotencyKey string `json:"idempotencyKey"`
	// Meaning reads the record (an INPROGRESS forward whose message is gone
	// is done; docs/ledger.md).
	Meaning string `json:"meaning"`
}

// Depth is what a tenant's queues hold, from their attributes (SQS's
// approximate counts).
type Depth struct {
	QueueURL    string `json:"queueUrl"`
	Visible     int    `json:"visible"`
	InFlight    int    `json:"inFlight"`
	Delayed     int    `json:"delayed"`
	DeadLetters int    `json:"deadLetters"`
	// DeadLettersInFlight are DLQ messages hidden by a listing or a redrive.
	DeadLettersInFlight int `json:"deadLettersInFlight"`
	// DeadLetterRetentionSeconds is how long the DLQ keeps a message
	// (MessageRetentionPeriod).
	DeadLetterRetentionSeconds int `json:"deadLetterRetentionSeconds"`
}

// Journey is what the stores say about one event. It never holds a body,
// a header, a secret or a signature: digests, sizes and ids only.
type Journey struct {
	Tenant string `json:"tenant"`
	Key    string `json:"idempotencyKey"`
	// WebhookID is the forward's webhook-id header.
	WebhookID string `json:"webhookId"`
	State     State  `json:"state"`
	// Why says in a sentence what the state rests on.
	Why        string       `json:"why"`
	Claim      *Claim       `json:"claim,omitempty"`
	Queue      Depth        `json:"queue"`
	DeadLetter *replay.Item `json:"deadLetter,omitempty"`
	// Attempts is the failed attempts of the dead-lettered message, as the
	// ledger counted them (-1: unknown).
	Attempts int      `json:"attempts"`
	Effects  []Effect `json:"effects"`
	// Destinations are the tenant's destinations (none for a targetUrl):
	// each one's effect is among Effects when it has a record, and says
	// why not otherwise.
	Destinations []Destination `json:"destinations,omitempty"`
	Payload      *queue.Object `json:"payload,omitempty"`
	// Deliveries are the ingest log lines of the event, when the log was
	// searched.
	Deliveries []Delivery `json:"deliveries,omitempty"`
	// Runs are the worker log lines of the event, when the log was
	// searched, and Messages the messages they name with the attempts of
	// each that failed (the ledger's count: a done event's too).
	Runs     []Run     `json:"runs,omitempty"`
	Messages []Message `json:"messages,omitempty"`
	// Next is a retrying event's next attempt, when the worker log names
	// its message (nextAttempt); nil otherwise.
	Next *NextAttempt `json:"next,omitempty"`
	// History is what happened to the event, in time order (history).
	History []Step `json:"history,omitempty"`
	// Notes say what could not be seen, and what to do next.
	Notes []string `json:"notes,omitempty"`
}

// claimReader reads idempotency records (idempotency.DynamoDB).
type claimReader interface {
	Record(ctx context.Context, key string) (idempotency.Record, error)
}

// effectReader reads the effect ledger (ledger.DynamoDB). Effects is a
// Scan, called only when a query allows it.
type effectReader interface {
	Record(ctx context.Context, k ledger.Key) (ledger.Record, error)
	Effects(ctx context.Context, tenantID, event string) ([]ledger.Record, error)
	Attempts(ctx context.Context, messageID string) (int, error)
}

// queueAPI reads queue attributes; it never receives.
type queueAPI interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// deadLetters lists a DLQ and makes its messages visible again
// (replay.Replayer).
type deadLetters interface {
	List(ctx context.Context, dlqURL string, f replay.Filter) ([]replay.Item, error)
}

// payloadStat finds an offloaded body without reading it (queue.Payloads).
type payloadStat interface {
	Stat(ctx context.Context, queueURL, eventKey string) (queue.Object, error)
}

// Config wires an Inspector.
type Config struct {
	Deployment  Deployment
	Claims      claimReader
	Ledger      effectReader
	Queues      queueAPI
	DeadLetters deadLetters
	// Payloads is nil when the deployment has no payload bucket.
	Payloads payloadStat
	// Metrics is nil where CloudWatch has no queue metrics (local stacks).
	Metrics metricAPI
	// Logs finds the ingest's log lines of an event id: the only store
	// that pairs an unsigned sender id (GitHub's X-GitHub-Delivery, …)
	// with the event's key. Nil: not searched.
	Logs deliveryLog
	// Runs finds the worker's log lines of an event key: its attempts.
	// Nil: not searched.
	Runs runLog
	// Providers are the provider path names a bare event id is tried with.
	Providers []string
	// Outbound reads the tenant's outbound configuration, of which only
	// the destinations' names, filters and rates are kept (never a URL or
	// a secret): each destination's effect is then read without -effects,
	// and the summary shows its pace. Nil: not read.
	Outbound outboundReader
	// Limits reads a destination's rate limiter (the summary only). Nil:
	// shown idle.
	Limits limitReader
	// Pauses reads the destinations' pauses and failure streaks (the
	// summary only; destination.DynamoDB: one GetItem). Nil: not shown.
	Pauses pauseReader
	Now    func() time.Time
}

// Inspector reads a deployment's stores. It is safe for concurrent use if
// its clients are.
type Inspector struct{ cfg Config }

// New returns an inspector.
func New(cfg Config) *Inspector {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Deployment.DedupRetention <= 0 {
		cfg.Deployment.DedupRetention = idempotency.DefaultRetention
	}
	return &Inspector{cfg: cfg}
}

var (
	effectKeyRE = regexp.MustCompile(`^[0-9a-f]{64}$`)
	webhookIDRE = regexp.MustCompile(`^msg_[0-9a-f]{32}$`)
)

// Inspect returns the journey of the event q names: one, or one per
// provider when a bare event id was claimed under several. It returns an
// error wrapping ErrMalformed (q.Check with Config.Providers, before any
// read), ErrUnknownTenant, or ErrUnknownEvent (the message says what was
// searched and why an event may leave no trace), or a wrapped AWS error.
func (in *Inspector) Inspect(ctx context.Context, q Query) ([]Journey, error) {
	if err := q.Check(in.cfg.Providers); err != nil {
		return nil, err
	}
	depth, err := in.depth(ctx, q.Tenant)
	if err != nil {
		return nil, err
	}
	dead, notes, err := in.deadLetters(ctx, depth)
	if err != nil {
		return nil, err
	}
	dests, note := in.destinations(ctx, q.Tenant)
	if note != "" {
		notes = append(notes, note)
	}
	q.Effects = slices.Clone(q.Effects)
	for _, d := range dests {
		if !slices.Contains(q.Effects, d.Effect) {
			q.Effects = append(q.Effects, d.Effect)
		}
	}
	q.destinations = dests
	// The tenant's effect records, scanned at most once and only when q
	// allows it.
	var scanned []ledger.Record
	var didScan bool
	scan := func() ([]ledger.Record, error) {
		if q.Scan && !didScan {
			recs, err := in.cfg.Ledger.Effects(ctx, q.Tenant, "")
			if err != nil {
				return nil, err
			}
			scanned, didScan = recs, true
		}
		return scanned, nil
	}
	var deliveries []Delivery
	logs := "the ingest log was not searched"
	if in.cfg.Logs != nil {
		// The log adds keys and the deliveries' history: when it cannot be
		// read, the stores still answer for the keys an id makes by itself.
		// A key is searched by its event id: the ingest's line names the
		// id, not the key.
		id := q.Event
		if isKey(id) {
			id = strings.SplitN(id, "#", 3)[2]
		}
		if deliveries, err = in.cfg.Logs.Deliveries(ctx, q.Tenant, id); err != nil {
			logs = "the ingest log could not be searched: " + err.Error()
			notes = append(notes, logs)
		} else {
			logs = "no ingest log line names it"
		}
	}
	keys, err := in.resolve(ctx, q, dead, deliveries, scan)
	if errors.Is(err, ErrUnknownEvent) {
		// A provider's own id may look like a hash (a Standard Webhooks
		// msg_… id): try it as one before giving up.
		if js, jerr := in.journeys(ctx, q, in.bareKeys(q, dead, deliveries), depth, dead, deliveries, notes, scan); jerr == nil {
			return js, nil
		}
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	out, err := in.journeys(ctx, q, keys, depth, dead, deliveries, notes, scan)
	if errors.Is(err, ErrUnknownEvent) {
		tried := strings.Join(keys, ", ")
		if len(keys) > 3 {
			tried = fmt.Sprintf("%s#<provider>#%s (%d providers)", q.Tenant, q.Event, len(keys))
		}
		return out, fmt.Errorf("%w %q of tenant %s: no idempotency claim (kept %s), effect record (kept %s) or dead letter under %s, and %s. "+
			"Either it was never verified and queued (a refused delivery's log line has no event id), or it is older than that",
			ErrUnknownEvent, q.Event, q.Tenant, days(in.cfg.Deployment.DedupRetention), days(ledger.DefaultRetention), tried, logs)
	}
	return out, err
}

// journeys returns the journeys of keys that left a trace (all of them
// when there is one key), or ErrUnknownEvent when none did.
func (in *Inspector) journeys(ctx context.Context, q Query, keys []string, depth Depth, dead []replay.Item, deliveries []Delivery, notes []string, scan func() ([]ledger.Record, error)) ([]Journey, error) {
	var out []Journey
	for _, key := range keys {
		j, err := in.journey(ctx, q, key, depth, dead, deliveries, scan)
		if err != nil {
			return nil, err
		}
		if j.State == StateUnknown && len(j.Deliveries) > 0 {
			j.Why = "the ingest log names it, but no claim, effect record or dead letter remains: older than their retention, " +
				"or never queued (see the log's outcomes)"
		}
		if j.State == StateUnknown && len(keys) > 1 && len(j.Deliveries) == 0 {
			continue
		}
		j.Notes = append(j.Notes, notes...)
		out = append(out, j)
	}
	if len(out) == 0 || len(out) == 1 && out[0].State == StateUnknown && len(out[0].Deliveries) == 0 {
		return out, ErrUnknownEvent
	}
	return out, nil
}

// resolve turns q.Event into candidate idempotency keys.
func (in *Inspector) resolve(ctx context.Context, q Query, dead []replay.Item, deliveries []Delivery, scan func() ([]ledger.Record, error)) ([]string, error) {
	ref := q.Event
	if isKey(ref) { // of q.Tenant: q.Check
		return []string{ref}, nil
	}
	var match func(eventKey string, k ledger.Key) bool
	switch {
	case effectKeyRE.MatchString(ref):
		match = func(_ string, k ledger.Key) bool { return k.IdempotencyKey() == ref }
	case webhookIDRE.MatchString(ref):
		match = func(eventKey string, _ ledger.Key) bool { return forward.MessageID(eventKey) == ref }
	default:
		return in.bareKeys(q, dead, deliveries), nil
	}
	// A hashed id: try the event keys we can list.
	names := append([]string{worker.ForwardEffect}, q.Effects...)
	seen := map[string]bool{}
	var found []string
	try := func(eventKey string, effects []string) {
		for _, e := range effects {
			if !seen[eventKey] && match(eventKey, ledger.Key{Tenant: q.Tenant, Event: eventKey, Effect: e}) {
				seen[eventKey] = true
				found = append(found, eventKey)
			}
		}
	}
	for _, it := range dead {
		if it.EventKey != "" {
			try(it.EventKey, names)
		}
	}
	recs, err := scan()
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.Key.Event != "" {
			try(r.Key.Event, []string{r.Key.Effect})
		}
	}
	if len(found) == 0 {
		how := "the event keys of the tenant's dead letters"
		if q.Scan {
			how += " and of its ledger records"
		} else {
			how += " (add -scan to search its ledger records too: a Scan of the whole ledger table)"
		}
		return nil, fmt.Errorf("%w %s of tenant %s: it is a one-way hash, and no event matched among %s; "+
			"the provider's event id or the idempotency key finds an event directly", ErrUnknownEvent, ref, q.Tenant, how)
	}
	return found, nil
}

// bareKeys are the keys a provider's event id q.Event may have.
func (in *Inspector) bareKeys(q Query, dead []replay.Item, deliveries []Delivery) []string {
	providers := in.cfg.Providers
	if q.Provider != "" {
		providers = []string{q.Provider}
	}
	var keys []string
	for _, p := range providers {
		keys = append(keys, q.Tenant+"#"+p+"#"+q.Event)
	}
	// An id from an unsigned header (GitHub's X-GitHub-Delivery, …) is not
	// in the key; the ingest's log line and a dead letter's envelope pair
	// the two, and the log has the ids a key only contains (Shopify's
	// "topic:id", Twilio's "sid:status").
	for _, d := range deliveries {
		if (q.Provider == "" || d.Provider == q.Provider) && !slices.Contains(keys, d.Key) {
			keys = append(keys, d.Key)
		}
	}
	for _, it := range dead {
		if it.EventID == q.Event && it.EventKey != "" && !slices.Contains(keys, it.EventKey) {
			keys = append(keys, it.EventKey)
		}
	}
	return keys
}

// journey reads what the stores hold for key.
func (in *Inspector) journey(ctx context.Context, q Query, key string, depth Depth, dead []replay.Item, deliveries []Delivery, scan func() ([]ledger.Record, error)) (Journey, error) {
	now := in.cfg.Now()
	j := Journey{Tenant: q.Tenant, Key: key, WebhookID: forward.MessageID(key), Queue: depth, Attempts: -1, Destinations: slices.Clone(q.destinations)}
	for _, d := range deliveries {
		if d.Key == key {
			j.Deliveries = append(j.Deliveries, d)
		}
	}
	rec, err := in.cfg.Claims.Record(ctx, key)
	switch {
	case errors.Is(err, idempotency.ErrNotFound):
	case err != nil:
		return j, err
	default:
		j.Claim = &Claim{Status: rec.Status, Received: rec.Expires.Add(-in.cfg.Deployment.DedupRetention), Expires: rec.Expires,
			LeaseExpires: rec.LeaseExpires, PayloadDigest: rec.Validation}
	}
	if j.DeadLetter = newestDeadLetter(dead, key); j.DeadLetter != nil {
		if id := j.DeadLetter.OriginalMessageID; id != "" {
			if j.Attempts, err = in.cfg.Ledger.Attempts(ctx, id); err != nil {
				return j, err
			}
		}
	}
	if j.Effects, err = in.effects(ctx, q, key, scan); err != nil {
		return j, err
	}
	// The worker log of a key with no trace is not searched: a bare id is
	// tried with every provider, and each search is a Logs Insights query.
	if in.cfg.Runs != nil && (j.Claim != nil || j.DeadLetter != nil || len(j.Effects) > 0 || len(j.Deliveries) > 0) {
		if err := in.runs(ctx, &j); err != nil {
			return j, err
		}
	}
	if in.cfg.Payloads != nil {
		o, err := in.cfg.Payloads.Stat(ctx, depth.QueueURL, key)
		switch {
		case err == nil:
			j.Payload = &o
		case !errors.Is(err, queue.ErrPayloadGone):
			return j, err
		}
	}
	in.judge(&j, q, dead, now)
	return j, nil
}

// runs reads the worker log lines of j's event, oldest first, and the
// ledger's count of failed attempts of each message they name. A log that
// cannot be read is a note: the stores still answer. It returns a wrapped
// error of the ledger.
func (in *Inspector) runs(ctx context.Context, j *Journey) error {
	runs, err := in.cfg.Runs.Runs(ctx, j.Tenant, j.Key)
	if err != nil {
		j.Notes = append(j.Notes, "the worker log could not be searched: "+err.Error())
		return nil
	}
	slices.SortStableFunc(runs, func(a, b Run) int { return a.Time.Compare(b.Time) })
	j.Runs = runs
	replayed := replays(runs)
	for _, r := range runs {
		if slices.ContainsFunc(j.Messages, func(m Message) bool { return m.ID == r.MessageID }) {
			continue
		}
		n, err := in.cfg.Ledger.Attempts(ctx, r.MessageID)
		if err != nil {
			return err
		}
		j.Messages = append(j.Messages, Message{ID: r.MessageID, FailedAttempts: n, Replay: replayed[r.MessageID]})
	}
	return nil
}

// effects reads the forward's and q.Effects' records, and with q.Scan
// every other effect record of key.
func (in *Inspector) effects(ctx context.Context, q Query, key string, scan func() ([]ledger.Record, error)) ([]Effect, error) {
	var recs []ledger.Record
	names := append([]string{worker.ForwardEffect}, q.Effects...)
	for _, name := range names {
		r, err := in.cfg.Ledger.Record(ctx, ledger.Key{Tenant: q.Tenant, Event: key, Effect: name})
		switch {
		case errors.Is(err, ledger.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			recs = append(recs, r)
		}
	}
	all, err := scan()
	if err != nil {
		return nil, err
	}
	for _, r := range all {
		if r.Key.Event == key && !slices.Contains(names, r.Key.Effect) {
			recs = append(recs, r)
		}
	}
	out := make([]Effect, len(recs))
	for i, r := range recs {
		out[i] = Effect{Name: r.Key.Effect, Status: r.Status, LeaseExpires: r.LeaseExpires, Expires: r.Expires, DeadMessage: r.DeadMessage,
			Reason: r.Reason, IdempotencyKey: r.Key.IdempotencyKey()}
	}
	return out, nil
}

// lookedUp says which effects were read by name: the forward, the
// destinations' and the custom ones of q.
func lookedUp(q Query) string {
	s := "the forward"
	if len(q.destinations) > 0 {
		s = "the event's record, its destinations' effects"
	}
	var custom []string
	for _, e := range q.Effects {
		if !slices.ContainsFunc(q.destinations, func(d Destination) bool { return d.Effect == e }) {
			custom = append(custom, e)
		}
	}
	if len(custom) > 0 {
		s += " and " + strings.Join(custom, ", ")
	}
	return s
}

// depth reads the attributes of the tenant's queue and DLQ.
func (in *Inspector) depth(ctx context.Context, tenantID string) (Depth, error) {
	if in.cfg.Deployment.QueueURLTemplate == "" {
		return Depth{}, errors.New("the deployment has no queue URL template")
	}
	d := Depth{QueueURL: queue.URL(in.cfg.Deployment.QueueURLTemplate, tenantID)}
	dlq, err := worker.DLQURL(d.QueueURL)
	if err != nil {
		return d, fmt.Errorf("queue URL template: %w", err)
	}
	src, err := in.attributes(ctx, tenantID, d.QueueURL)
	if err != nil {
		return d, err
	}
	dl, err := in.attributes(ctx, tenantID, dlq)
	if err != nil {
		return d, err
	}
	d.Visible = atoi(src[sqstypes.QueueAttributeNameApproximateNumberOfMessages])
	d.InFlight = atoi(src[sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible])
	d.Delayed = atoi(src[sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed])
	d.DeadLetters = atoi(dl[sqstypes.QueueAttributeNameApproximateNumberOfMessages])
	d.DeadLettersInFlight = atoi(dl[sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible])
	d.DeadLetterRetentionSeconds = atoi(dl[sqstypes.QueueAttributeNameMessageRetentionPeriod])
	return d, nil
}

func (in *Inspector) attributes(ctx context.Context, tenantID, url string) (map[sqstypes.QueueAttributeName]string, error) {
	out, err := in.cfg.Queues.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
			sqstypes.QueueAttributeNameMessageRetentionPeriod,
		},
	})
	var missing *sqstypes.QueueDoesNotExist
	if errors.As(err, &missing) {
		return nil, fmt.Errorf("%w %s: %s does not exist (is the tenant onboarded in this stack?)", ErrUnknownTenant, tenantID, url)
	}
	if err != nil {
		return nil, fmt.Errorf("attributes of %s: %w", url, err)
	}
	m := make(map[sqstypes.QueueAttributeName]string, len(out.Attributes))
	for k, v := range out.Attributes {
		m[sqstypes.QueueAttributeName(k)] = v
	}
	return m, nil
}

// deadLetters lists the tenant's DLQ when it holds messages, with a note
// when the listing could not see them all.
func (in *Inspector) deadLetters(ctx context.Context, d Depth) ([]replay.Item, []string, error) {
	if d.DeadLetters+d.DeadLettersInFlight == 0 {
		return nil, nil, nil
	}
	dlq, _ := worker.DLQURL(d.QueueURL) // checked by depth
	items, err := in.cfg.DeadLetters.List(ctx, dlq, replay.Filter{})
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	if n := d.DeadLetters + d.DeadLettersInFlight; len(items) < n {
		notes = append(notes, fmt.Sprintf("the DLQ listing saw %d of about %d dead letters (the head of each conversation, up to 10 per group; "+
			"hidden ones are being listed or redriven by someone else)", len(items), n))
	}
	return items, notes, nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// days formats a retention.
func days(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.String()
}

// stamp formats a time for the text output: UTC to the second.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
