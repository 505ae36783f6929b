package chaos

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/local/capture"
)

// Kind names one fault the run injects.
type Kind string

// The faults, in the order the report lists them.
const (
	AWSError        Kind = "AWS 500 error (request never applied)"
	AWSTimeout      Kind = "AWS timeout (request never arrives)"
	AWSThrottle     Kind = "AWS throttling error"
	AWSLostResponse Kind = "AWS lost response (applied, answer dropped)"
	AWSLateTimeout  Kind = "AWS timeout after the request was applied"

	IngestDiesBeforeSend Kind = "ingest dies between read and send"
	IngestDiesAfterSend  Kind = "ingest dies between send and record"
	WorkerDiesMidEffect  Kind = "worker dies holding the effect's lease"
	WorkerDiesBeforeAck  Kind = "worker dies after the effect, before the ack"
	VisibilityExpires    Kind = "visibility expires while an effect runs"
	EffectHangs          Kind = "custom effect hangs past the function timeout, ignoring its context"
	DeletionLost         Kind = "event source mapping's deletion lost"
	InvokedTwice         Kind = "same batch invoked twice, concurrently"
	RedrivenAfterCrash   Kind = "dead letter redriven by a move task after crashes into the DLQ"
	TargetOutage         Kind = "target down longer than the retry horizon (request refused)"

	Target5xx          Kind = "target answers 5xx"
	Target429          Kind = "target answers 429 with Retry-After"
	TargetSlow         Kind = "target answers slowly"
	TargetReset        Kind = "target resets the connection"
	TargetLostResponse Kind = "target applies, then resets the connection"
	Poison             Kind = "poison event (target answers 422)"
)

// Kinds lists every fault kind.
var Kinds = []Kind{
	AWSError, AWSTimeout, AWSThrottle, AWSLostResponse, AWSLateTimeout,
	IngestDiesBeforeSend, IngestDiesAfterSend, WorkerDiesMidEffect, WorkerDiesBeforeAck, VisibilityExpires,
	EffectHangs, DeletionLost, InvokedTwice, RedrivenAfterCrash, TargetOutage,
	Target5xx, Target429, TargetSlow, TargetReset, TargetLostResponse, Poison,
}

// Rates are the probabilities of each fault: AWS faults per AWS request
// attempt, process deaths per ingest send or worker ledger write, target
// faults per forwarded request, poison per event; EffectHangs per custom
// effect, DeletionLost and InvokedTwice per batch, RedrivenAfterCrash per
// event of the redrive tenant (its effects crash until SQS dead-letters it).
// TargetOutage has no rate: the outage tenant's target is down for the
// run's first outage period.
type Rates map[Kind]float64

// DefaultRates inject every kind often enough that a short run sees each.
func DefaultRates() Rates {
	return Rates{
		AWSError: 0.01, AWSTimeout: 0.004, AWSThrottle: 0.01, AWSLostResponse: 0.01, AWSLateTimeout: 0.004,
		IngestDiesBeforeSend: 0.02, IngestDiesAfterSend: 0.02,
		WorkerDiesMidEffect: 0.015, WorkerDiesBeforeAck: 0.015, VisibilityExpires: 0.01,
		EffectHangs: 0.005, DeletionLost: 0.01, InvokedTwice: 0.01, RedrivenAfterCrash: 0.02,
		Target5xx: 0.04, Target429: 0.03, TargetSlow: 0.03, TargetReset: 0.02, TargetLostResponse: 0.02,
		Poison: 0.01,
	}
}

// dice draws the run's fault decisions from its seed. A decision depends
// only on the seed, a stream name (what is being decided, e.g. "target|<key>")
// and how often that stream was drawn before, never on which goroutine asks
// first: a replay with the same seed makes the same decision for the same
// event and attempt.
type dice struct {
	seed uint64
	mu   sync.Mutex
	n    map[string]uint64
}

func newDice(seed uint64) *dice { return &dice{seed: seed, n: map[string]uint64{}} }

// roll returns the next number in [0, 1) of stream.
func (d *dice) roll(stream string) float64 {
	d.mu.Lock()
	n := d.n[stream]
	d.n[stream] = n + 1
	d.mu.Unlock()
	return unit(d.seed, stream, n)
}

// unit hashes (seed, stream, n) to [0, 1): FNV-1a, then splitmix64's
// finaliser to spread FNV's weak low bits.
func unit(seed uint64, stream string, n uint64) float64 {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], seed)
	binary.LittleEndian.PutUint64(b[8:], n)
	h.Write(b[:8])
	h.Write([]byte(stream))
	h.Write(b[8:])
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// pick returns the kind among kinds whose rate interval holds r, or "".
func (r Rates) pick(x float64, kinds ...Kind) Kind {
	for _, k := range kinds {
		if x < r[k] {
			return k
		}
		x -= r[k]
	}
	return ""
}

// Faults decides and counts the run's faults.
type Faults struct {
	rates Rates
	dice  *dice
	hang  time.Duration

	mu        sync.Mutex
	counts    map[Kind]int
	completed map[string]time.Time // Idempotency-Key → when the pack recorded the effect done
	// ledgerDone: Idempotency-Keys whose completion the ledger stored (the
	// rest were done by their message's ack only).
	ledgerDone map[string]bool
	first      map[string]string // event key → the id of the first message that carried it
}

func newFaults(seed uint64, rates Rates, hang time.Duration) *Faults {
	return &Faults{rates: rates, dice: newDice(seed), hang: hang, counts: map[Kind]int{}, completed: map[string]time.Time{}, ledgerDone: map[string]bool{}, first: map[string]string{}}
}

// chained reports whether the effects of an event crash until SQS moves
// its message to the DLQ (RedrivenAfterCrash): a share of the redrive
// tenant's events, decided per event.
func (f *Faults) chained(tenantID, eventID string) bool {
	return tenantID == redriveTenant && unit(f.dice.seed, "chain|"+eventID, 0) < f.rates[RedrivenAfterCrash]
}

// original reports whether messageID is the first message seen carrying
// the event key: a redriven copy has another id, and its effects no longer
// crash.
func (f *Faults) original(eventKey, messageID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id, ok := f.first[eventKey]; ok {
		return id == messageID
	}
	f.first[eventKey] = messageID
	return true
}

// add counts n injections of k.
func (f *Faults) add(k Kind, n int) {
	f.mu.Lock()
	f.counts[k] += n
	f.mu.Unlock()
}

func (f *Faults) count(k Kind) {
	f.mu.Lock()
	f.counts[k]++
	f.mu.Unlock()
}

// Counts returns how often each kind was injected.
func (f *Faults) Counts() map[Kind]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.counts)
}

// completedAt returns when the pack recorded the effect with this
// Idempotency-Key done: its ledger completion stored, or its message acked.
func (f *Faults) completedAt(key string) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.completed[key]
	return t, ok
}

// byLedger reports whether the ledger stored the completion of the effect
// with this Idempotency-Key (not only an ack of its message).
func (f *Faults) byLedger(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ledgerDone[key]
}

// recordCompleted notes that DynamoDB stored the completion of the effect
// whose ledger item is pk ("fx|<tenant>|<effect>|<event key>").
func (f *Faults) recordCompleted(pk string) {
	parts := strings.SplitN(pk, "|", 4)
	if len(parts) != 4 || parts[0] != "fx" {
		return
	}
	k := ledger.Key{Tenant: parts[1], Effect: parts[2], Event: parts[3]}
	f.recordDone(k)
	f.mu.Lock()
	f.ledgerDone[k.IdempotencyKey()] = true
	f.mu.Unlock()
}

// recordDone notes that the pack recorded effect k as done: its ledger
// completion was stored, or its message was acked (deleted).
func (f *Faults) recordDone(k ledger.Key) {
	key := k.IdempotencyKey()
	f.mu.Lock()
	if _, ok := f.completed[key]; !ok {
		f.completed[key] = time.Now()
	}
	f.mu.Unlock()
}

// invocation is one run of a Lambda function (an ingest request or a worker
// batch). Killing it models the instance dying: its context is cancelled,
// every AWS call it still makes fails without reaching the emulators, and
// its result is discarded (API Gateway answers 500; the event source
// mapping deletes nothing, so the batch returns after its visibility
// timeout). What it wrote before stays: an event it sent is queued, its
// key unrecorded unless the completion landed.
type invocation struct {
	cancel context.CancelFunc
	dead   atomic.Bool
	// faulted: the transport injected a fault into one of its requests.
	faulted atomic.Bool
	// expire, set for worker invocations, makes the batch visible again at
	// once (the VisibilityExpires fault).
	expire func()
}

type invocationKey struct{}

// newInvocation returns ctx carrying a new invocation.
func newInvocation(ctx context.Context) (context.Context, *invocation) {
	ctx, cancel := context.WithCancel(ctx)
	inv := &invocation{cancel: cancel}
	return context.WithValue(ctx, invocationKey{}, inv), inv
}

func invocationOf(ctx context.Context) *invocation {
	inv, _ := ctx.Value(invocationKey{}).(*invocation)
	return inv
}

func (i *invocation) kill() {
	i.dead.Store(true)
	i.cancel()
}

// errDied is what a dead invocation's calls fail with.
var errDied = errors.New("chaos: the function instance died")

// Roles of the AWS clients the transport wraps.
const (
	roleIngest = "ingest"
	roleWorker = "worker"
	roleESM    = "esm"
)

// transport injects faults into the AWS requests of one role, between the
// SDK (which retries as it would in AWS) and the emulators.
type transport struct {
	base        http.RoundTripper
	f           *Faults
	role        string
	ledgerTable string
}

// timeoutError is a network timeout, as the SDK sees a hung connection.
type timeoutError struct{}

func (timeoutError) Error() string   { return "chaos: i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func connReset(op string) error {
	return &net.OpError{Op: op, Net: "tcp", Err: syscall.ECONNRESET}
}

// awsCall is what the transport reads from one request.
type awsCall struct {
	op       string // "DynamoDB_20120810.PutItem", "AmazonSQS.SendMessage", …
	table    string
	key      string // the item's partition key, or the message's dedup id
	complete bool   // a ledger completion
	claim    bool   // a ledger claim
}

func parseCall(r *http.Request, body []byte) awsCall {
	c := awsCall{op: r.Header.Get("X-Amz-Target")}
	if c.op == "" { // S3 (REST): payloads too large for SQS
		return awsCall{op: "S3." + r.Method, key: r.URL.Path}
	}
	var in struct {
		TableName              string                                `json:"TableName"`
		Key                    map[string]map[string]json.RawMessage `json:"Key"`
		Item                   map[string]map[string]json.RawMessage `json:"Item"`
		MessageDeduplicationID string                                `json:"MessageDeduplicationId"`
		QueueURL               string                                `json:"QueueUrl"`
		UpdateExpression       string                                `json:"UpdateExpression"`
		Entries                []struct {
			MessageDeduplicationID string `json:"MessageDeduplicationId"`
		} `json:"Entries"`
	}
	if json.Unmarshal(body, &in) != nil {
		return c
	}
	c.table = in.TableName
	item := in.Key
	if item == nil {
		item = in.Item
	}
	for _, name := range []string{"pk", "id"} {
		if v, ok := item[name]["S"]; ok {
			_ = json.Unmarshal(v, &c.key)
		}
	}
	if c.key == "" {
		c.key = in.MessageDeduplicationID
	}
	for _, e := range in.Entries {
		c.key += e.MessageDeduplicationID + " "
	}
	if c.key == "" {
		c.key = in.QueueURL
	}
	c.complete = strings.Contains(in.UpdateExpression, ":completed")
	c.claim = c.op == "DynamoDB_20120810.UpdateItem" && strings.Contains(in.UpdateExpression, "#status = :inprogress")
	return c
}

// RoundTrip decides this request's fault, if any, and applies it.
func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	inv := invocationOf(ctx)
	if inv != nil && inv.dead.Load() {
		return nil, errDied
	}
	body, err := capture.Body(r)
	if err != nil {
		return nil, err
	}
	c := parseCall(r, body)
	isLedger := c.table == t.ledgerTable && t.ledgerTable != ""

	// Deaths of the function instance, at the points the pack must survive.
	var death Kind
	switch {
	case inv != nil && t.role == roleIngest && (c.op == "AmazonSQS.SendMessage" || c.op == "AmazonSQS.SendMessageBatch"):
		death = t.f.rates.pick(t.f.dice.roll("ingest-death|"+c.key), IngestDiesBeforeSend, IngestDiesAfterSend)
	case inv != nil && t.role == roleWorker && isLedger && strings.HasPrefix(c.key, "fx|") && c.claim:
		death = t.f.rates.pick(t.f.dice.roll("worker-death|"+c.key), WorkerDiesMidEffect)
	}
	if death == IngestDiesBeforeSend {
		t.f.count(death)
		inv.kill()
		return nil, errDied
	}

	fault := t.f.rates.pick(t.f.dice.roll("aws|"+t.role+"|"+c.op+"|"+c.key), AWSError, AWSTimeout, AWSThrottle, AWSLostResponse, AWSLateTimeout)
	if death != "" {
		fault = "" // one fault per request
	}
	if inv != nil && (death != "" || fault != "") {
		inv.faulted.Store(true)
	}
	switch fault {
	case AWSError:
		t.f.count(fault)
		return errorResponse(r, http.StatusInternalServerError, "InternalServerError"), nil
	case AWSThrottle:
		t.f.count(fault)
		return errorResponse(r, http.StatusBadRequest, "ThrottlingException"), nil
	case AWSTimeout:
		t.f.count(fault)
		return nil, t.hangUp(ctx)
	}

	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	if isLedger && c.complete && resp.StatusCode == http.StatusOK {
		t.f.recordCompleted(c.key)
	}
	if death != "" {
		t.f.count(death)
		drop(resp)
		inv.kill()
		return nil, errDied
	}
	if inv != nil && inv.expire != nil && isLedger && strings.HasPrefix(c.key, "fx|") && c.claim && resp.StatusCode == http.StatusOK {
		// The effect's lease is held: make the batch visible again and let
		// the effect run on long enough for another poller to take it.
		if t.f.dice.roll("expire|"+c.key) < t.f.rates[VisibilityExpires] {
			t.f.count(VisibilityExpires)
			inv.faulted.Store(true)
			inv.expire()
			sleep(ctx, 2*t.f.hang)
		}
	}
	switch fault {
	case AWSLostResponse:
		t.f.count(fault)
		drop(resp)
		return nil, connReset("read")
	case AWSLateTimeout:
		t.f.count(fault)
		drop(resp)
		return nil, t.hangUp(ctx)
	}
	return resp, nil
}

// hangUp waits like a hung connection, then times out.
func (t *transport) hangUp(ctx context.Context) error {
	sleep(ctx, t.f.hang)
	if err := ctx.Err(); err != nil {
		return err
	}
	return timeoutError{}
}

func drop(resp *http.Response) {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// errorResponse is an AWS JSON-protocol error (DynamoDB and SQS both speak
// it here), as the service would answer.
func errorResponse(r *http.Request, status int, code string) *http.Response {
	body := fmt.Sprintf(`{"__type":"com.amazonaws.chaos#%s","message":"injected by the chaos run"}`, code)
	h := http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amzn-Requestid": {"chaos"}}
	if strings.HasPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.") {
		h.Set("X-Amzn-Query-Error", code+";Sender")
	}
	return &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r,
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// sortedKinds returns the kinds of m in Kinds order.
func sortedKinds(m map[Kind]int) []Kind {
	var out []Kind
	for _, k := range Kinds {
		if _, ok := m[k]; ok {
			out = append(out, k)
		}
	}
	return out
}
