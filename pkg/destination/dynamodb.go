package destination

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookpack/hookpack/pkg/internal/attr"
	"github.com/hookpack/hookpack/pkg/internal/epoch"
)

// Attributes of a tenant's item in the ledger table (template.yaml's
// LedgerTable): one map per paused and per failing destination.
const (
	attrPK        = "pk"
	pkPrefix      = "destinations#"
	pausedPrefix  = "paused:"
	failingPrefix = "failing:"
	fieldSince    = "since" // epoch ms
	fieldReason   = "reason"
	fieldBy       = "by"
)

// dynamoAPI is the subset of the DynamoDB client the store uses.
type dynamoAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// DynamoDB stores each tenant's destinations as one item of the ledger
// table (partition key "pk" = "destinations#<tenant>", no TTL: a pause
// lasts until it is resumed). Every change is one conditional UpdateItem
// that returns the item, so no change reads first. It is safe for
// concurrent use; build one per process.
type DynamoDB struct {
	client dynamoAPI
	table  string
}

// NewDynamoDB returns a store on the ledger table.
func NewDynamoDB(client dynamoAPI, table string) *DynamoDB {
	return &DynamoDB{client: client, table: table}
}

// States returns every destination of the tenant the store knows of (the
// others have the zero State), with one eventually consistent GetItem
// (0.5 RRU): a change made in the last second may not show. It returns an
// error wrapping ErrInvalid or the AWS error.
func (d *DynamoDB) States(ctx context.Context, tenantID string) (States, error) {
	if err := checkTenant(tenantID); err != nil {
		return nil, err
	}
	out, err := d.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.table), Key: d.key(tenantID)})
	if err != nil {
		return nil, fmt.Errorf("destinations of %s: %w", tenantID, err)
	}
	return decode(out.Item), nil
}

// Pause pauses the destination by an operator, with reason (CheckReason),
// since now, and returns its state. A destination paused already keeps
// its pause: the error wraps ErrAlreadyPaused and the State is the one in
// force. Other errors wrap ErrInvalid or the AWS error. One UpdateItem.
func (d *DynamoDB) Pause(ctx context.Context, tenantID, name, reason string, now time.Time) (State, error) {
	if err := checkPause(tenantID, name, reason); err != nil {
		return State{}, err
	}
	s, ok, err := d.update(ctx, tenantID, name, update{
		cond: "attribute_not_exists(#p)",
		expr: "SET #p = :p",
		vals: map[string]types.AttributeValue{":p": pauseValue(Pause{Since: now, Reason: reason, By: Operator})},
	})
	switch {
	case err != nil:
		return State{}, fmt.Errorf("pause %s/%s: %w", tenantID, name, err)
	case !ok:
		return s, fmt.Errorf("pause %s/%s: %w", tenantID, name, ErrAlreadyPaused)
	}
	return s, nil
}

// Resume ends the destination's pause, and its failure streak with it (a
// destination that fails again after its resume is paused again only
// after a whole auto-pause time of failures), and returns the pause it
// ended. A destination not paused is left as it is: the error wraps
// ErrNotPaused. Other errors wrap ErrInvalid or the AWS error. One
// UpdateItem.
func (d *DynamoDB) Resume(ctx context.Context, tenantID, name string) (Pause, error) {
	if err := check(tenantID, name); err != nil {
		return Pause{}, err
	}
	in := d.input(tenantID, name, update{cond: "attribute_exists(#p)", expr: "REMOVE #p, #f"})
	in.ReturnValues = types.ReturnValueAllOld
	out, err := d.client.UpdateItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return Pause{}, fmt.Errorf("resume %s/%s: %w", tenantID, name, ErrNotPaused)
	case err != nil:
		return Pause{}, fmt.Errorf("resume %s/%s: %w", tenantID, name, err)
	}
	return decode(out.Attributes)[name].Paused, nil
}

// Failed records a failure of the destination at now, decided on seen
// (the state the caller read, as recent as one invocation): the first
// failure after a success starts a streak; a failure at least after past
// the streak's start pauses the destination (By Auto, AutoReason; after
// ≤ 0 never does); every other failure writes nothing. A write is
// conditional on the stored state being the one decided on — a streak
// started meanwhile stands, a success meanwhile (the streak seen ended)
// pauses nothing — and returns the state after it, or the stored one when
// its condition failed. It returns an error wrapping ErrInvalid or the AWS
// error. At most one UpdateItem.
func (d *DynamoDB) Failed(ctx context.Context, tenantID, name, reason string, now time.Time, after time.Duration, seen State) (State, error) {
	if err := check(tenantID, name); err != nil {
		return State{}, err
	}
	var u update
	switch planFailed(seen, now, after) {
	case stepStart:
		u = update{cond: "attribute_not_exists(#f)", expr: "SET #f = :f",
			vals: map[string]types.AttributeValue{":f": failingValue(Failing{Since: now, Reason: cut(reason)})}}
	case stepPause:
		u = update{cond: "#f.#since = :since AND attribute_not_exists(#p)", expr: "SET #p = :p",
			vals: map[string]types.AttributeValue{
				":since": attr.N(epoch.Millis(seen.Failing.Since)),
				":p":     pauseValue(Pause{Since: now, Reason: AutoReason(seen.Failing, now, reason), By: Auto}),
			}}
	default:
		return seen, nil
	}
	s, _, err := d.update(ctx, tenantID, name, u)
	if err != nil {
		return State{}, fmt.Errorf("failure of %s/%s: %w", tenantID, name, err)
	}
	return s, nil
}

// Recovered records a success of the destination at now after the
// failures seen: it ends the streak (one conditional UpdateItem, which
// spares a streak started after now). A destination seen not failing
// writes nothing, so a healthy delivery costs no write. It returns the
// state after it, or an error wrapping ErrInvalid or the AWS error.
func (d *DynamoDB) Recovered(ctx context.Context, tenantID, name string, now time.Time, seen State) (State, error) {
	if err := check(tenantID, name); err != nil {
		return State{}, err
	}
	if !seen.IsFailing() {
		return seen, nil
	}
	s, _, err := d.update(ctx, tenantID, name, update{cond: "#f.#since <= :now", expr: "REMOVE #f",
		vals: map[string]types.AttributeValue{":now": attr.N(epoch.Millis(now))}})
	if err != nil {
		return State{}, fmt.Errorf("recovery of %s/%s: %w", tenantID, name, err)
	}
	return s, nil
}

// Forget deletes the tenant's item (the tenant's removal). It returns an
// error wrapping ErrInvalid or the AWS error.
func (d *DynamoDB) Forget(ctx context.Context, tenantID string) error {
	if err := checkTenant(tenantID); err != nil {
		return err
	}
	_, err := d.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(d.table), Key: d.key(tenantID)})
	if err != nil {
		return fmt.Errorf("forget destinations of %s: %w", tenantID, err)
	}
	return nil
}

// update is a conditional change of one destination's attributes: #p its
// pause, #f its failure streak, #since a map's since.
type update struct {
	cond, expr string
	vals       map[string]types.AttributeValue
}

func (d *DynamoDB) input(tenantID, name string, u update) *dynamodb.UpdateItemInput {
	names := map[string]string{}
	for ph, a := range map[string]string{"#p": pausedPrefix + name, "#f": failingPrefix + name, "#since": fieldSince} {
		if strings.Contains(u.cond+" "+u.expr, ph) {
			names[ph] = a
		}
	}
	return &dynamodb.UpdateItemInput{
		TableName:                           aws.String(d.table),
		Key:                                 d.key(tenantID),
		ConditionExpression:                 aws.String(u.cond),
		UpdateExpression:                    aws.String(u.expr),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           u.vals,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// update makes u and returns the destination's state after it (ok), or
// the stored one when u's condition failed (read when the failure did not
// return the item).
func (d *DynamoDB) update(ctx context.Context, tenantID, name string, u update) (State, bool, error) {
	out, err := d.client.UpdateItem(ctx, d.input(tenantID, name, u))
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return decode(out.Attributes)[name], true, nil
	case !errors.As(err, &ccf):
		return State{}, false, err
	case len(ccf.Item) > 0:
		return decode(ccf.Item)[name], false, nil
	}
	got, err := d.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.table), Key: d.key(tenantID), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return State{}, false, err
	}
	return decode(got.Item)[name], false, nil
}

func (d *DynamoDB) key(tenantID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: attr.S(pkPrefix + tenantID)}
}

func pauseValue(p Pause) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		fieldSince: attr.N(epoch.Millis(p.Since)), fieldReason: attr.S(p.Reason), fieldBy: attr.S(string(p.By)),
	}}
}

func failingValue(f Failing) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		fieldSince: attr.N(epoch.Millis(f.Since)), fieldReason: attr.S(f.Reason),
	}}
}

// decode returns the states a tenant's item holds (none for no item).
func decode(item map[string]types.AttributeValue) States {
	out := States{}
	for key, v := range item {
		m, ok := v.(*types.AttributeValueMemberM)
		if !ok {
			continue
		}
		since, reason := epoch.FromMillis(attr.ToInt(m.Value[fieldSince])), attr.ToString(m.Value[fieldReason])
		switch {
		case strings.HasPrefix(key, pausedPrefix):
			name := strings.TrimPrefix(key, pausedPrefix)
			s := out[name]
			s.Paused = Pause{Since: since, Reason: reason, By: By(attr.ToString(m.Value[fieldBy]))}
			out[name] = s
		case strings.HasPrefix(key, failingPrefix):
			name := strings.TrimPrefix(key, failingPrefix)
			s := out[name]
			s.Failing = Failing{Since: since, Reason: reason}
			out[name] = s
		}
	}
	return out
}
