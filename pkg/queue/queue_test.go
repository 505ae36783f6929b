package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/provision"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

func TestURL(t *testing.T) {
	if got := URL("https://sqs.us-east-1.amazonaws.com/1/stack-{tenant}.fifo", "acme"); got != "https://sqs.us-east-1.amazonaws.com/1/stack-acme.fifo" {
		t.Errorf("URL() = %q", got)
	}
}

func TestSizeCountsAttributes(t *testing.T) {
	m := Message{Body: []byte("12345"), Attributes: map[string]string{"reason": "abc"}}
	if got, want := m.Size(), 5+len("reason")+len("String")+3; got != want {
		t.Errorf("Size() = %d, want %d", got, want)
	}
}

func TestSendOnMoto(t *testing.T) {
	ctx := context.Background()
	client := sqs.NewFromConfig(awstest.Config(t, awstest.Moto(t)))
	pair, err := provision.QueuePair(ctx, client, awstest.Name(t), provision.PairOptions{VisibilityTimeout: 30, MaxReceiveCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(pair.URL, ".fifo") || !strings.HasSuffix(pair.DLQURL, "-dlq.fifo") {
		t.Fatalf("pair = %+v", pair)
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(pair.URL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(attrs.Attributes["RedrivePolicy"], "-dlq.fifo") || attrs.Attributes["FifoQueue"] != "true" {
		t.Errorf("queue attributes = %v", attrs.Attributes)
	}
	q := NewSQS(client)
	m := Message{GroupID: "g1", DeduplicationID: "d1", Body: []byte(`{"a":1}`), Attributes: map[string]string{"reason": "x"}}
	for range 2 { // the second send is dropped by FIFO deduplication
		if _, err := q.Send(ctx, pair.URL, m); err != nil {
			t.Fatalf("Send() = %v", err)
		}
	}
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(pair.URL), MaxNumberOfMessages: 10,
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 {
		t.Fatalf("received %d messages, want 1 (deduplicated)", len(out.Messages))
	}
	got := out.Messages[0]
	if aws.ToString(got.Body) != `{"a":1}` || got.Attributes["MessageGroupId"] != "g1" || aws.ToString(got.MessageAttributes["reason"].StringValue) != "x" {
		t.Errorf("message = %+v", got)
	}
	// An event key SQS would refuse as a String travels as a Binary (moto
	// takes either; TestIdentityRoundTrip checks the type).
	ev, env, err := EventMessage("acme", "stripe", webhook.Event{ID: "evt\x01", Conversation: "c"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Send(ctx, pair.URL, ev); err != nil {
		t.Fatalf("Send(key with a control character) = %v", err)
	}
	out, err = client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(pair.URL), MessageAttributeNames: []string{"All"}, VisibilityTimeout: 0})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("ReceiveMessage() = %v, %v", out, err)
	}
	if id, ok := IdentityOf(received(out.Messages[0].MessageAttributes)); !ok || id != EnvelopeIdentity(&env) {
		t.Errorf("IdentityOf(received) = %+v, %v; want %+v", id, ok, EnvelopeIdentity(&env))
	}
	big := Message{GroupID: "g", DeduplicationID: "d2", Body: make([]byte, MaxMessageBytes+1)}
	if _, err := q.Send(ctx, pair.URL, big); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Send(too large) = %v, want ErrTooLarge", err)
	}
}

// fakeBatchAPI answers SendMessageBatch calls: entries whose body is in
// fail fail (sender's fault when the value is true), a call fails whole
// while callErr is set.
type fakeBatchAPI struct {
	sqsAPI
	calls   [][]string // bodies per call
	fail    map[string]bool
	callErr error
}

func (f *fakeBatchAPI) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	var bodies []string
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		b := aws.ToString(e.MessageBody)
		bodies = append(bodies, b)
		if sender, ok := f.fail[b]; ok {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), SenderFault: sender})
		} else if b != "lost" {
			out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
		}
	}
	f.calls = append(f.calls, bodies)
	if f.callErr != nil {
		return nil, f.callErr
	}
	return out, nil
}

func TestSendBatch(t *testing.T) {
	// msg is a message of its own conversation unless body names one
	// ("g1.a" is conversation g1's).
	msg := func(body string, size int) Message {
		group, _, _ := strings.Cut(body, ".")
		if size > len(body) {
			body += strings.Repeat("x", size-len(body))
		}
		return Message{GroupID: group, DeduplicationID: body, Body: []byte(body)}
	}
	numbered := func(n int) []Message {
		out := make([]Message, n)
		for i := range out {
			out[i] = msg(strconv.Itoa(i), 0)
		}
		return out
	}
	bodies := func(ms []Message) []string {
		var out []string
		for _, m := range ms {
			out = append(out, string(m.Body))
		}
		return out
	}
	big := func(name string) Message { return msg(name, 200*1024) }
	bigs := []Message{big("a"), big("b"), big("c"), big("d"), big("e"), big("f")}
	conv := []Message{msg("g1.a", 0), msg("g2.a", 0), msg("g1.b", 0), msg("g1.c", 0), msg("g2.b", 0)}
	tests := []struct {
		name      string
		msgs      []Message
		api       fakeBatchAPI
		wantCalls [][]string
		want      []error // per message: nil, ErrTooLarge, ErrEntryRejected, ErrNotSent or errAny
	}{
		{"25 conversations: calls of 10, 10 and 5, in order", numbered(25), fakeBatchAPI{},
			[][]string{bodies(numbered(25)[:10]), bodies(numbered(25)[10:20]), bodies(numbered(25)[20:])}, make([]error, 25)},
		{"calls stay within 1 MiB", bigs, fakeBatchAPI{}, [][]string{bodies(bigs[:5]), bodies(bigs[5:])}, make([]error, 6)},
		{"a call carries one message per conversation, the next only after it is queued", conv, fakeBatchAPI{},
			[][]string{{"g1.a", "g2.a"}, {"g1.b", "g2.b"}, {"g1.c"}}, make([]error, 5)},
		{"after a failure its conversation sends nothing more; others go on", conv, fakeBatchAPI{fail: map[string]bool{"g1.a": false}},
			[][]string{{"g1.a", "g2.a"}, {"g2.b"}}, []error{errAny, nil, ErrNotSent, ErrNotSent, nil}},
		{"behind an entry SQS refused, its conversation's later messages carry the refusal (not worth resending)", conv, fakeBatchAPI{fail: map[string]bool{"g1.a": true}},
			[][]string{{"g1.a", "g2.a"}, {"g2.b"}}, []error{ErrEntryRejected, nil, ErrEntryRejected, ErrEntryRejected, nil}},
		{"an oversized message is not sent, the others are", []Message{msg("a", 0), msg("huge", MaxMessageBytes+1), msg("b", 0)}, fakeBatchAPI{},
			[][]string{{"a", "b"}}, []error{nil, ErrTooLarge, nil}},
		{"failed entries are reported each", []Message{msg("a", 0), msg("b", 0), msg("c", 0), msg("lost", 0)}, fakeBatchAPI{fail: map[string]bool{"b": false, "c": true}},
			[][]string{{"a", "b", "c", "lost"}}, []error{nil, errAny, ErrEntryRejected, errAny}},
		{"a failed call fails its entries", numbered(2), fakeBatchAPI{callErr: errors.New("throttled")},
			[][]string{{"0", "1"}}, []error{errAny, errAny}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := tt.api
			got := NewSQS(&api).SendBatch(context.Background(), "https://sqs.local/1/q.fifo", tt.msgs)
			if !slices.EqualFunc(api.calls, tt.wantCalls, slices.Equal) {
				t.Errorf("calls = %d %v, want %d", len(api.calls), api.calls, len(tt.wantCalls))
			}
			for i, err := range got {
				want := tt.want[i]
				if (want == nil) != (err == nil) || (want != nil && want != errAny && !errors.Is(err, want)) ||
					(want == errAny && (errors.Is(err, ErrEntryRejected) || errors.Is(err, ErrTooLarge) || errors.Is(err, ErrNotSent))) {
					t.Errorf("SendBatch()[%d] = %v, want %v", i, err, want)
				}
			}
		})
	}
}

// errAny stands for a retryable error in TestSendBatch's table.
var errAny = errors.New("any retryable error")

func TestSendBatchOnMoto(t *testing.T) {
	ctx := context.Background()
	client := sqs.NewFromConfig(awstest.Config(t, awstest.Moto(t)))
	pair, err := provision.QueuePair(ctx, client, awstest.Name(t), provision.PairOptions{VisibilityTimeout: 30, MaxReceiveCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []Message
	for i := range 23 {
		msgs = append(msgs, Message{GroupID: "g", DeduplicationID: fmt.Sprint("d", i), Body: []byte(fmt.Sprint(i))})
	}
	for i, err := range NewSQS(client).SendBatch(ctx, pair.URL, msgs) {
		if err != nil {
			t.Fatalf("SendBatch()[%d] = %v", i, err)
		}
	}
	var got []string
	for len(got) < len(msgs) {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(pair.URL), MaxNumberOfMessages: 10})
		if err != nil || len(out.Messages) == 0 {
			t.Fatalf("ReceiveMessage() = %d messages, %v after %d", len(out.Messages), err, len(got))
		}
		for _, m := range out.Messages {
			got = append(got, aws.ToString(m.Body))
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(pair.URL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, b := range got {
		if b != fmt.Sprint(i) {
			t.Fatalf("received %v, want 0…22 in order", got)
		}
	}
}

// Bodies of every size API Gateway and Lambda let through reach the queue
// whole: inline up to MaxEventBytes, beyond it in S3 behind an Extended
// Client pointer that Payloads.Get reads back byte for byte.
func TestLargeEventsOnMoto(t *testing.T) {
	ctx := context.Background()
	cfg := awstest.Config(t, awstest.Moto(t))
	client := sqs.NewFromConfig(cfg)
	pair, err := provision.QueuePair(ctx, client, awstest.Name(t), provision.PairOptions{VisibilityTimeout: 30, MaxReceiveCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	bucket := provision.BucketName(awstest.Name(t))
	if err := provision.Bucket(ctx, NewS3(cfg), bucket); err != nil {
		t.Fatal(err)
	}
	payloads := NewPayloads(NewS3(cfg), bucket)
	binary := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7) | 0x80 // never valid UTF-8 runs
		}
		return b
	}
	jsonBody := func(n int) []byte { return []byte(`{"pad":"` + strings.Repeat(`\"x`, (n-10)/3) + `"}`) }
	tests := []struct {
		name      string
		body      []byte
		encoding  string
		offloaded bool
	}{
		{"200 KB JSON", jsonBody(200_000), envelope.EncodingJSON, false},
		{"200 KB non-UTF-8 (base64, 267 KB queued)", binary(200_000), envelope.EncodingBase64, false},
		{"900 KB JSON", jsonBody(900_000), envelope.EncodingJSON, false},
		{"900 KB non-UTF-8 (base64 over 1 MiB)", binary(900_000), envelope.EncodingBase64, true},
		{"3 MB JSON", jsonBody(3_000_000), envelope.EncodingJSON, true},
		{"3 MB non-UTF-8", binary(3_000_000), envelope.EncodingBase64, true},
	}
	pointerRE := regexp.MustCompile(`^\["software\.amazon\.payloadoffloading\.PayloadS3Pointer",\{"s3BucketName":"` + bucket + `","s3Key":"[^"]+"\}\]$`)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, env, err := EventMessage("acme", "hmac", webhook.Event{ID: fmt.Sprint("e", i), Conversation: "c", Body: tt.body}, time.Now())
			if err != nil || env.BodyEncoding != tt.encoding {
				t.Fatalf("EventMessage() = encoding %q, %v; want %q", env.BodyEncoding, err, tt.encoding)
			}
			if errs := NewSQS(client).SendBatch(ctx, pair.URL, []Message{m}); tt.offloaded != errors.Is(errs[0], ErrTooLarge) {
				t.Errorf("without a payload bucket: %v, want too large %v", errs[0], tt.offloaded)
			}
			q := NewSQS(client)
			q.Offload = payloads
			if errs := q.SendBatch(ctx, pair.URL, []Message{m}); errs[0] != nil {
				t.Fatalf("SendBatch() = %v", errs[0])
			}
			out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(pair.URL), MaxNumberOfMessages: 1, MessageAttributeNames: []string{"All"}})
			if err != nil || len(out.Messages) != 1 {
				t.Fatalf("ReceiveMessage() = %v, %v", out, err)
			}
			got := out.Messages[0]
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(pair.URL), ReceiptHandle: got.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
			if id, ok := IdentityOf(received(got.MessageAttributes)); !ok || id != EnvelopeIdentity(&env) {
				t.Errorf("IdentityOf(received) = %+v, %v; want %+v", id, ok, EnvelopeIdentity(&env))
			}
			body := []byte(aws.ToString(got.Body))
			if IsPointer(string(body)) != tt.offloaded {
				t.Errorf("IsPointer(received) = %v, want %v", !tt.offloaded, tt.offloaded)
			}
			size, isPointer := got.MessageAttributes[SizeAttribute]
			if isPointer != tt.offloaded {
				t.Fatalf("offloaded = %v, want %v (%d bytes queued)", isPointer, tt.offloaded, len(body))
			}
			if isPointer {
				if !pointerRE.Match(body) || aws.ToString(size.DataType) != "Number" || aws.ToString(size.StringValue) != strconv.Itoa(len(m.Body)) {
					t.Fatalf("pointer message = %s, %s %s; want the Extended Client's format and size %d", body, aws.ToString(size.DataType), aws.ToString(size.StringValue), len(m.Body))
				}
				if body, err = payloads.Get(ctx, string(body)); err != nil {
					t.Fatalf("Get() = %v", err)
				}
			}
			o, err := payloads.Stat(ctx, pair.URL, env.Key)
			if tt.offloaded && (err != nil || o.Size != int64(len(m.Body)) || o.Modified.IsZero()) {
				t.Errorf("Stat() = %+v, %v; want the %d bytes offloaded", o, err, len(m.Body))
			}
			if !tt.offloaded && !errors.Is(err, ErrPayloadGone) {
				t.Errorf("Stat() of an event SQS carried = %+v, %v; want ErrPayloadGone", o, err)
			}
			e, err := envelope.Decode(body)
			if err != nil {
				t.Fatal(err)
			}
			if raw, err := e.RawBody(); err != nil || !bytes.Equal(raw, tt.body) {
				t.Errorf("RawBody() = %d bytes, %v; want the %d bytes sent", len(raw), err, len(tt.body))
			}
		})
	}
}

func TestPayloadsGetRefuses(t *testing.T) {
	ctx := context.Background()
	cfg := awstest.Config(t, awstest.Moto(t))
	bucket := provision.BucketName(awstest.Name(t))
	if err := provision.Bucket(ctx, NewS3(cfg), bucket); err != nil {
		t.Fatal(err)
	}
	p := NewPayloads(NewS3(cfg), bucket)
	ptr := func(bucket, key string) string {
		return `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"` + bucket + `","s3Key":"` + key + `"}]`
	}
	tests := []struct {
		name, body string
		want       error
	}{
		{"not a pointer", `{"v":1}`, ErrPointer},
		{"another class", `["com.example.Pointer",{"s3BucketName":"` + bucket + `","s3Key":"k"}]`, ErrPointer},
		{"no key", ptr(bucket, ""), ErrPointer},
		{"another bucket", ptr("someone-elses", "k"), ErrPointer},
		{"expired object", ptr(bucket, "q.fifo/gone"), ErrPayloadGone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := p.Get(ctx, tt.body); !errors.Is(err, tt.want) {
				t.Errorf("Get(%s) = %v, want %v", tt.body, err, tt.want)
			}
		})
	}
}
