package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookpack/hookpack/pkg/internal/attr"
	"github.com/hookpack/hookpack/pkg/internal/epoch"
)

// Attribute names. pk and expiration are the ledger table's key and TTL
// attribute (template.yaml's LedgerTable).
const (
	attrPK      = "pk"
	attrExp     = "expiration" // epoch seconds
	attrTAT     = "tat_us"     // theoretical arrival time, epoch µs
	attrFactor  = "factor_ppm" // effective-rate factor set by the last counted 429
	attrPenalty = "penalty_us" // end of the last 429's pause, epoch µs
	attrStrikes = "strikes"    // consecutive 429s without a Retry-After
)

// dynamoAPI is the subset of the DynamoDB client the limiter uses.
type dynamoAPI interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// DynamoDB is a rate limiter whose limits are items of the ledger table
// (partition key "pk" = "limit#<tenant>#<name>", TTL attribute
// "expiration"). Every write is one conditional UpdateItem decided on the
// item as last seen by this value (kept between invocations of a warm
// Lambda), so the happy path reads nothing; a write whose guess was stale
// fails, returns the current item (ReturnValuesOnConditionCheckFailure)
// and is decided again, at most maxAttempts times. Build one per Lambda
// container (in main) and share it; it is safe for concurrent use.
type DynamoDB struct {
	client dynamoAPI
	table  string
	opts   Options

	mu   sync.Mutex
	seen map[string]state
}

// maxSeen bounds the remembered items (a container serves few
// destinations; forgetting only costs a failed write).
const maxSeen = 10_000

// NewDynamoDB returns a rate limiter on the ledger table.
func NewDynamoDB(client dynamoAPI, table string, opts Options) *DynamoDB {
	return &DynamoDB{client: client, table: table, opts: opts.withDefaults(), seen: map[string]state{}}
}

// Reserve reserves up to n slots of k's limit l for times from now to
// now+maxWait, and returns when each may be used (non-decreasing); when
// fewer than n fit, Retry is when the next one will. Waiting for a slot is
// not an attempt: the caller sleeps until it, or holds the message back
// until Retry. It costs one conditional UpdateItem when at least one slot
// fits (1 WRU), more only when another invocation changed the item since
// this value last saw it (one more failed write each, at most maxAttempts
// calls in all); one strongly consistent GetItem (1 RRU) when the
// remembered item shows none fits, for the exact Retry; none when l is
// unlimited or n ≤ 0. The answer is always the one Memory gives on the
// stored item. It returns an error wrapping ErrInvalidKey, ErrContention, or
// the AWS error, with the key.
func (d *DynamoDB) Reserve(ctx context.Context, k Key, l Limit, n int, maxWait time.Duration, now time.Time) (Reservation, error) {
	if err := check(k); err != nil {
		return Reservation{}, err
	}
	if l.Unlimited() || n <= 0 {
		return unlimited(max(n, 0), now), nil
	}
	nowUs, wait := epoch.Micros(now), max(maxWait, 0).Microseconds()
	var p plan
	out, err := d.change(ctx, k.pk(), func(s state) *write {
		if p = planReserve(s, l, d.opts, n, nowUs, wait); p.k == 0 {
			return nil
		}
		return reserveWrite(s, p)
	})
	if err != nil {
		return Reservation{}, fmt.Errorf("reserve %s: %w", k, err)
	}
	base := p.base
	if out != nil && p.fromTAT { // the stored tat was somewhere in [lo, hi]
		base = decode(out.Attributes).tat - int64(p.k)*p.step
	}
	return p.reservation(base), nil
}

// Slow reports a 429 (or 503) from k's target with its Retry-After (0
// when absent), and returns when the pause ends: no slot reserved after
// this call, by any invocation, is earlier. Outside a pause it halves the
// effective rate (down to MinFactor) and pauses Retry-After (which starts
// the doubling over), or Penalty doubled per consecutive 429 without one
// (a strike), capped at MaxPenalty; during a pause it only extends it to a
// later Retry-After.
// Slots reserved before the call are not taken back. It costs one
// conditional UpdateItem, plus one per concurrent change (at most
// maxAttempts calls); one GetItem when the remembered item shows the pause
// covers the 429 already; none when l is unlimited. It returns an error wrapping ErrInvalidKey, ErrContention,
// or the AWS error, with the key.
func (d *DynamoDB) Slow(ctx context.Context, k Key, l Limit, retryAfter time.Duration, now time.Time) (time.Time, error) {
	if err := check(k); err != nil {
		return time.Time{}, err
	}
	if l.Unlimited() {
		return unlimitedPause(d.opts, retryAfter, now), nil
	}
	var end int64
	_, err := d.change(ctx, k.pk(), func(s state) *write {
		next, x, e, changed := planSlow(s, l, d.opts, retryAfter.Microseconds(), epoch.Micros(now))
		if end = next.penalty; !changed {
			return nil
		}
		return slowWrite(s, next, x, e)
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("slow %s: %w", k, err)
	}
	return epoch.FromMicros(end), nil
}

// change decides a write on the item pk as last seen and makes it: one
// conditional UpdateItem, again on the current item while the one decided
// on has changed, at most maxAttempts calls (then ErrContention). A
// decision of no write (nil) on a remembered item is checked on the stored
// one (a GetItem), so that the answer is the one the stored item gives.
// It returns the successful write's output, nil when none was needed.
func (d *DynamoDB) change(ctx context.Context, pk string, decide func(state) *write) (*dynamodb.UpdateItemOutput, error) {
	for calls, fresh := 0, false; ; calls++ {
		s := d.guess(pk)
		w := decide(s)
		switch {
		case w == nil && fresh:
			return nil, nil
		case calls == maxAttempts:
			return nil, ErrContention
		case w == nil:
			if err := d.refresh(ctx, pk); err != nil {
				return nil, err
			}
			fresh = true
			continue
		}
		out, err := d.client.UpdateItem(ctx, d.update(pk, w))
		if err = d.settle(ctx, pk, out, err); !errors.Is(err, errStale) {
			return out, err
		}
		fresh = true
	}
}

// State returns k's stored state at now (a strongly consistent read), or
// an error wrapping ErrNotFound, ErrInvalidKey or the AWS error.
func (d *DynamoDB) State(ctx context.Context, k Key, now time.Time) (State, error) {
	if err := check(k); err != nil {
		return State{}, err
	}
	s, err := d.read(ctx, k.pk())
	switch {
	case err != nil:
		return State{}, fmt.Errorf("state of %s: %w", k, err)
	case !s.exists:
		return State{}, fmt.Errorf("state of %s: %w", k, ErrNotFound)
	}
	return s.public(epoch.Micros(now), d.opts), nil
}

// write is a conditional update: the condition holds exactly on the
// stored states the write was decided for.
type write struct {
	cond, set string
	values    map[string]types.AttributeValue
}

// reserveWrite is p's write on s: on a tat in [lo, hi] (the schedule
// grows by k steps, whatever other reservations did meanwhile), or below
// now (the schedule restarts at now), with s's pause; or on no item. The
// pause's end stands for the factor too: every 429 that changes the factor
// moves the end later.
func reserveWrite(s state, p plan) *write {
	w := &write{values: map[string]types.AttributeValue{":exp": attr.N(p.expires)}}
	switch {
	case !s.exists:
		w.cond = "attribute_not_exists(#pk)"
		w.set = "#tat = :tat, #factor = :factor, #penalty = :penalty, #strikes = :strikes, #exp = :exp"
		fresh := p.after(s, p.base)
		nums(w.values, ":tat", fresh.tat, ":factor", fresh.factor, ":penalty", fresh.penalty, ":strikes", fresh.strikes)
	case p.fromTAT:
		w.cond = "#tat BETWEEN :lo AND :hi AND #penalty = :penalty"
		w.set = "#tat = #tat + :inc, #exp = :exp"
		nums(w.values, ":lo", p.lo, ":hi", p.hi, ":inc", int64(p.k)*p.step, ":penalty", s.penalty)
	default:
		w.cond = "#tat < :now AND #penalty = :penalty"
		w.set = "#tat = :tat, #exp = :exp"
		nums(w.values, ":now", p.now, ":tat", p.after(s, p.base).tat, ":penalty", s.penalty)
	}
	return w
}

// slowWrite is the write of next, decided on s by planSlow with the floors
// x of the tat and e of the TTL: on s's pause (which stands for the factor
// and the strikes too: every 429 that changes them moves its end later),
// and on which side of its floor each of the tat and the TTL is, so that
// reservations meanwhile rarely void it.
func slowWrite(s, next state, x, e int64) *write {
	w := &write{
		set:    "#factor = :factor, #penalty = :penalty, #strikes = :strikes",
		values: map[string]types.AttributeValue{},
	}
	nums(w.values, ":factor", next.factor, ":penalty", next.penalty, ":strikes", next.strikes, ":x", x, ":e", e)
	if !s.exists {
		w.cond, w.set = "attribute_not_exists(#pk)", w.set+", #tat = :x, #exp = :e"
		return w
	}
	w.cond = "#penalty = :openalty"
	nums(w.values, ":openalty", s.penalty)
	if s.tat < x {
		w.cond, w.set = w.cond+" AND #tat < :x", w.set+", #tat = :x"
	} else {
		w.cond += " AND #tat >= :x"
	}
	if s.expires < e {
		w.cond, w.set = w.cond+" AND #exp < :e", w.set+", #exp = :e"
	} else {
		w.cond += " AND #exp >= :e"
	}
	return w
}

func nums(m map[string]types.AttributeValue, kv ...any) {
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = attr.N(kv[i+1].(int64))
	}
}

// update returns w as an UpdateItem on pk that returns the item: the new
// one to remember, or the current one when the condition fails.
func (d *DynamoDB) update(pk string, w *write) *dynamodb.UpdateItemInput {
	names := map[string]string{"#tat": attrTAT, "#penalty": attrPenalty, "#exp": attrExp}
	if w.values[":factor"] != nil {
		names["#factor"], names["#strikes"] = attrFactor, attrStrikes
	}
	if w.cond == "attribute_not_exists(#pk)" {
		names["#pk"] = attrPK
	}
	return &dynamodb.UpdateItemInput{
		TableName:                           aws.String(d.table),
		Key:                                 map[string]types.AttributeValue{attrPK: attr.S(pk)},
		ConditionExpression:                 aws.String(w.cond),
		UpdateExpression:                    aws.String("SET " + w.set),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           w.values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// errStale: the write was decided on a state the item no longer has.
var errStale = errors.New("stale guess")

// settle remembers what an UpdateItem on pk returned: the new item, or on
// a failed condition the current one (read when the response lacks it),
// then reported as errStale.
func (d *DynamoDB) settle(ctx context.Context, pk string, out *dynamodb.UpdateItemOutput, err error) error {
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		d.remember(pk, decode(out.Attributes))
		return nil
	case !errors.As(err, &ccf):
		return err
	case len(ccf.Item) > 0:
		d.remember(pk, decode(ccf.Item))
		return errStale
	}
	// No item came back: there is none, or the endpoint does not return
	// it. Read it (1 RRU) rather than guess absent forever.
	if err := d.refresh(ctx, pk); err != nil {
		return err
	}
	return errStale
}

// refresh reads pk's item and remembers it.
func (d *DynamoDB) refresh(ctx context.Context, pk string) error {
	s, err := d.read(ctx, pk)
	if err == nil {
		d.remember(pk, s)
	}
	return err
}

// read returns pk's stored state (strongly consistent).
func (d *DynamoDB) read(ctx context.Context, pk string) (state, error) {
	out, err := d.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(d.table),
		Key:            map[string]types.AttributeValue{attrPK: attr.S(pk)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return state{}, err
	}
	return decode(out.Item), nil
}

func (d *DynamoDB) guess(pk string) state {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.seen[pk]; ok {
		return s
	}
	return absent
}

func (d *DynamoDB) remember(pk string, s state) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.seen) >= maxSeen {
		clear(d.seen)
	}
	d.seen[pk] = s
}

// decode returns the state an item holds (absent for none).
func decode(item map[string]types.AttributeValue) state {
	if len(item) == 0 {
		return absent
	}
	return state{
		exists:  true,
		tat:     attr.ToInt(item[attrTAT]),
		factor:  attr.ToInt(item[attrFactor]),
		penalty: attr.ToInt(item[attrPenalty]),
		strikes: attr.ToInt(item[attrStrikes]),
		expires: attr.ToInt(item[attrExp]),
	}
}
