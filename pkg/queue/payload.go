package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// Bodies over MaxEventBytes go to S3 and the message carries a pointer to
// them in the format of the Amazon SQS Extended Client Library (Java,
// Python, .NET), so those clients can read a DLQ of this pack as well:
//
//	body:       ["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"…","s3Key":"…"}]
//	attribute:  ExtendedPayloadSize (Number) = the body's size in bytes
//
// A pointer is recognised by its body alone (IsPointer): a message re-sent
// by hand with its body but not its attributes is still one.
const (
	pointerClass = "software.amazon.payloadoffloading.PayloadS3Pointer"
	// SizeAttribute is the Extended Client's reserved message attribute,
	// written with every pointer so those clients know it for one; this
	// pack does not need it to (IsPointer). Copy it with the body.
	SizeAttribute = "ExtendedPayloadSize"
	// MaxOffloadBytes bounds an offloaded body: above anything a Lambda
	// invocation (6 MB) can carry, base64 included.
	MaxOffloadBytes = 16 << 20
)

// ErrPointer is returned for a pointer message that cannot name a payload
// of this deployment (malformed, or another bucket); ErrPayloadGone for one
// whose object no longer exists (expired by the bucket's lifecycle). Both
// are permanent.
var (
	ErrPointer     = errors.New("invalid payload pointer")
	ErrPayloadGone = errors.New("offloaded payload not found")
)

type objectAPI interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

// Payloads stores and reads offloaded message bodies in one S3 bucket
// (encrypted and expired by the bucket's own settings, template.yaml).
type Payloads struct {
	client objectAPI
	bucket string
}

// NewPayloads returns the payload store of bucket.
func NewPayloads(client objectAPI, bucket string) *Payloads {
	return &Payloads{client: client, bucket: bucket}
}

type pointer struct {
	Bucket string `json:"s3BucketName"`
	Key    string `json:"s3Key"`
}

// offload stores m's body under a key derived from the queue and m's
// deduplication id (a resend overwrites the same object with the same
// bytes) and returns m carrying the pointer instead.
func (p *Payloads) offload(ctx context.Context, queue string, m Message) (Message, error) {
	key := objectKey(queue, m.DeduplicationID)
	_, err := p.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(p.bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(m.Body),
		ContentLength: aws.Int64(int64(len(m.Body))),
		ContentType:   aws.String("application/json"),
	})
	if err != nil {
		return m, fmt.Errorf("offload %d bytes to s3://%s/%s: %w", len(m.Body), p.bucket, key, err)
	}
	body, err := json.Marshal([]any{pointerClass, pointer{Bucket: p.bucket, Key: key}})
	if err != nil {
		return m, err
	}
	attrs := maps.Clone(m.Attributes)
	if attrs == nil {
		attrs = map[string]string{}
	}
	attrs[SizeAttribute] = strconv.Itoa(len(m.Body))
	return Message{GroupID: m.GroupID, DeduplicationID: m.DeduplicationID, Body: body, Attributes: attrs}, nil
}

// objectKey names the object of a message offloaded from queue (a queue
// name) under its deduplication id.
func objectKey(queue, deduplicationID string) string { return queue + "/" + deduplicationID }

// Object describes an offloaded body.
type Object struct {
	Bucket, Key string
	Size        int64
	Modified    time.Time
}

// Stat returns the object the body of the event with idempotency key
// eventKey was offloaded to when it was sent to the queue at queueURL,
// without reading it (one HeadObject). It returns an error wrapping
// ErrPayloadGone when there is none (the event was small enough for SQS, or
// the bucket's lifecycle expired it), or a wrapped S3 error.
func (p *Payloads) Stat(ctx context.Context, queueURL, eventKey string) (Object, error) {
	o := Object{Bucket: p.bucket, Key: objectKey(queueName(queueURL), webhook.DeduplicationID(eventKey))}
	out, err := p.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(o.Bucket), Key: aws.String(o.Key)})
	var missing *types.NotFound
	var noKey *types.NoSuchKey
	if errors.As(err, &missing) || errors.As(err, &noKey) {
		return o, fmt.Errorf("%w: s3://%s/%s", ErrPayloadGone, o.Bucket, o.Key)
	}
	if err != nil {
		return o, fmt.Errorf("stat payload s3://%s/%s: %w", o.Bucket, o.Key, err)
	}
	o.Size = aws.ToInt64(out.ContentLength)
	o.Modified = aws.ToTime(out.LastModified)
	return o, nil
}

// IsPointer reports whether body is an Extended Client pointer: a JSON
// array of the pointer class and an object naming a bucket and a key,
// whatever the message's attributes. An envelope (a JSON object) never is,
// whatever it contains; deciding costs nothing for a body that does not
// start with '['.
func IsPointer(body string) bool {
	_, ok := parsePointer(body)
	return ok
}

// parsePointer returns the object body points to, if it is a pointer.
func parsePointer(body string) (pointer, bool) {
	if t := strings.TrimLeft(body, " \t\r\n"); t == "" || t[0] != '[' {
		return pointer{}, false
	}
	var ptr pointer
	var parts []json.RawMessage
	var class string
	if json.Unmarshal([]byte(body), &parts) != nil || len(parts) != 2 ||
		json.Unmarshal(parts[0], &class) != nil || class != pointerClass ||
		json.Unmarshal(parts[1], &ptr) != nil || ptr.Bucket == "" || ptr.Key == "" {
		return pointer{}, false
	}
	return ptr, true
}

// Get returns the body a pointer message stands for. It returns an error
// wrapping ErrPointer when pointerBody is not a pointer (IsPointer) or
// names another bucket, ErrPayloadGone when the object no longer exists
// (both permanent), or a wrapped S3 error (access denied, throttled, …:
// the object may be readable later).
func (p *Payloads) Get(ctx context.Context, pointerBody string) ([]byte, error) {
	ptr, ok := parsePointer(pointerBody)
	if !ok {
		return nil, fmt.Errorf("%w: not an S3 payload pointer", ErrPointer)
	}
	if ptr.Bucket != p.bucket {
		return nil, fmt.Errorf("%w: bucket %q is not this deployment's %q", ErrPointer, ptr.Bucket, p.bucket)
	}
	out, err := p.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(ptr.Bucket), Key: aws.String(ptr.Key)})
	var missing *types.NoSuchKey
	if errors.As(err, &missing) {
		return nil, fmt.Errorf("%w: s3://%s/%s (expired by the bucket's lifecycle?)", ErrPayloadGone, ptr.Bucket, ptr.Key)
	}
	if err != nil {
		return nil, fmt.Errorf("read payload s3://%s/%s: %w", ptr.Bucket, ptr.Key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("read payload s3://%s/%s: %w", ptr.Bucket, ptr.Key, err)
	}
	return b, nil
}

// NewS3 returns the S3 client of cfg for Payloads. Against an endpoint
// override (emulators) it addresses buckets by path, as they expect; in
// AWS by virtual host. An object without a checksum is read without a log
// line (the SDK's default would print one per read to the function's log).
func NewS3(cfg aws.Config) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = o.BaseEndpoint != nil
		o.DisableLogOutputChecksumValidationSkipped = true
	})
}
