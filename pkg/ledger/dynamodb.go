package ledger

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookpack/hookpack/pkg/internal/attr"
	"github.com/hookpack/hookpack/pkg/internal/epoch"
	"github.com/hookpack/hookpack/pkg/internal/lease"
)

// Attribute names.
const (
	attrPK          = "pk"
	attrExp         = "expiration"       // epoch seconds; the table's TTL attribute
	attrStatus      = "status"           // effect status
	attrToken       = "lease_token"      // effect lease token
	attrLeaseMs     = "lease_expiration" // epoch milliseconds
	attrFence       = "fence"            // last writer's Fence.Token
	attrSeries      = "fence_series"     // its conversation (Fence.series)
	attrOrigin      = "origin"           // the claimer's Fence.Origin
	attrReason      = "reason"           // why an effect last failed
	attrByReplay    = "by_replay"        // claimed by a replay (Fence.Replay)
	attrDeadMsg     = "dead_message"     // the message a DEAD record's event was dead-lettered from
	attrDeadSent    = "dead_sent"        // the DEAD record's dead letter is known sent (Buried)
	attrDeadFrom    = "dead_from"        // string set: every message the event was dead-lettered from
	attrVersion     = "version"          // entity version
	attrData        = "data"             // entity state
	attrUpdatedMs   = "updated_at"       // epoch milliseconds
	attrAttempts    = "attempts"         // failed attempts at a queue message
	attrLastReceive = "last_receive"     // the last receive counted as an attempt
)

// dynamoAPI is the subset of the DynamoDB client the store uses.
type dynamoAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// DynamoDB is a ledger in a DynamoDB table whose partition key is the
// string attribute "pk" and whose TTL attribute is "expiration" (see
// CreateTable). Every call is one single-item request; none is a
// transaction.
type DynamoDB struct {
	client dynamoAPI
	table  string
	opts   Options
}

// NewDynamoDB returns a ledger on table.
func NewDynamoDB(client dynamoAPI, table string, opts Options) *DynamoDB {
	return &DynamoDB{client: client, table: table, opts: opts.WithDefaults(DefaultRetention, DefaultLease)}
}

// fenceOK is the condition that an item was last written under the
// caller's token or an older one (or under another series, or never).
const fenceOK = "(attribute_not_exists(#series) OR #series <> :series OR #fence <= :fence)"

// Claim conditions: the record is absent or past its retention, or FAILED,
// or INPROGRESS out of lease and not done (see done: claimed for an earlier
// message of the conversation, or in another queue incarnation), or DEAD
// and revived by the claimer (see revives); and not written under a newer
// token.
const (
	claimOpen = "attribute_not_exists(#pk) OR #exp < :now OR ((#status = :failed OR "
	takeOver  = "(#status = :inprogress AND #lexp < :nowms AND (#series <> :series OR " +
		"NOT (#fence < :first AND (attribute_not_exists(#origin) OR #origin <> :origin OR attribute_exists(#byreplay)))))"
	replayTakeOver = "(#status = :inprogress AND #lexp < :nowms AND (#series <> :series OR " +
		"NOT (#fence < :first AND attribute_exists(#origin) AND (#origin <> :origin OR attribute_exists(#byreplay)))))"
	immediateTakeOver = "(#status = :inprogress AND #lexp < :nowms)"
	reviveReplay      = "(#status = :dead AND #deadmsg <> :msgid AND NOT contains(#deadfrom, :msgid))"
	reviveByHand      = "(#status = :dead AND #deadmsg <> :msgid AND NOT contains(#deadfrom, :msgid) AND #origin = :origin)"
)

// claimCondition returns the condition of f's claim.
func claimCondition(f Fence) string {
	take := takeOver
	switch {
	case f.Immediate:
		take = immediateTakeOver
	case f.Replay:
		take = replayTakeOver
	}
	switch {
	case f.Replay:
		return claimOpen + take + " OR " + reviveReplay + ") AND " + fenceOK + ")"
	case f.Origin == "":
		return claimOpen + take + ") AND " + fenceOK + ")"
	default:
		return claimOpen + take + " OR " + reviveByHand + ") AND " + fenceOK + ")"
	}
}

// Claim takes the effect with a fresh lease of the given duration
// (Options.Lease when ≤ 0), fenced by f: one conditional UpdateItem, the
// only write of an effect whose message succeeds (see Complete). A record
// past its retention counts as absent. It returns ErrFenced when the record
// was written under a newer token of f's conversation, a *ConflictError
// wrapping ErrCompleted when the effect completed (or was claimed for an
// earlier message of the conversation, which SQS has since deleted) or
// ErrInFlight when it is held, or a wrapped AWS error. A failed claim costs
// the same one request (ReturnValuesOnConditionCheckFailure=ALL_OLD returns
// the record in the way).
//
// The write keeps, on the record, what it replaced (the prev_ attributes,
// copied by the same UpdateItem): a retry of a claim whose first try landed
// and whose answer was lost finds its own lease token and answers from
// them, as the first try would have (Lease.Repeat, Lease.Taken, the replay
// mark).
func (d *DynamoDB) Claim(ctx context.Context, f Fence, k Key, dur time.Duration) (Lease, error) {
	if err := checkClaim(f, k); err != nil {
		return Lease{}, err
	}
	now := d.opts.Now()
	l := Lease{Key: k, Fence: f, Token: lease.Token(), Expires: now.Add(lease.OrDefault(dur, d.opts.Lease))}
	cond := claimCondition(f)
	names := map[string]string{
		"#pk": attrPK, "#exp": attrExp, "#status": attrStatus, "#lexp": attrLeaseMs, "#token": attrToken,
		"#series": attrSeries, "#fence": attrFence, "#origin": attrOrigin, "#byreplay": attrByReplay,
		"#deadmsg": attrDeadMsg, "#deadfrom": attrDeadFrom, "#reason": attrReason, "#sent": attrDeadSent,
	}
	values := map[string]types.AttributeValue{
		":now":        attr.N(epoch.Seconds(now)),
		":nowms":      attr.N(epoch.Millis(now)),
		":failed":     attr.S(string(StatusFailed)),
		":inprogress": attr.S(string(StatusInProgress)),
		":series":     attr.S(f.series()),
		":fence":      attr.S(f.Token()),
		":first":      attr.S(f.first()),
		":origin":     attr.S(f.Origin),
		":dead":       attr.S(string(StatusDead)),
		":msgid":      attr.S(f.MessageID),
		":exp":        attr.N(epoch.Seconds(now.Add(d.opts.Retention))),
		":token":      attr.S(l.Token),
		":lexp":       attr.N(epoch.Millis(l.Expires)),
		":true":       &types.AttributeValueMemberBOOL{Value: true},
	}
	// The claim writes a fresh record: what an earlier one held beside it
	// goes, but for the messages the event was dead-lettered from
	// (dead_from), which stay.
	set := []string{"#exp = :exp", "#status = :inprogress", "#token = :token", "#lexp = :lexp", "#fence = :fence", "#series = :series"}
	remove := []string{"#reason", "#deadmsg", "#sent"}
	if f.Origin != "" {
		set = append(set, "#origin = :origin")
	} else {
		remove = append(remove, "#origin")
	}
	if f.Replay {
		set = append(set, "#byreplay = :true")
	} else {
		remove = append(remove, "#byreplay")
	}
	for _, p := range prevAttrs {
		names["#"+p.stored], names["#"+p.stored+"_of"] = p.stored, p.attr
		values[":"+p.stored+"_none"] = p.none
		set = append(set, fmt.Sprintf("#%s = if_not_exists(#%s_of, :%s_none)", p.stored, p.stored, p.stored))
	}
	update := "SET " + strings.Join(set, ", ") + " REMOVE " + strings.Join(remove, ", ")
	prune(update+" "+cond, names, values)
	out, err := d.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(d.table),
		Key:                 d.key(effectPK(k)),
		UpdateExpression:    aws.String(update),
		ConditionExpression: aws.String(cond),
		// The record a claim replaces comes back at no cost: an INPROGRESS
		// one tells the worker an earlier run was interrupted.
		ReturnValues:                        types.ReturnValueAllOld,
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	old, err := d.rejected(ctx, effectPK(k), err)
	switch {
	case err != nil:
		return Lease{}, fmt.Errorf("claim %s: %w", k, err)
	case old == nil:
		return d.claimed(ctx, l, now, out.Attributes)
	case attr.ToString(old[attrToken]) == l.Token:
		// An earlier try of this request landed and its answer was lost
		// (the SDK retried it): the claim is ours, and the record holds
		// what it replaced.
		return d.claimed(ctx, l, now, replaced(old))
	case newer(attr.ToString(old[attrSeries]), attr.ToString(old[attrFence]), f):
		return Lease{}, &ConflictError{Record: record(k, old), err: ErrFenced}
	case attr.ToString(old[attrStatus]) == string(StatusCompleted) && old[attrDeadMsg] != nil && revives(attr.ToString(old[attrDeadMsg]), setAttr(old[attrDeadFrom]), attr.ToString(old[attrOrigin]), f):
		return Lease{}, d.revive(ctx, f, k, old)
	case attr.ToString(old[attrStatus]) == string(StatusCompleted) && old[attrDeadMsg] == nil && adopts(attr.ToString(old[attrSeries]), f, k):
		return Lease{}, d.adopt(ctx, f, k, old)
	default:
		return Lease{}, conflict(record(k, old), done(attr.ToString(old[attrSeries]), attr.ToString(old[attrFence]), attr.ToString(old[attrOrigin]), old[attrByReplay] != nil, f))
	}
}

// prevAttrs are the attributes a claim copies from the record it replaces
// (stored under their prev_ names; none when there was no record): enough to
// answer a retry of the claim as its first try would have (see replaced).
// They add about 215 bytes to an effect record.
var prevAttrs = []struct {
	stored, attr string
	none         types.AttributeValue
}{
	{"prev_status", attrStatus, attr.S("")},
	{"prev_fence", attrFence, attr.S("")},
	{"prev_series", attrSeries, attr.S("")},
	{"prev_origin", attrOrigin, attr.S("")},
	{"prev_by_replay", attrByReplay, &types.AttributeValueMemberBOOL{Value: false}},
	{"prev_expiration", attrExp, attr.N(0)},
	{"prev_lease_expiration", attrLeaseMs, attr.N(0)},
}

// replaced returns the record a claim replaced, as its write's ALL_OLD
// returned it, from what the claim stored on item (prevAttrs); nil when
// there was none.
func replaced(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	if attr.ToInt(item["prev_expiration"]) == 0 {
		return nil
	}
	prev := map[string]types.AttributeValue{}
	for _, p := range prevAttrs {
		switch v := item[p.stored].(type) {
		case *types.AttributeValueMemberS:
			if v.Value != "" {
				prev[p.attr] = v
			}
		case *types.AttributeValueMemberN:
			if attr.ToInt(v) != 0 {
				prev[p.attr] = v
			}
		case *types.AttributeValueMemberBOOL:
			if v.Value {
				prev[p.attr] = v
			}
		}
	}
	if v, ok := item[attrDeadFrom]; ok { // kept by the claim
		prev[attrDeadFrom] = v
	}
	return prev
}

// claimed completes l, the claim made at now that replaced the record prev
// (nil: none): the answer of Claim, the same for the first try and a retry.
// A copy of the dead letter's body re-sent by hand revived the event, or
// replaced a record another message of its origin wrote (see resent), or
// this is its retry: its claim is marked a replay's, as scripts/replay's
// are (see done), so that another copy counts it done once it was deleted
// (one UpdateItem more, on that path only).
func (d *DynamoDB) claimed(ctx context.Context, l Lease, now time.Time, prev map[string]types.AttributeValue) (Lease, error) {
	live := len(prev) > 0 && attr.ToInt(prev[attrExp]) >= epoch.Seconds(now)
	if d.marks(l.Fence, now, prev) {
		if err := d.markReplay(ctx, l); err != nil {
			return Lease{}, fmt.Errorf("claim %s: %w", l.Key, err)
		}
	}
	if live {
		l.Repeat = true
		if attr.ToString(prev[attrStatus]) == string(StatusInProgress) {
			r := record(l.Key, prev)
			l.Taken = &r
		}
	}
	return l, nil
}

// revive makes a replay of an event dead-lettered after effect k completed
// its own: the record stays completed (the replay skips it), loses its dead
// mark and takes the replay's token, so that the replay's own dead letter
// marks it again. One UpdateItem, on a replay's path only. It returns the
// *ConflictError wrapping ErrCompleted the claim reports, or a wrapped AWS
// error (a concurrent change: the next attempt decides).
func (d *DynamoDB) revive(ctx context.Context, f Fence, k Key, old map[string]types.AttributeValue) error {
	_, err := d.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(d.table), Key: d.key(effectPK(k)),
		UpdateExpression:    aws.String("SET #fence = :fence, #series = :series, #byreplay = :true REMOVE #deadmsg, #sent"),
		ConditionExpression: aws.String("#status = :completed AND #deadmsg = :deadmsg AND NOT contains(#deadfrom, :msgid)"),
		ExpressionAttributeNames: map[string]string{"#fence": attrFence, "#series": attrSeries, "#byreplay": attrByReplay,
			"#deadmsg": attrDeadMsg, "#sent": attrDeadSent, "#status": attrStatus, "#deadfrom": attrDeadFrom},
		ExpressionAttributeValues: map[string]types.AttributeValue{":fence": attr.S(f.Token()), ":series": attr.S(f.series()),
			":true": &types.AttributeValueMemberBOOL{Value: true}, ":completed": attr.S(string(StatusCompleted)), ":deadmsg": old[attrDeadMsg],
			":msgid": attr.S(f.MessageID)},
	})
	if err != nil {
		return fmt.Errorf("claim %s: revive: %w", k, err)
	}
	r := record(k, old)
	r.DeadMessage, r.DeadSent, r.Fence, r.Series = "", false, f.Token(), f.series()
	return conflict(r, true)
}

// adopt takes the COMPLETED event record k, written in another series,
// into f's (see adopts): it stays completed and takes f's token. One
// UpdateItem, on the path of a claim after the queue was created again
// only. It returns the *ConflictError wrapping ErrCompleted the claim
// reports, or a wrapped AWS error (a concurrent change: the next attempt
// decides).
func (d *DynamoDB) adopt(ctx context.Context, f Fence, k Key, old map[string]types.AttributeValue) error {
	if old[attrFence] == nil || old[attrSeries] == nil {
		return conflict(record(k, old), true) // written by no claim: nothing to compare
	}
	_, err := d.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(d.table), Key: d.key(effectPK(k)),
		UpdateExpression:    aws.String("SET #fence = :fence, #series = :series"),
		ConditionExpression: aws.String("#status = :completed AND attribute_not_exists(#deadmsg) AND #fence = :was AND #series = :wasseries"),
		ExpressionAttributeNames: map[string]string{"#fence": attrFence, "#series": attrSeries, "#status": attrStatus,
			"#deadmsg": attrDeadMsg},
		ExpressionAttributeValues: map[string]types.AttributeValue{":fence": attr.S(f.Token()), ":series": attr.S(f.series()),
			":completed": attr.S(string(StatusCompleted)), ":was": old[attrFence], ":wasseries": old[attrSeries]},
	})
	if err != nil {
		return fmt.Errorf("claim %s: adopt: %w", k, err)
	}
	r := record(k, old)
	r.Fence, r.Series = f.Token(), f.series()
	return conflict(r, true)
}

// marks reports whether f's claim at now, replacing the record prev (nil:
// none), is a replay's (see claimed). A record of f's own message that is
// not marked may be a claim that landed and reported an error (the answers
// of all its tries were lost, or the mark's write failed): it is judged by
// what that claim replaced, which it keeps (the prev_ attributes; one level
// deep).
func (d *DynamoDB) marks(f Fence, now time.Time, prev map[string]types.AttributeValue) bool {
	fence, series := attr.ToString(prev[attrFence]), attr.ToString(prev[attrSeries])
	switch {
	case f.Replay:
		return false
	case attr.ToString(prev[attrStatus]) == string(StatusDead), prev[attrByReplay] != nil && f.wrote(series, fence):
		return true
	case len(prev) > 0 && attr.ToInt(prev[attrExp]) >= epoch.Seconds(now) && resent(series, fence, attr.ToString(prev[attrOrigin]), f):
		return true
	case f.wrote(series, fence):
		// The earlier claim was made when its record's retention began.
		earlier := epoch.FromSeconds(attr.ToInt(prev[attrExp])).Add(-d.opts.Retention)
		return d.marks(f, earlier, replaced(prev))
	}
	return false
}

// markReplay marks l's claim as made by a replay: one UpdateItem, on the
// path of a copy of a dead letter's body only.
func (d *DynamoDB) markReplay(ctx context.Context, l Lease) error {
	_, err := d.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(d.table), Key: d.key(effectPK(l.Key)),
		UpdateExpression:         aws.String("SET #byreplay = :true"),
		ConditionExpression:      aws.String("#token = :token"),
		ExpressionAttributeNames: map[string]string{"#token": attrToken, "#byreplay": attrByReplay},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":token": attr.S(l.Token), ":true": &types.AttributeValueMemberBOOL{Value: true},
		},
	})
	return err
}

// leaseCondition holds while the lease owns the effect record. The fence
// comparison is implied by the token (only Claim sets either) and is there
// to state the rule every fenced write follows.
var leaseCondition = aws.String("#token = :token AND #status = :inprogress AND #fence = :fence")

// Complete marks the effect completed and restarts its retention,
// conditional on the lease: one UpdateItem. A record this lease already
// completed is success: the SDK retries a request whose response was lost,
// and the retry finds the record its first try wrote. A worker calls it only when it
// reports the effect's message failed (retried, dead-lettered): a message
// reported done is deleted from the queue, and that alone makes its
// effects count as completed for every later message of the conversation
// (see Claim), so in steady state an effect costs its Claim only. It returns ErrFenced when a
// newer worker of the conversation has claimed the effect since,
// ErrLeaseLost when the lease token no longer owns the record otherwise
// (it was completed or failed already, or taken over within the same
// token), or a wrapped AWS error.
func (d *DynamoDB) Complete(ctx context.Context, l Lease) error {
	return d.leaseUpdate(ctx, "complete", l, StatusCompleted, "SET #status = :completed, #exp = :exp REMOVE #lexp, #reason",
		map[string]string{"#exp": attrExp, "#reason": attrReason},
		map[string]types.AttributeValue{
			":completed": attr.S(string(StatusCompleted)),
			":exp":       attr.N(epoch.Seconds(d.opts.Now().Add(d.opts.Retention))),
		})
}

// Fail gives up the lease and records why, so the next attempt can claim
// the effect at once, conditional on the lease: one UpdateItem. It returns
// ErrFenced or ErrLeaseLost as Complete does, or a wrapped AWS error.
func (d *DynamoDB) Fail(ctx context.Context, l Lease, reason string) error {
	return d.leaseUpdate(ctx, "fail", l, StatusFailed, "SET #status = :failed, #reason = :reason REMOVE #lexp",
		map[string]string{"#reason": attrReason},
		map[string]types.AttributeValue{
			":failed": attr.S(string(StatusFailed)),
			":reason": attr.S(reasonText(reason)),
		})
}

// leaseUpdate applies update, which sets the status to, to l's effect
// record under leaseCondition, with names and values beside the ones every
// such update uses. A record that already holds status under l's token and
// fence is success (the update landed before; its response was lost).
func (d *DynamoDB) leaseUpdate(ctx context.Context, op string, l Lease, to Status, update string, names map[string]string, values map[string]types.AttributeValue) error {
	maps.Copy(names, map[string]string{"#status": attrStatus, "#lexp": attrLeaseMs, "#token": attrToken, "#fence": attrFence})
	maps.Copy(values, map[string]types.AttributeValue{
		":inprogress": attr.S(string(StatusInProgress)),
		":token":      attr.S(l.Token),
		":fence":      attr.S(l.Fence.Token()),
	})
	_, err := d.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(d.table),
		Key:                                 d.key(effectPK(l.Key)),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 leaseCondition,
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	old, err := d.rejected(ctx, effectPK(l.Key), err)
	switch {
	case err != nil:
		return fmt.Errorf("%s %s: %w", op, l.Key, err)
	case old == nil:
		return nil
	case attr.ToString(old[attrToken]) == l.Token && attr.ToString(old[attrStatus]) == string(to) && attr.ToString(old[attrFence]) == l.Fence.Token():
		return nil
	case newer(attr.ToString(old[attrSeries]), attr.ToString(old[attrFence]), l.Fence):
		return fmt.Errorf("%s %s: %w", op, l.Key, ErrFenced)
	default:
		return fmt.Errorf("%s %s: %w", op, l.Key, ErrLeaseLost)
	}
}

// Bury records that the event of keys was dead-lettered from f's message
// with reason: each record of keys not completed becomes DEAD (see
// StatusDead), created when absent; a completed one stays completed and
// takes the dead mark (Record.DeadMessage), so that an effect the last
// attempt never reached cannot run after the dead letter; and every one of
// them starts its retention again, so that no record expires while the dead
// letter can come back (the DLQ keeps it 14 days; Retention is longer). One
// UpdateItem per key when the record is absent, FAILED, the caller's own
// (own lists its leases) or its message's dead letter already; two
// otherwise (the rejection returns the record, a conditional write follows).
// A record written under a newer token is left alone, and one dead-lettered
// from another message keeps that dead letter. It returns a
// *ConflictError wrapping ErrCompleted when the event record (EventEffect)
// shows the event done by an earlier message of the conversation (a later
// copy of a done event is deleted, never dead-lettered: see finished), one
// wrapping ErrInFlight when another worker holds a live lease on a record (a
// concurrent copy of the message is running the effect, and the caller must
// not dead-letter the event under it), or the first wrapped AWS error.
func (d *DynamoDB) Bury(ctx context.Context, f Fence, keys []Key, own []Lease, reason string) error {
	now := d.opts.Now()
	exp := attr.N(epoch.Seconds(now.Add(d.opts.Retention)))
	for _, k := range keys {
		token := "-"
		for _, l := range own {
			if l.Key == k {
				token = l.Token
			}
		}
		values := map[string]types.AttributeValue{
			":exp": exp, ":series": attr.S(f.series()), ":fence": attr.S(f.Token()), ":failed": attr.S(string(StatusFailed)),
			":inprogress": attr.S(string(StatusInProgress)), ":now": attr.N(epoch.Seconds(now)), ":own": attr.S(token),
			":dead": attr.S(string(StatusDead)), ":msgid": attr.S(f.MessageID),
		}
		// Absent or expired, FAILED, the caller's own claim, or dead-lettered
		// from this message before; never under a newer token.
		old, err := d.bury(ctx, f, k, reason, "attribute_not_exists(#pk) OR #exp < :now OR ((#status = :failed OR "+
			"(#status = :inprogress AND #token = :own) OR (#status = :dead AND #deadmsg = :msgid)) AND "+fenceOK+")", values)
		if err != nil {
			return err
		}
		if old == nil {
			continue
		}
		r := record(k, old)
		switch {
		case newer(attr.ToString(old[attrSeries]), r.Fence, f):
			continue // a newer worker's: nothing of ours to bury
		case k.Effect == f.record() && finished(r, attr.ToString(old[attrSeries]), attr.ToString(old[attrOrigin]), old[attrByReplay] != nil, f):
			return &ConflictError{Record: r, err: ErrCompleted}
		case r.Status == StatusCompleted && r.DeadMessage == "":
			// Completed before its event was dead-lettered: it stays
			// completed and takes the dead mark, unless it changed since.
			err = d.update(ctx, k, "SET #exp = :exp, #reason = :reason, #deadmsg = :msgid"+originSet(f)+" REMOVE #sent ADD #deadfrom :msgset",
				"#status = :completed AND attribute_not_exists(#deadmsg) AND #fence = :was", map[string]types.AttributeValue{
					":exp": exp, ":reason": attr.S(reasonText(reason)), ":msgid": attr.S(f.MessageID), ":completed": attr.S(string(StatusCompleted)),
					":was": attr.S(r.Fence), ":origin": attr.S(f.Origin), ":msgset": strSet(f.MessageID)})
		case r.Dead() && revives(r.DeadMessage, r.DeadFrom, attr.ToString(old[attrOrigin]), f):
			// Dead-lettered from another message that f could have revived
			// (f is a replay of it): f's dead letter is now the event's, so
			// that f's own copies cannot revive it.
			err = d.update(ctx, k, "SET #exp = :exp, #reason = :reason, #deadmsg = :msgid"+originSet(f)+" REMOVE #sent ADD #deadfrom :msgset",
				"#deadmsg = :deadmsg", map[string]types.AttributeValue{
					":exp": exp, ":reason": attr.S(reasonText(reason)), ":msgid": attr.S(f.MessageID), ":origin": attr.S(f.Origin),
					":deadmsg": attr.S(r.DeadMessage), ":msgset": strSet(f.MessageID)})
		case r.Dead():
			// Dead-lettered from another message, of which f is a stray
			// copy: that dead letter stands; the record only starts its
			// retention again.
			err = d.update(ctx, k, "SET #exp = :exp", "#deadmsg = :deadmsg", map[string]types.AttributeValue{
				":exp": exp, ":deadmsg": attr.S(r.DeadMessage)})
		case r.Status == StatusInProgress && !r.LeaseExpires.Before(now):
			return &ConflictError{Record: r, err: ErrInFlight}
		default:
			// An interrupted claim whose lease ended: buried, unless it
			// changed since.
			values[":was"] = old[attrToken]
			if values[":was"] == nil {
				values[":was"] = attr.S("-")
			}
			changed, err := d.bury(ctx, f, k, reason, "#token = :was AND #status = :inprogress", values)
			if err != nil {
				return err
			}
			if changed != nil {
				return fmt.Errorf("bury %s: the record changed while it was buried; the next attempt decides", k)
			}
		}
		if err != nil {
			return fmt.Errorf("bury %s: %w", k, err)
		}
	}
	return nil
}

// bury turns k's record DEAD for f's message under cond: nil when it did,
// the record in the way when cond failed, or a wrapped AWS error.
func (d *DynamoDB) bury(ctx context.Context, f Fence, k Key, reason, cond string, values map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	names := map[string]string{
		"#pk": attrPK, "#exp": attrExp, "#status": attrStatus, "#series": attrSeries, "#fence": attrFence, "#lexp": attrLeaseMs,
		"#token": attrToken, "#reason": attrReason, "#deadmsg": attrDeadMsg, "#sent": attrDeadSent, "#deadfrom": attrDeadFrom,
	}
	v := maps.Clone(values)
	v[":reason"], v[":msgset"] = attr.S(reasonText(reason)), strSet(f.MessageID)
	if f.Origin != "" {
		names["#origin"], v[":origin"] = attrOrigin, attr.S(f.Origin)
	}
	update := "SET #exp = :exp, #status = :dead, #reason = :reason, #deadmsg = :msgid" + originSet(f) + " REMOVE #lexp, #sent ADD #deadfrom :msgset"
	prune(update+" "+cond, names, v)
	_, err := d.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(d.table), Key: d.key(effectPK(k)),
		UpdateExpression:         aws.String(update),
		ConditionExpression:      aws.String(cond),
		ExpressionAttributeNames: names, ExpressionAttributeValues: v,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	old, err := d.rejected(ctx, effectPK(k), err)
	if err != nil {
		return nil, fmt.Errorf("bury %s: %w", k, err)
	}
	return old, nil
}

// originSet is the update clause that records f's origin on a buried
// record (a copy of its dead letter re-sent by hand revives it: revives).
func originSet(f Fence) string {
	if f.Origin == "" {
		return ""
	}
	return ", #origin = :origin"
}

// placeholder matches an expression attribute name or value.
var placeholder = regexp.MustCompile(`[#:][A-Za-z0-9_]+`)

// prune deletes the names and values expr does not use: DynamoDB rejects a
// request that defines any it does not use.
func prune(expr string, names map[string]string, values map[string]types.AttributeValue) {
	used := map[string]bool{}
	for _, p := range placeholder.FindAllString(expr, -1) {
		used[p] = true
	}
	maps.DeleteFunc(names, func(k, _ string) bool { return !used[k] })
	maps.DeleteFunc(values, func(k string, _ types.AttributeValue) bool { return !used[k] })
}

// update applies a conditional UpdateItem to k's record with the
// expressions' names taken from the attribute names this file uses. A
// failed condition is an error: the record changed since it was read.
func (d *DynamoDB) update(ctx context.Context, k Key, update, cond string, values map[string]types.AttributeValue) error {
	names := map[string]string{"#exp": attrExp, "#reason": attrReason, "#deadmsg": attrDeadMsg, "#origin": attrOrigin,
		"#sent": attrDeadSent, "#status": attrStatus, "#fence": attrFence, "#deadfrom": attrDeadFrom}
	prune(update+" "+cond, names, values)
	_, err := d.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(d.table), Key: d.key(effectPK(k)),
		UpdateExpression: aws.String(update), ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("the record changed while it was buried; the next attempt decides: %w", err)
	}
	return err
}

// Buried records that the dead letter of f's message, which Bury recorded,
// was sent: a copy of the message that comes back (its deletion was lost)
// is then deleted rather than dead-lettered again. One UpdateItem per key,
// on the dead-letter path only; a key Bury did not bury for f's message is
// left alone. It returns the first wrapped AWS error.
func (d *DynamoDB) Buried(ctx context.Context, f Fence, keys []Key) error {
	for _, k := range keys {
		_, err := d.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(d.table), Key: d.key(effectPK(k)),
			UpdateExpression:          aws.String("SET #sent = :true"),
			ConditionExpression:       aws.String("#deadmsg = :msgid"),
			ExpressionAttributeNames:  map[string]string{"#sent": attrDeadSent, "#deadmsg": attrDeadMsg},
			ExpressionAttributeValues: map[string]types.AttributeValue{":true": &types.AttributeValueMemberBOOL{Value: true}, ":msgid": attr.S(f.MessageID)},
		})
		var ccf *types.ConditionalCheckFailedException
		if err != nil && !errors.As(err, &ccf) {
			return fmt.Errorf("buried %s: %w", k, err)
		}
	}
	return nil
}

// Apply stores the entity when u.Version is greater than the stored
// version, fenced by f: one conditional PutItem. It returns ErrFenced when
// the entity was written under a newer token of f's conversation (whatever
// the versions), ErrStale for an older or equal version, or a wrapped AWS
// error.
func (d *DynamoDB) Apply(ctx context.Context, f Fence, u Update) error {
	if err := checkApply(f, u); err != nil {
		return err
	}
	pk := entityPK(f.Tenant, u.Entity)
	item := map[string]types.AttributeValue{
		attrPK:        attr.S(pk),
		attrVersion:   attr.N(u.Version),
		attrFence:     attr.S(f.Token()),
		attrSeries:    attr.S(f.series()),
		attrUpdatedMs: attr.N(epoch.Millis(d.opts.Now())),
	}
	if len(u.Data) > 0 {
		item[attrData] = &types.AttributeValueMemberB{Value: u.Data}
	}
	_, err := d.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(d.table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(#pk) OR (#version < :version AND " + fenceOK + ")"),
		ExpressionAttributeNames: map[string]string{
			"#pk": attrPK, "#version": attrVersion, "#series": attrSeries, "#fence": attrFence,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":version": attr.N(u.Version), ":series": attr.S(f.series()), ":fence": attr.S(f.Token()),
		},
		// The old item, which comes with the rejection (no read), tells a
		// fenced write from a stale one.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	old, err := d.rejected(ctx, pk, err)
	switch {
	case err != nil:
		return fmt.Errorf("apply %s of %s: %w", u.Entity, f.Tenant, err)
	case old == nil:
		return nil
	case newer(attr.ToString(old[attrSeries]), attr.ToString(old[attrFence]), f):
		return fmt.Errorf("apply %s of %s: %w", u.Entity, f.Tenant, ErrFenced)
	default:
		return fmt.Errorf("apply %s of %s version %d: %w", u.Entity, f.Tenant, u.Version, ErrStale)
	}
}

// rejected translates the outcome of a conditional write: (nil, nil) when
// it succeeded; the item that failed the condition (empty when there was
// none), when the condition failed; or the AWS error. Translating the
// SDK's exception happens only here.
func (d *DynamoDB) rejected(ctx context.Context, pk string, err error) (map[string]types.AttributeValue, error) {
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil, nil
	case !errors.As(err, &ccf):
		return nil, err
	case len(ccf.Item) > 0:
		return ccf.Item, nil
	}
	// An emulator that does not return the item: read it (it may have
	// changed since; the error is then as good as a later attempt's).
	item, err := d.get(ctx, pk)
	if err != nil {
		return nil, err
	}
	if item == nil {
		item = map[string]types.AttributeValue{}
	}
	return item, nil
}

// FailedAttempt records that the attempt at the queue message messageID
// made in its receive-th receive (its ApproximateReceiveCount) failed, and
// returns how many attempts have failed: one UpdateItem, made on the failure
// path only, so a message that succeeds costs nothing here. A receive is
// counted once, however many times it is reported (a duplicate invocation
// of the batch, the cut-off and the next receive's takeover of an
// interrupted effect): a report of a receive counted already, or of an
// earlier one, returns the count unchanged. Counting attempts (not SQS
// receives) keeps a message that was received only to wait behind an
// earlier failure of its conversation from using up its retries. The record
// expires with the retention (longer than SQS keeps a message, and message
// ids are never reused). It returns ErrInvalidKey for an empty or oversized
// id, or a wrapped AWS error.
func (d *DynamoDB) FailedAttempt(ctx context.Context, messageID string, receive int) (int, error) {
	if err := validName("message id", messageID); err != nil {
		return 0, err
	}
	out, err := d.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(d.table),
		Key:                      d.key(attemptsPK(messageID)),
		UpdateExpression:         aws.String("ADD #n :one SET #exp = :exp, #last = :receive"),
		ConditionExpression:      aws.String("attribute_not_exists(#last) OR #last < :receive"),
		ExpressionAttributeNames: map[string]string{"#n": attrAttempts, "#exp": attrExp, "#last": attrLastReceive},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one":     attr.N(1),
			":exp":     attr.N(epoch.Seconds(d.opts.Now().Add(d.opts.Retention))),
			":receive": attr.N(int64(receive)),
		},
		ReturnValues:                        types.ReturnValueUpdatedNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	old, err := d.rejected(ctx, attemptsPK(messageID), err)
	switch {
	case err != nil:
		return 0, fmt.Errorf("count attempt of message %s: %w", messageID, err)
	case old != nil: // this receive was counted already
		return int(attr.ToInt(old[attrAttempts])), nil
	}
	return int(attr.ToInt(out.Attributes[attrAttempts])), nil
}

// Entity returns the stored state of an entity (a strongly consistent
// read), or an error wrapping ErrNotFound.
func (d *DynamoDB) Entity(ctx context.Context, tenantID, id string) (Entity, error) {
	item, err := d.get(ctx, entityPK(tenantID, id))
	if err != nil {
		return Entity{}, fmt.Errorf("entity %s of %s: %w", id, tenantID, err)
	}
	if item == nil {
		return Entity{}, fmt.Errorf("entity %s of %s: %w", id, tenantID, ErrNotFound)
	}
	e := Entity{Tenant: tenantID, ID: id, Version: attr.ToInt(item[attrVersion]), Fence: attr.ToString(item[attrFence])}
	if b, ok := item[attrData].(*types.AttributeValueMemberB); ok {
		e.Data = b.Value
	}
	e.UpdatedAt = epoch.FromMillis(attr.ToInt(item[attrUpdatedMs]))
	return e, nil
}

// Record returns the stored state of an effect (a strongly consistent
// read), or an error wrapping ErrNotFound.
func (d *DynamoDB) Record(ctx context.Context, k Key) (Record, error) {
	item, err := d.get(ctx, effectPK(k))
	if err != nil {
		return Record{}, fmt.Errorf("record %s: %w", k, err)
	}
	if item == nil {
		return Record{}, fmt.Errorf("record %s: %w", k, ErrNotFound)
	}
	return record(k, item), nil
}

// Attempts returns how many attempts at the queue message messageID failed
// (FailedAttempt's count; 0 when none did), with a strongly consistent
// read. It returns a wrapped AWS error.
func (d *DynamoDB) Attempts(ctx context.Context, messageID string) (int, error) {
	item, err := d.get(ctx, attemptsPK(messageID))
	if err != nil {
		return 0, fmt.Errorf("attempts of message %s: %w", messageID, err)
	}
	return int(attr.ToInt(item[attrAttempts])), nil
}

// Effects returns the effect records of tenantID, only those of event when
// it is not empty, in no particular order. It is for operators' tools,
// never for the worker: effect records are found by key, and a table has no
// index by tenant, so this is a Scan of the whole table (paginated,
// eventually consistent: it reads every item, ½ read unit per 4 KB, however
// few match). It returns an error wrapping ErrInvalidKey for an invalid
// tenant, or a wrapped AWS error.
func (d *DynamoDB) Effects(ctx context.Context, tenantID, event string) ([]Record, error) {
	if err := validTenant(tenantID); err != nil {
		return nil, err
	}
	prefix := "fx|" + tenantID + "|" // effectPK up to the effect name
	filter, values := "begins_with(#pk, :prefix)", map[string]types.AttributeValue{":prefix": attr.S(prefix)}
	if event != "" { // narrows the response; the suffix is checked below
		filter += " AND contains(#pk, :event)"
		values[":event"] = attr.S("|" + event)
	}
	var out []Record
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(d.table),
		FilterExpression:          aws.String(filter),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK},
		ExpressionAttributeValues: values,
	}
	for {
		page, err := d.client.Scan(ctx, in)
		if err != nil {
			return out, fmt.Errorf("scan effects of %s: %w", tenantID, err)
		}
		for _, item := range page.Items {
			if k, ok := effectKey(attr.ToString(item[attrPK])); ok && k.Tenant == tenantID && (event == "" || k.Event == event) {
				out = append(out, record(k, item))
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

func (d *DynamoDB) key(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: attr.S(pk)}
}

// get returns the item under pk, or nil when there is none.
func (d *DynamoDB) get(ctx context.Context, pk string) (map[string]types.AttributeValue, error) {
	out, err := d.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(d.table),
		Key:            d.key(pk),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

func record(k Key, item map[string]types.AttributeValue) Record {
	r := Record{Key: k, Fence: attr.ToString(item[attrFence]), Series: attr.ToString(item[attrSeries])}
	if v, ok := item[attrStatus].(*types.AttributeValueMemberS); ok {
		r.Status = Status(v.Value)
	}
	if v, ok := item[attrReason].(*types.AttributeValueMemberS); ok {
		r.Reason = v.Value
	}
	r.DeadMessage = attr.ToString(item[attrDeadMsg])
	r.DeadFrom = setAttr(item[attrDeadFrom])
	_, r.DeadSent = item[attrDeadSent]
	if _, ok := item[attrExp]; ok {
		r.Expires = epoch.FromSeconds(attr.ToInt(item[attrExp]))
	}
	if _, ok := item[attrLeaseMs]; ok {
		r.LeaseExpires = epoch.FromMillis(attr.ToInt(item[attrLeaseMs]))
	}
	return r
}

// strSet is a string set of one element.
func strSet(s string) types.AttributeValue { return &types.AttributeValueMemberSS{Value: []string{s}} }

// setAttr returns a string set's elements, sorted, or nil.
func setAttr(v types.AttributeValue) []string {
	ss, ok := v.(*types.AttributeValueMemberSS)
	if !ok || len(ss.Value) == 0 {
		return nil
	}
	return slices.Sorted(slices.Values(ss.Value))
}

// maxReason bounds a stored failure reason.
const maxReason = 1000

func reasonText(s string) string {
	if len(s) > maxReason {
		return strings.ToValidUTF8(s[:maxReason], "")
	}
	if s == "" {
		return "unknown"
	}
	return s
}
