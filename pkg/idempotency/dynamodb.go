package idempotency

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookpack/hookpack/pkg/internal/attr"
	"github.com/hookpack/hookpack/pkg/internal/epoch"
)

// Attribute names, compatible with AWS Lambda Powertools' idempotency
// table. in_progress_expiration is only read, on the INPROGRESS records of
// earlier versions.
const (
	attrID           = "id"
	attrExpiration   = "expiration"             // epoch seconds; the table's TTL attribute
	attrInProgressMs = "in_progress_expiration" // epoch milliseconds
	attrStatus       = "status"
	attrValidation   = "validation"
)

// dynamoAPI is the subset of the DynamoDB client the store uses.
type dynamoAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
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
	return &DynamoDB{client: client, table: table, opts: opts.WithDefaults(DefaultRetention, 0)}
}

// Check tells whether key is free to send: one strongly consistent GetItem
// (1 RRU, a fifth of a write), so a completion that landed before it is
// always seen. It returns nil when the key is free (no record, a record
// past its expiration that the TTL has not deleted yet, or an INPROGRESS
// record of an earlier version); a *ConflictError wrapping ErrDuplicate or
// ErrPayloadMismatch when the key was completed; or a wrapped AWS error.
func (d *DynamoDB) Check(ctx context.Context, key, validation string) error {
	r, err := d.Record(ctx, key)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil
	case err != nil:
		return err
	case free(r, d.opts.Now()):
		return nil
	}
	return conflict(r, validation)
}

// Complete records key as queued, once its event was sent: one conditional
// PutItem (1 WRU) of a COMPLETED record that starts the retention window,
// written when the key is free as Check defines it. A completed record in
// the way with the same digest (or a side without one) is success: a
// concurrent delivery of the same event sent it too (SQS dropped one of the
// two copies), or DynamoDB's response to this put was lost and the SDK's
// retry found it (ReturnValuesOnConditionCheckFailure=ALL_OLD returns the
// record, no extra request). With another digest it returns a
// *ConflictError wrapping ErrPayloadMismatch; otherwise a wrapped AWS
// error.
func (d *DynamoDB) Complete(ctx context.Context, key, validation string) error {
	now := d.opts.Now()
	item := map[string]types.AttributeValue{
		attrID:         &types.AttributeValueMemberS{Value: key},
		attrExpiration: attr.N(epoch.Seconds(now.Add(d.opts.Retention))),
		attrStatus:     &types.AttributeValueMemberS{Value: string(StatusCompleted)},
	}
	if validation != "" {
		item[attrValidation] = &types.AttributeValueMemberS{Value: validation}
	}
	_, err := d.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(d.table),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#id) OR #exp < :now OR #status <> :completed"),
		ExpressionAttributeNames: map[string]string{"#id": attrID, "#exp": attrExpiration, "#status": attrStatus},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":       attr.N(epoch.Seconds(now)),
			":completed": &types.AttributeValueMemberS{Value: string(StatusCompleted)},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return completed(record(key, ccf.Item), validation)
	}
	if err != nil {
		return fmt.Errorf("complete %s: %w", key, err)
	}
	return nil
}

// completed is Complete's answer when a completed record r is in the way.
func completed(r Record, validation string) error {
	if err := conflict(r, validation); errors.Is(err, ErrPayloadMismatch) {
		return err
	}
	return nil
}

// Record returns the stored state of key (a strongly consistent read: Check
// and operators' tools). A record past
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
