package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookpack/hookpack/pkg/epoch"
)

// Attribute names.
const (
	attrPK        = "pk"
	attrExp       = "expiration"       // epoch seconds; the table's TTL attribute
	attrStatus    = "status"           // effect status
	attrToken     = "lease_token"      // effect lease token
	attrLeaseMs   = "lease_expiration" // epoch milliseconds
	attrFence     = "fence"            // conversation fence; claimer's/writer's token elsewhere
	attrReason    = "reason"           // why an effect last failed
	attrVersion   = "version"          // entity version
	attrData      = "data"             // entity state
	attrUpdatedMs = "updated_at"       // epoch milliseconds
)

// Cancellation reason codes of TransactWriteItems.
const (
	codeConditionFailed = "ConditionalCheckFailed"
	codeConflict        = "TransactionConflict"
)

// dynamoAPI is the subset of the DynamoDB client the store uses.
type dynamoAPI interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// DynamoDB is a ledger in a DynamoDB table whose partition key is the
// string attribute "pk" and whose TTL attribute is "expiration" (see
// CreateTable).
type DynamoDB struct {
	client dynamoAPI
	table  string
	opts   Options
}

// NewDynamoDB returns a ledger on table.
func NewDynamoDB(client dynamoAPI, table string, opts Options) *DynamoDB {
	return &DynamoDB{client: client, table: table, opts: opts.withDefaults()}
}

// Take bumps the conversation's fence and returns it: one UpdateItem. Every
// earlier token of the conversation is stale from now on.
func (d *DynamoDB) Take(ctx context.Context, tenantID, conversation string) (Fence, error) {
	f := Fence{Tenant: tenantID, Conversation: conversation}
	if err := validFence(f); err != nil {
		return Fence{}, err
	}
	out, err := d.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(d.table),
		Key:                      d.key(conversationPK(tenantID, conversation)),
		UpdateExpression:         aws.String("ADD #fence :one SET #exp = :exp"),
		ExpressionAttributeNames: map[string]string{"#fence": attrFence, "#exp": attrExp},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": num(1),
			":exp": num(epoch.Seconds(d.opts.Now().Add(d.opts.Retention))),
		},
		ReturnValues: types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return Fence{}, fmt.Errorf("take conversation %s of %s: %w", conversation, tenantID, err)
	}
	f.Token = numAttr(out.Attributes[attrFence])
	return f, nil
}

var claimCondition = aws.String("attribute_not_exists(#pk) OR #exp < :now OR #status = :failed OR " +
	"(#status = :inprogress AND #lexp < :nowms)")

// Claim takes the effect with a fresh lease of the given duration
// (Options.Lease when ≤ 0), fenced by f: one TransactWriteItems. It returns
// ErrFenced when f is stale, a *ConflictError wrapping ErrCompleted or
// ErrInFlight when the effect is done or held, ErrContended, or a wrapped
// AWS error.
func (d *DynamoDB) Claim(ctx context.Context, f Fence, k Key, lease time.Duration) (Lease, error) {
	if err := checkClaim(f, k); err != nil {
		return Lease{}, err
	}
	now := d.opts.Now()
	l := Lease{Key: k, Fence: f, Token: newToken(), Expires: now.Add(d.opts.lease(lease))}
	item := map[string]types.AttributeValue{
		attrPK:      str(effectPK(k)),
		attrExp:     num(epoch.Seconds(now.Add(d.opts.Retention))),
		attrStatus:  str(string(StatusInProgress)),
		attrToken:   str(l.Token),
		attrLeaseMs: num(epoch.Millis(l.Expires)),
		attrFence:   num(f.Token),
	}
	_, err := d.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			d.fenceCheck(f),
			{Put: &types.Put{
				TableName:           aws.String(d.table),
				Item:                item,
				ConditionExpression: claimCondition,
				ExpressionAttributeNames: map[string]string{
					"#pk": attrPK, "#exp": attrExp, "#status": attrStatus, "#lexp": attrLeaseMs,
				},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":now":        num(epoch.Seconds(now)),
					":nowms":      num(epoch.Millis(now)),
					":failed":     str(string(StatusFailed)),
					":inprogress": str(string(StatusInProgress)),
				},
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}},
		},
	})
	if err == nil {
		return l, nil
	}
	switch cancelled(err) {
	case txFence:
		return Lease{}, fmt.Errorf("claim %s: %w", k, ErrFenced)
	case txItem:
		old := cancelledItem(err, 1)
		if old == nil { // an emulator that does not return the item
			if old, err = d.get(ctx, effectPK(k)); err != nil {
				return Lease{}, fmt.Errorf("claim %s: %w", k, err)
			}
		}
		return Lease{}, conflict(record(k, old))
	case txContended:
		return Lease{}, fmt.Errorf("claim %s: %w", k, ErrContended)
	default:
		return Lease{}, fmt.Errorf("claim %s: %w", k, err)
	}
}

// Complete marks the effect completed and restarts its retention, fenced by
// the lease's fence: one TransactWriteItems. It returns ErrFenced when a
// newer worker took the conversation, ErrLeaseLost when the lease token no
// longer owns the record, ErrContended, or a wrapped AWS error.
func (d *DynamoDB) Complete(ctx context.Context, l Lease) error {
	now := d.opts.Now()
	_, err := d.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			d.fenceCheck(l.Fence),
			{Update: &types.Update{
				TableName:           aws.String(d.table),
				Key:                 d.key(effectPK(l.Key)),
				UpdateExpression:    aws.String("SET #status = :completed, #exp = :exp REMOVE #lexp, #reason"),
				ConditionExpression: aws.String("#token = :token AND #status = :inprogress"),
				ExpressionAttributeNames: map[string]string{
					"#status": attrStatus, "#exp": attrExp, "#lexp": attrLeaseMs, "#reason": attrReason, "#token": attrToken,
				},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":completed":  str(string(StatusCompleted)),
					":inprogress": str(string(StatusInProgress)),
					":exp":        num(epoch.Seconds(now.Add(d.opts.Retention))),
					":token":      str(l.Token),
				},
			}},
		},
	})
	if err == nil {
		return nil
	}
	switch cancelled(err) {
	case txFence:
		return fmt.Errorf("complete %s: %w", l.Key, ErrFenced)
	case txItem:
		return fmt.Errorf("complete %s: %w", l.Key, ErrLeaseLost)
	case txContended:
		return fmt.Errorf("complete %s: %w", l.Key, ErrContended)
	default:
		return fmt.Errorf("complete %s: %w", l.Key, err)
	}
}

// Fail gives up the lease and records why, so the next attempt can claim
// the effect at once: one UpdateItem, not fenced (it only releases the
// caller's own lease). It returns ErrLeaseLost when the token no longer
// owns the record.
func (d *DynamoDB) Fail(ctx context.Context, l Lease, reason string) error {
	_, err := d.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(d.table),
		Key:                 d.key(effectPK(l.Key)),
		UpdateExpression:    aws.String("SET #status = :failed, #reason = :reason REMOVE #lexp"),
		ConditionExpression: aws.String("#token = :token AND #status = :inprogress"),
		ExpressionAttributeNames: map[string]string{
			"#status": attrStatus, "#reason": attrReason, "#lexp": attrLeaseMs, "#token": attrToken,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":failed":     str(string(StatusFailed)),
			":inprogress": str(string(StatusInProgress)),
			":reason":     str(reasonText(reason)),
			":token":      str(l.Token),
		},
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ccf):
		return fmt.Errorf("fail %s: %w", l.Key, ErrLeaseLost)
	default:
		return fmt.Errorf("fail %s: %w", l.Key, err)
	}
}

// Apply stores the entity when u.Version is greater than the stored
// version, fenced by f: one TransactWriteItems. It returns ErrStale for an
// older or equal version, ErrFenced, ErrContended, or a wrapped AWS error.
func (d *DynamoDB) Apply(ctx context.Context, f Fence, u Update) error {
	if err := validFence(f); err != nil {
		return err
	}
	if err := validName("entity", u.Entity); err != nil {
		return err
	}
	item := map[string]types.AttributeValue{
		attrPK:        str(entityPK(f.Tenant, u.Entity)),
		attrVersion:   num(u.Version),
		attrFence:     num(f.Token),
		attrUpdatedMs: num(epoch.Millis(d.opts.Now())),
	}
	if len(u.Data) > 0 {
		item[attrData] = &types.AttributeValueMemberB{Value: u.Data}
	}
	_, err := d.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			d.fenceCheck(f),
			{Put: &types.Put{
				TableName:                 aws.String(d.table),
				Item:                      item,
				ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #version < :version"),
				ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#version": attrVersion},
				ExpressionAttributeValues: map[string]types.AttributeValue{":version": num(u.Version)},
			}},
		},
	})
	if err == nil {
		return nil
	}
	switch cancelled(err) {
	case txFence:
		return fmt.Errorf("apply %s of %s: %w", u.Entity, f.Tenant, ErrFenced)
	case txItem:
		return fmt.Errorf("apply %s of %s version %d: %w", u.Entity, f.Tenant, u.Version, ErrStale)
	case txContended:
		return fmt.Errorf("apply %s of %s: %w", u.Entity, f.Tenant, ErrContended)
	default:
		return fmt.Errorf("apply %s of %s: %w", u.Entity, f.Tenant, err)
	}
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
	e := Entity{Tenant: tenantID, ID: id, Version: numAttr(item[attrVersion]), Fence: numAttr(item[attrFence])}
	if b, ok := item[attrData].(*types.AttributeValueMemberB); ok {
		e.Data = b.Value
	}
	e.UpdatedAt = epoch.FromMillis(numAttr(item[attrUpdatedMs]))
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

func (d *DynamoDB) fenceCheck(f Fence) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                 aws.String(d.table),
		Key:                       d.key(conversationPK(f.Tenant, f.Conversation)),
		ConditionExpression:       aws.String("#fence = :fence"),
		ExpressionAttributeNames:  map[string]string{"#fence": attrFence},
		ExpressionAttributeValues: map[string]types.AttributeValue{":fence": num(f.Token)},
	}}
}

func (d *DynamoDB) key(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: str(pk)}
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

// txOutcome says why a two-item transaction (fence check first, the write
// second) failed.
type txOutcome int

const (
	txOther     txOutcome = iota // not a cancellation: an AWS or network error
	txFence                      // the fence check failed
	txItem                       // the write's own condition failed
	txContended                  // a concurrent transaction touched an item
)

// cancelled classifies err. Translating the SDK's exception happens only
// here; the fence check wins when both conditions failed.
func cancelled(err error) txOutcome {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) != 2 {
		return txOther
	}
	code := func(i int) string { return aws.ToString(tce.CancellationReasons[i].Code) }
	switch {
	case code(0) == codeConditionFailed:
		return txFence
	case code(1) == codeConditionFailed:
		return txItem
	case code(0) == codeConflict || code(1) == codeConflict:
		return txContended
	default:
		return txOther
	}
}

func cancelledItem(err error, i int) map[string]types.AttributeValue {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) && i < len(tce.CancellationReasons) && len(tce.CancellationReasons[i].Item) > 0 {
		return tce.CancellationReasons[i].Item
	}
	return nil
}

func record(k Key, item map[string]types.AttributeValue) Record {
	r := Record{Key: k, Fence: numAttr(item[attrFence])}
	if v, ok := item[attrStatus].(*types.AttributeValueMemberS); ok {
		r.Status = Status(v.Value)
	}
	if v, ok := item[attrReason].(*types.AttributeValueMemberS); ok {
		r.Reason = v.Value
	}
	if _, ok := item[attrExp]; ok {
		r.Expires = epoch.FromSeconds(numAttr(item[attrExp]))
	}
	if _, ok := item[attrLeaseMs]; ok {
		r.LeaseExpires = epoch.FromMillis(numAttr(item[attrLeaseMs]))
	}
	return r
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func numAttr(v types.AttributeValue) int64 {
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		i, _ := strconv.ParseInt(n.Value, 10, 64)
		return i
	}
	return 0
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
