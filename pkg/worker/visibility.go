package worker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/queue"
)

// visibilitySlack covers the time between SQS's receive and the handler's
// start, which counts toward SQS's 12-hour visibility limit.
const visibilitySlack = time.Minute

// limitVisibility keeps each new visibility timeout inside SQS's limit:
// at most 12 hours from the receive (the batch's start), or SQS rejects the
// change and the message comes back after the queue's default. A longer
// Retry-After is honoured up to the limit; the next attempt asks again.
func (h *Handler) limitVisibility(results []result, start time.Time) {
	limit := (MaxDelay - h.cfg.Now().Sub(start) - visibilitySlack).Truncate(time.Second)
	for i := range results {
		if r := &results[i]; r.setVisibility && r.visibility > limit {
			r.visibility = max(limit, 0)
		}
	}
}

// changeVisibility applies the new visibility timeouts, ten per request
// per queue. A failure is recorded on each message's log line: the message
// then reappears after the queue's default visibility timeout instead.
func (h *Handler) changeVisibility(ctx context.Context, recs []events.SQSMessage, results []result, b budget) {
	byQueue := map[string][]int{}
	var order []string
	for i := range recs {
		if !results[i].failed || !results[i].setVisibility {
			continue
		}
		url, err := queue.URLForARN(recs[i].EventSourceARN, h.cfg.QueueURLTemplate)
		if err != nil {
			results[i].visibilityErr = err
			continue
		}
		if _, ok := byQueue[url]; !ok {
			order = append(order, url)
		}
		byQueue[url] = append(byQueue[url], i)
	}
	fctx, cancel := h.bookkeeping(ctx, b)
	defer cancel()
	for _, url := range order {
		idx := byQueue[url]
		for len(idx) > 0 {
			n := min(len(idx), 10)
			entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, n)
			for j, i := range idx[:n] {
				entries[j] = types.ChangeMessageVisibilityBatchRequestEntry{
					Id:                aws.String(strconv.Itoa(i)),
					ReceiptHandle:     aws.String(recs[i].ReceiptHandle),
					VisibilityTimeout: int32(results[i].visibility / time.Second),
				}
			}
			out, err := h.cfg.Visibility.ChangeMessageVisibilityBatch(fctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries})
			if err != nil {
				for _, i := range idx[:n] {
					results[i].visibilityErr = fmt.Errorf("change visibility: %w", err)
				}
			} else {
				for _, f := range out.Failed {
					if i, err := strconv.Atoi(aws.ToString(f.Id)); err == nil && i < len(results) {
						results[i].visibilityErr = fmt.Errorf("change visibility: %s", aws.ToString(f.Code))
					}
				}
			}
			idx = idx[n:]
		}
	}
}
