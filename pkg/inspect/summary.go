package inspect

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/hookpack/hookpack/pkg/destination"
)

// metricAPI reads CloudWatch's SQS metrics.
type metricAPI interface {
	GetMetricStatistics(ctx context.Context, in *cloudwatch.GetMetricStatisticsInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricStatisticsOutput, error)
}

// Summary is a tenant's state at a glance.
type Summary struct {
	Tenant string `json:"tenant"`
	Queue  Depth  `json:"queue"`
	// OldestMessageAgeSeconds is the latest ApproximateAgeOfOldestMessage of
	// the tenant's queue in CloudWatch (a metric, not a queue attribute;
	// nil without Metrics or without a datapoint in the last 15 minutes).
	OldestMessageAgeSeconds *float64 `json:"oldestMessageAgeSeconds,omitempty"`
	// OldestDeadLetter is when the oldest dead letter listed was sent to
	// the DLQ, and DeadLetterExpires when the DLQ's retention deletes it
	// (for a message SQS moved itself, the retention counts from its first
	// send, so it goes sooner).
	OldestDeadLetter  *time.Time `json:"oldestDeadLetter,omitempty"`
	DeadLetterExpires *time.Time `json:"deadLetterExpires,omitempty"`
	// Reasons counts the listed dead letters by reason, most frequent first.
	Reasons []ReasonCount `json:"reasons,omitempty"`
	// Destinations are the tenant's destinations (none for a targetUrl):
	// each one's rate, limiter and when the backlog drains at its rate.
	Destinations []DestinationSummary `json:"destinations,omitempty"`
	// Now is when the summary was taken.
	Now   time.Time `json:"now"`
	Notes []string  `json:"notes,omitempty"`
}

// ReasonCount is how many dead letters share a reason.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// Summarize returns the tenant's queue depth, in-flight and dead-letter
// counts (queue attributes), its oldest dead letter and the reasons (a DLQ
// listing, only when the DLQ holds messages) and, with Metrics, the age of
// its oldest queued message, and for each of the tenant's destinations
// (Config.Outbound) its rate, its limiter's state (Config.Limits: one
// GetItem per rated destination), whether it is paused or failing
// (Config.Pauses: one GetItem) and when the backlog drains at its rate,
// taking every queued message as that destination's. An outbound
// configuration that cannot be read is a note. It returns an error wrapping ErrMalformed
// (CheckTenant) or ErrUnknownTenant, or a wrapped AWS error.
func (in *Inspector) Summarize(ctx context.Context, tenantID string) (Summary, error) {
	if err := CheckTenant(tenantID); err != nil {
		return Summary{}, err
	}
	s := Summary{Tenant: tenantID, Now: in.cfg.Now()}
	var err error
	if s.Queue, err = in.depth(ctx, tenantID); err != nil {
		return s, err
	}
	dead, notes, err := in.deadLetters(ctx, s.Queue)
	if err != nil {
		return s, err
	}
	s.Notes = notes
	counts := map[string]int{}
	for _, it := range dead {
		counts[it.Reason]++
		if !it.SentAt.IsZero() && (s.OldestDeadLetter == nil || it.SentAt.Before(*s.OldestDeadLetter)) {
			sent := it.SentAt
			s.OldestDeadLetter = &sent
		}
	}
	for r, n := range counts {
		s.Reasons = append(s.Reasons, ReasonCount{Reason: r, Count: n})
	}
	slices.SortFunc(s.Reasons, func(a, b ReasonCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Reason, b.Reason)
	})
	if s.OldestDeadLetter != nil && s.Queue.DeadLetterRetentionSeconds > 0 {
		exp := s.OldestDeadLetter.Add(time.Duration(s.Queue.DeadLetterRetentionSeconds) * time.Second)
		s.DeadLetterExpires = &exp
	}
	dests, note := in.destinations(ctx, tenantID)
	if note != "" {
		s.Notes = append(s.Notes, note)
	}
	backlog := s.Queue.Visible + s.Queue.InFlight + s.Queue.Delayed
	var states destination.States
	if in.cfg.Pauses != nil && len(dests) > 0 {
		if states, err = in.cfg.Pauses.States(ctx, tenantID); err != nil {
			s.Notes = append(s.Notes, "the destinations' pauses could not be read: "+err.Error())
		}
	}
	for _, d := range dests {
		p, err := in.pace(ctx, tenantID, d, backlog, s.Now)
		if err != nil {
			return s, err
		}
		s.Destinations = append(s.Destinations, p.withState(states[d.Name]))
	}
	if in.cfg.Metrics == nil {
		s.Notes = append(s.Notes, "oldest message age: a CloudWatch metric (ApproximateAgeOfOldestMessage), which a local stack does not have")
		return s, nil
	}
	if s.OldestMessageAgeSeconds, err = in.oldestAge(ctx, s.Queue.QueueURL); err != nil {
		return s, err
	}
	if s.OldestMessageAgeSeconds == nil {
		s.Notes = append(s.Notes, "oldest message age: no ApproximateAgeOfOldestMessage datapoint in the last 15 minutes")
	}
	return s, nil
}

// oldestAge returns the latest one-minute maximum of the queue's
// ApproximateAgeOfOldestMessage, or nil when there is none.
func (in *Inspector) oldestAge(ctx context.Context, queueURL string) (*float64, error) {
	now := in.cfg.Now()
	name := queueURL[strings.LastIndexByte(queueURL, '/')+1:]
	out, err := in.cfg.Metrics.GetMetricStatistics(ctx, &cloudwatch.GetMetricStatisticsInput{
		Namespace:  aws.String("AWS/SQS"),
		MetricName: aws.String("ApproximateAgeOfOldestMessage"),
		Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String(name)}},
		StartTime:  aws.Time(now.Add(-15 * time.Minute)),
		EndTime:    aws.Time(now),
		Period:     aws.Int32(60),
		Statistics: []cwtypes.Statistic{cwtypes.StatisticMaximum},
	})
	if err != nil {
		return nil, fmt.Errorf("ApproximateAgeOfOldestMessage of %s: %w", name, err)
	}
	var latest *cwtypes.Datapoint
	for i, p := range out.Datapoints {
		if p.Timestamp != nil && p.Maximum != nil && (latest == nil || p.Timestamp.After(*latest.Timestamp)) {
			latest = &out.Datapoints[i]
		}
	}
	if latest == nil {
		return nil, nil
	}
	return latest.Maximum, nil
}
