package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/provision"
	"github.com/hookpack/hookpack/pkg/provider"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// nopQueue accepts every send.
type nopQueue struct{}

func (nopQueue) SendBatch(_ context.Context, _ string, msgs []queue.Message) []error {
	return make([]error, len(msgs))
}

// BenchmarkHandlerInMemory is the handler's own overhead per accepted
// request: routing, verification, key, envelope, claim/complete on the
// in-memory store, a no-op queue and the JSON log line.
func BenchmarkHandlerInMemory(b *testing.B) {
	f := newFixture(&testing.T{})
	f.h.cfg.Queue = nopQueue{}
	f.h.cfg.Logger = slog.New(slog.NewJSONHandler(discard{}, nil))
	reqs := make([]string, b.N)
	for i := range reqs {
		reqs[i] = fmt.Sprint("bench-", i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// Each request another event: the key is the signed body's hash.
		req := githubRequest("acme", acmeGitHubSecret, strings.Replace(githubBody, "42", reqs[i][6:], 1), reqs[i])
		b.StartTimer()
		if resp, _ := f.h.Handle(ctx, req); resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkEmulator runs the full handler against moto next to the bare
// sequence of AWS calls it makes (PutItem, SendMessage, UpdateItem), in the
// same run. Budget: handler/bare ≤ 1.15. It also reports the handler's p50.
func BenchmarkEmulator(b *testing.B) {
	ctx := context.Background()
	cfg := awstest.Config(b, awstest.Moto(b))
	name := awstest.Name(b)
	ddb := dynamodb.NewFromConfig(cfg)
	if err := provision.Idempotency(ctx, ddb, name); err != nil {
		b.Fatal(err)
	}
	sq := sqs.NewFromConfig(cfg)
	pair, err := provision.QueuePair(ctx, sq, name+"-acme", provision.PairOptions{VisibilityTimeout: 30, MaxReceiveCount: 3})
	if err != nil {
		b.Fatal(err)
	}
	in := tenant.Inbound{Providers: map[string]webhook.Config{"github": {Secrets: []string{acmeGitHubSecret}}}}
	if err := tenant.NewSSM(ssm.NewFromConfig(cfg), "/"+name).Put(ctx, "acme", in, tenant.Outbound{}, "", provider.Registry()); err != nil {
		b.Fatal(err)
	}
	h := NewAWS(cfg, Settings{IdempotencyTable: name, ParameterPrefix: "/" + name, QueueURLTemplate: pair.URL}, slog.New(slog.DiscardHandler))
	h.Handle(ctx, githubRequest("acme", acmeGitHubSecret, githubBody, "warm-up")) // cache credentials, open connections

	// Handler and bare calls alternate within one loop, so both see the
	// emulator in the same state (its latency grows with its contents).
	var handlerDur, bareDur time.Duration
	samples := make([]time.Duration, 0, b.N)
	body := githubBody
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprint(i, time.Now().UnixNano())
		req := githubRequest("acme", acmeGitHubSecret, strings.Replace(githubBody, "42", id, 1), "h-"+id)
		start := time.Now()
		if resp, _ := h.Handle(ctx, req); resp.StatusCode != 200 {
			b.Fatalf("status %d %s", resp.StatusCode, resp.Body)
		}
		d := time.Since(start)
		handlerDur += d
		samples = append(samples, d)

		key := fmt.Sprint("acme#github#b-", i, "-", time.Now().UnixNano())
		start = time.Now()
		if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: key}, "status": &types.AttributeValueMemberS{Value: "INPROGRESS"},
		}, ConditionExpression: aws.String("attribute_not_exists(id)")}); err != nil {
			b.Fatal(err)
		}
		if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(pair.URL), MessageBody: aws.String(body),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(webhook.DeduplicationID(key))}); err != nil {
			b.Fatal(err)
		}
		if _, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(name),
			Key:              map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: key}},
			UpdateExpression: aws.String("SET #s = :c"), ExpressionAttributeNames: map[string]string{"#s": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberS{Value: "COMPLETED"}}}); err != nil {
			b.Fatal(err)
		}
		bareDur += time.Since(start)
	}
	b.ReportMetric(float64(handlerDur.Microseconds())/1000/float64(b.N), "handler-ms/op")
	b.ReportMetric(float64(bareDur.Microseconds())/1000/float64(b.N), "bare-ms/op")
	b.ReportMetric(float64(handlerDur)/float64(bareDur), "handler/bare")
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Microseconds())/1000, "handler-p50-ms")
}
