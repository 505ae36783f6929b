package idempotency

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookpack/hookpack/pkg/internal/attr"
	"github.com/hookpack/hookpack/pkg/internal/epoch"
	"github.com/hookpack/hookpack/pkg/internal/lease"
)

// Attribute names, compatible with AWS Lambda Powertools' idempotency table
// (plus lease_token, which Powertools lacks).
const (
	attrID           = "id"
	attrExpiration   = "expiration"             // epoch seconds; the table's TTL attribute
	attrInProgressMs = "in_progress_expiration" // epoch milliseconds
	attrStatus       = "status"
	attrValidation   = "validation"
	attrToken        = "lease_token"
)

// dynamoAPI is the subset of the DynamoDB client the store uses.
type dynamoAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// DynamoDB is a Store backed by a DynamoDB table whose partition key is the
// string attribute "id" and whose TTL attribute is "expiration".
type DynamoDB struct {
	client dynamoAPI
	table  string
	opts   Options
}

// NewDynamoDB returns a store on table.
func NewDynamoDB(client dynamoAPI, table string, opts Options) *DynamoDB {
	return &DynamoDB{client: client, table: table, opts: opts.WithDefaults(DefaultRetention, DefaultLease)}
}

var claimCondition = aws.String("attribute_not_exists(#id) OR #exp < :now OR " +
	"(#status = :inprogress AND attribute_exists(#ipexp) AND #ipexp < :nowms)")

// Claim takes the key with a fresh lease. It costs one request whether it
// succeeds or not (ReturnValuesOnConditionCheckFailure=ALL_OLD returns the
// record in the way, whose validation digest is compared with validation).
// A record holding this claim's own token is success: when DynamoDB's
// response to a put that landed is lost, the SDK's retry finds it.
// It returns a *ConflictError wrapping ErrPayloadMismatch, ErrDuplicate or
// ErrInFlight when the key is taken, or a wrapped AWS error.
func (d *DynamoDB) Claim(ctx context.Context, key, validation string) (Claim, error) {
	now := d.opts.Now()
	c := Claim{Key: key, Token: lease.Token(), LeaseExpires: now.Add(d.opts.Lease)}
	item := map[string]types.AttributeValue{
		attrID:           &types.AttributeValueMemberS{Value: key},
		attrExpiration:   attr.N(epoch.Seconds(now.Add(d.opts.Retention))),
		attrInProgressMs: attr.N(epoch.Millis(c.LeaseExpires)),
		attrStatus:       &types.AttributeValueMemberS{Value: string(StatusInProgress)},
		attrToken:        &types.AttributeValueMemberS{Value: c.Token},
	}
	if validation != "" {
		item[attrValidation] = &types.AttributeValueMemberS{Value: validation}
	}
	_, err := d.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(d.table),
		Item:                item,
		ConditionExpression: claimCondition,
		ExpressionAttributeNames: map[string]string{
			"#id": attrID, "#exp": attrExpiration, "#status": attrStatus, "#ipexp": attrInProgressMs,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":        attr.N(epoch.Seconds(now)),
			":nowms":      attr.N(epoch.Millis(now)),
			":inprogress": &types.AttributeValueMemberS{Value: string(StatusInProgress)},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) && token(ccf.Item) == c.Token {
		return c, nil
	}
	if errors.As(err, &ccf) {
		return Claim{}, conflict(record(key, ccf.Item), validation)
	}
	if err != nil {
		return Claim{}, fmt.Errorf("claim %s: %w", key, err)
	}
	return c, nil
}

// Complete marks the claim done and restarts its retention window. It
// returns ErrLeaseLost when the claim's token no longer owns the record. A
// record this token already completed is success: when DynamoDB's response
// to a completion that landed is lost, the SDK's retry fails the condition,
// and the record it returns (ReturnValuesOnConditionCheckFailure=ALL_OLD,
// no extra request) shows the write was this one's.
func (d *DynamoDB) Complete(ctx context.Context, c Claim) error {
	now := d.opts.Now()
	_, err := d.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(d.table),
		Key:                 map[string]types.AttributeValue{attrID: &types.AttributeValueMemberS{Value: c.Key}},
		UpdateExpression:    aws.String("SET #status = :completed, #exp = :exp REMOVE #ipexp"),
		ConditionExpression: aws.String("#token = :token AND #status = :inprogress"),
		ExpressionAttributeNames: map[string]string{
			"#status": attrStatus, "#exp": attrExpiration, "#ipexp": attrInProgressMs, "#token": attrToken,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":completed":  &types.AttributeValueMemberS{Value: string(StatusCompleted)},
			":inprogress": &types.AttributeValueMemberS{Value: string(StatusInProgress)},
			":exp":        attr.N(epoch.Seconds(now.Add(d.opts.Retention))),
			":token":      &types.AttributeValueMemberS{Value: c.Token},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) && completedBy(ccf.Item, c.Token) {
		return nil
	}
	return d.leaseErr("complete", c.Key, err)
}

// completedBy reports whether item is a completed record of tok.
func completedBy(item map[string]types.AttributeValue, tok string) bool {
	s, _ := item[attrStatus].(*types.AttributeValueMemberS)
	return tok != "" && token(item) == tok && s != nil && Status(s.Value) == StatusCompleted
}

// token returns item's lease token, "" when it has none.
func token(item map[string]types.AttributeValue) string {
	t, _ := item[attrToken].(*types.AttributeValueMemberS)
	if t == nil {
		return ""
	}
	return t.Value
}

// Release deletes an in-progress claim so the sender's retry can claim the
// key again. It returns ErrLeaseLost when the token no longer owns it.
func (d *DynamoDB) Release(ctx context.Context, c Claim) error {
	_, err := d.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                aws.String(d.table),
		Key:                      map[string]types.AttributeValue{attrID: &types.AttributeValueMemberS{Value: c.Key}},
		ConditionExpression:      aws.String("#token = :token AND #status = :inprogress"),
		ExpressionAttributeNames: map[string]string{"#token": attrToken, "#status": attrStatus},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":token":      &types.AttributeValueMemberS{Value: c.Token},
			":inprogress": &types.AttributeValueMemberS{Value: string(StatusInProgress)},
		},
	})
	return d.leaseErr("release", c.Key, err)
}

// Record returns the stored state of key (a strongly consistent read, for
// operators' tools; the ingest path never reads a record). A record past
// its expiration that DynamoDB's TTL has not deleted yet is returned as
// stored: Expires tells. It returns an error wrapping ErrNotFound, or a
// wrapped AWS error.
func (d *DynamoDB) Record(ctx context.Context, key string) (Record, error) {
	out, err := d.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(d.table),
		Key:            map[string]types.AttributeValue{attrID: &types.AttributeValueMemberS{Value: key}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Record{}, fmt.Errorf("read %s: %w", key, err)
	}
	if len(out.Item) == 0 {
		return Record{}, fmt.Errorf("read %s: %w", key, ErrNotFound)
	}
	return record(key, out.Item), nil
}

func (d *DynamoDB) leaseErr(op, key string, err error) error {
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ccf):
		return fmt.Errorf("%s %s: %w", op, key, ErrLeaseLost)
	default:
		return fmt.Errorf("%s %s: %w", op, key, err)
	}
}

func record(key string, item map[string]types.AttributeValue) Record {
	r := Record{Key: key}
	if v, ok := item[attrStatus].(*types.AttributeValueMemberS); ok {
		r.Status = Status(v.Value)
	}
	if v, ok := item[attrValidation].(*types.AttributeValueMemberS); ok {
		r.Validation = v.Value
	}
	if v, ok := item[attrExpiration].(*types.AttributeValueMemberN); ok {
		if n, err := strconv.ParseInt(v.Value, 10, 64); err == nil {
			r.Expires = epoch.FromSeconds(n)
		}
	}
	if v, ok := item[attrInProgressMs].(*types.AttributeValueMemberN); ok {
		if n, err := strconv.ParseInt(v.Value, 10, 64); err == nil {
			r.LeaseExpires = epoch.FromMillis(n)
		}
	}
	return r
}

// RetryAfter is how long a sender should wait before retrying an in-flight
// key: until the lease runs out, at least one second.
func RetryAfter(r Record, now time.Time) time.Duration {
	d := r.LeaseExpires.Sub(now)
	if d < time.Second {
		return time.Second
	}
	return d.Round(time.Second)
}
