package lambdaenv_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"

	"github.com/hookpack/hookpack/pkg/lambdaenv"
	"github.com/hookpack/hookpack/pkg/local/awstest"
)

func client(endpoint string, log *bytes.Buffer, accept bool) *dynamodb.Client {
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		Logger:      logging.NewStandardLogger(log),
	}
	if accept {
		cfg.APIOptions = append(cfg.APIOptions, lambdaenv.AcceptMissingCRC32)
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
}

// A duplicate claim on DynamoDB Local — a conditional put that fails,
// returning the stored item — decodes without the SDK's checksum warning
// (DynamoDB Local's error responses carry no X-Amz-Crc32); without the
// option the warning is there, so this test can fail.
func TestAcceptMissingCRC32OnDynamoDBLocal(t *testing.T) {
	endpoint := awstest.DynamoDBLocal(t)
	ctx := context.Background()
	table := awstest.Name(t)
	var setup bytes.Buffer
	if _, err := client(endpoint, &setup, true).CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(table), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		t.Fatal(err)
	}
	claim := &dynamodb.PutItemInput{
		TableName: aws.String(table), Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "demo#github#d1"}},
		ConditionExpression:                 aws.String("attribute_not_exists(id)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if _, err := client(endpoint, &setup, true).PutItem(ctx, claim); err != nil {
		t.Fatal(err)
	}
	for _, accept := range []bool{true, false} {
		var log bytes.Buffer
		_, err := client(endpoint, &log, accept).PutItem(ctx, claim)
		var failed *types.ConditionalCheckFailedException
		if !errors.As(err, &failed) || failed.Item["id"] == nil {
			t.Fatalf("duplicate claim = %v, want ConditionalCheckFailed with the stored item", err)
		}
		if warned := strings.Contains(log.String(), "checksum"); warned == accept {
			t.Errorf("AcceptMissingCRC32 %v: SDK log %q", accept, log.String())
		}
	}
}

// A response whose X-Amz-Crc32 does not match its body is still caught.
func TestAcceptMissingCRC32KeepsValidation(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amz-Crc32", "12345")
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	var log bytes.Buffer
	_, _ = client(srv.URL, &log, true).GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "k"}}})
	if !strings.Contains(log.String(), "did not match expected checksum") {
		t.Errorf("a wrong X-Amz-Crc32 passed unnoticed; SDK log %q", log.String())
	}
}
