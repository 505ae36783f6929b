package samples

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// WorkerOptions configure WorkerBatch.
type WorkerOptions struct {
	Tenant    string
	Providers map[string]webhook.Config
	Registry  webhook.Registry
	// QueueARN is the eventSourceARN of the records: the tenant's queue.
	QueueARN string
	Now      time.Time
	// Sequence is every record's SequenceNumber. The default, 0, is below
	// every number SQS assigns, so a sample batch invoked against a stack
	// never fences off the real messages of its conversations (the ledger
	// refuses a writer older than the conversation's last); a larger one
	// plays the same events enqueued again.
	Sequence int64
}

// WorkerBatch turns the samples' deliveries (handshakes excluded) into the
// SQS FIFO event the worker's event source mapping delivers: the events
// the ingest path would queue for them (built with queue.EventMessage, so they
// cannot drift from it), in sample order, at most 10 records as a FIFO
// mapping delivers.
func WorkerBatch(samples []providertest.Sample, o WorkerOptions) (events.SQSEvent, error) {
	var ev events.SQSEvent
	for _, s := range samples {
		p, ok := o.Registry.Lookup(s.Provider)
		if !ok {
			return ev, fmt.Errorf("%w: %s", ErrUnknownProvider, s.Provider)
		}
		cfg, ok := o.Providers[s.Provider]
		if !ok {
			return ev, fmt.Errorf("%w: %s", ErrNotEnabled, s.Provider)
		}
		req := s.Request()
		if h, isH := p.(webhook.Handshaker); isH {
			if _, ok, _ := h.Handshake(req, s.TenantConfig); ok {
				continue
			}
		}
		if req.Method != "POST" {
			continue
		}
		evs, err := p.Events(req, cfg)
		if err != nil {
			return ev, fmt.Errorf("%s/%s: %w", s.Provider, s.Name, err)
		}
		for _, e := range evs {
			if len(ev.Records) == 10 {
				return ev, nil
			}
			m, _, err := queue.EventMessage(o.Tenant, s.Provider, e, o.Now)
			if err != nil {
				return ev, fmt.Errorf("%s/%s: %w", s.Provider, s.Name, err)
			}
			sum := sha256.Sum256(m.Body)
			ms := strconv.FormatInt(o.Now.UnixMilli(), 10)
			ev.Records = append(ev.Records, events.SQSMessage{
				MessageId:     messageID(m.DeduplicationID),
				ReceiptHandle: "local-" + m.DeduplicationID[:16],
				Body:          string(m.Body),
				Md5OfBody:     hex.EncodeToString(sum[:16]),
				Attributes: map[string]string{
					"ApproximateReceiveCount":          "1",
					"SentTimestamp":                    ms,
					"SenderId":                         "AROAEXAMPLE:hookpack-ingest",
					"ApproximateFirstReceiveTimestamp": ms,
					"SequenceNumber":                   strconv.FormatInt(o.Sequence, 10),
					"MessageGroupId":                   m.GroupID,
					"MessageDeduplicationId":           m.DeduplicationID,
				},
				MessageAttributes: map[string]events.SQSMessageAttribute{},
				EventSource:       "aws:sqs",
				EventSourceARN:    o.QueueARN,
				AWSRegion:         "us-east-1",
			})
		}
	}
	return ev, nil
}

// messageID formats a stable UUID-shaped id from a hex digest.
func messageID(h string) string {
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// WriteWorker writes ev as dir/sqs-batch.json.
func WriteWorker(dir string, ev events.SQSEvent) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "sqs-batch.json")
	return path, os.WriteFile(path, append(b, '\n'), 0o644)
}
