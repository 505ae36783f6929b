package inspect

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	cwltypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
)

// Delivery is one ingest log line naming the event: when a delivery of it
// arrived and what the ingest answered. It comes from the ingest's one line
// per request (package ingest), so finding it costs the ingest nothing.
type Delivery struct {
	// Time is when the delivery arrived: the line's time, written when the
	// ingest answered, less its durationMs. The worker may log the event's
	// first attempt before the ingest's line is written.
	Time     time.Time `json:"time"`
	Provider string    `json:"provider"`
	// EventID is the id the ingest answered with (the sender's id, signed
	// or not).
	EventID string `json:"eventId"`
	// Key is the event's idempotency key.
	Key     string `json:"idempotencyKey"`
	Outcome string `json:"outcome"`
	Status  int    `json:"status"`
}

// deliveryLog finds the ingest log lines of tenant that name id.
type deliveryLog interface {
	Deliveries(ctx context.Context, tenant, id string) ([]Delivery, error)
}

// ingestLine is the part of the ingest's log line (package ingest) that
// names events.
type ingestLine struct {
	Time     time.Time `json:"time"`
	Msg      string    `json:"msg"`
	Tenant   string    `json:"tenantId"`
	Provider string    `json:"provider"`
	Outcome  string    `json:"outcome"`
	Status   int       `json:"status"`
	Duration float64   `json:"durationMs"`
	EventID  string    `json:"eventId"`
	DedupID  string    `json:"dedupId"`
	EventIDs []string  `json:"eventIds"`
}

var hashSuffixRE = regexp.MustCompile(`=(sha256:[0-9a-f]{64})$`)

// MatchLine returns the deliveries of the ingest log line that name id for
// tenant: id is an event's eventId (what the ingest answered), its
// idempotency key or the key's last part, or one ':'-separated part of the
// eventId (Shopify's event id in "orders/create:<id>", Twilio's MessageSid
// in "<sid>:delivered"). Other lines, and lines that are not JSON, return
// nothing.
func MatchLine(line []byte, tenant, id string) []Delivery {
	var l ingestLine
	if id == "" || json.Unmarshal(line, &l) != nil || l.Msg != "webhook" || l.Tenant != tenant {
		return nil
	}
	type event struct{ id, dedup, outcome string }
	var evs []event
	if len(l.EventIDs) == 0 {
		if l.EventID != "" {
			evs = append(evs, event{l.EventID, l.DedupID, l.Outcome})
		}
	}
	for _, e := range l.EventIDs { // "eventId=outcome[=dedupId]"
		var dedup string
		if m := hashSuffixRE.FindStringSubmatch(e); m != nil {
			dedup, e = m[1], strings.TrimSuffix(e, m[0])
		}
		i := strings.LastIndexByte(e, '=')
		if i < 0 {
			continue
		}
		evs = append(evs, event{e[:i], dedup, e[i+1:]})
	}
	var out []Delivery
	arrived := l.Time.Add(-time.Duration(l.Duration * float64(time.Millisecond)))
	prefix := l.Tenant + "#" + l.Provider + "#"
	for _, e := range evs {
		key := prefix + e.id
		if e.dedup != "" {
			key = prefix + e.dedup
		}
		if id == e.id || id == key || id == strings.TrimPrefix(key, prefix) || slices.Contains(strings.Split(e.id, ":"), id) {
			out = append(out, Delivery{Time: arrived, Provider: l.Provider, EventID: e.id, Key: key, Outcome: e.outcome, Status: l.Status})
		}
	}
	return out
}

// LogFile is a local stack's functions' log: the ingest's and the
// worker's JSON lines, as CloudWatch would receive them, one per line
// (`make run` writes it, the worker's at DEBUG too).
type LogFile struct{ Path string }

var (
	_ deliveryLog = LogFile{}
	_ runLog      = LogFile{}
)

// Deliveries reads the whole file. A missing file is an error naming it.
func (f LogFile) Deliveries(_ context.Context, tenant, id string) ([]Delivery, error) {
	var out []Delivery
	err := f.each(func(line []byte) { out = append(out, MatchLine(line, tenant, id)...) })
	return out, err
}

// Runs reads the whole file. A missing file is an error naming it.
func (f LogFile) Runs(_ context.Context, tenant, key string) ([]Run, error) {
	var out []Run
	err := f.each(func(line []byte) {
		if r, ok := MatchRun(line, tenant, key); ok {
			out = append(out, r)
		}
	})
	return out, err
}

// each calls fn with each line of the file.
func (f LogFile) each(fn func(line []byte)) error {
	file, err := os.Open(f.Path)
	if err != nil {
		return fmt.Errorf("functions' log: %w", err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fn(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("functions' log %s: %w", f.Path, err)
	}
	return nil
}

// insightsAPI runs CloudWatch Logs Insights queries.
type insightsAPI interface {
	StartQuery(ctx context.Context, in *cloudwatchlogs.StartQueryInput, opts ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.StartQueryOutput, error)
	GetQueryResults(ctx context.Context, in *cloudwatchlogs.GetQueryResultsInput, opts ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.GetQueryResultsOutput, error)
}

// Insights searches a deployed stack's ingest log group (Deliveries) or
// worker log group (Runs) with CloudWatch Logs Insights: one StartQuery,
// then GetQueryResults until it completes. Logs Insights bills the bytes
// it scans ($0.005 per GB): Since bounds them.
type Insights struct {
	Client   insightsAPI
	LogGroup string
	// Since is how far back to search (default 14 days).
	Since time.Duration
	// Limit bounds the lines returned (default 100).
	Limit int32
	// Poll is the wait between GetQueryResults calls (default 1 s).
	Poll time.Duration
	Now  func() time.Time
}

var (
	_ deliveryLog = (*Insights)(nil)
	_ runLog      = (*Insights)(nil)
)

// IngestLogGroup is the core stack's ingest log group (template.yaml).
func IngestLogGroup(stack string) string { return "/hookpack/" + stack + "/ingest" }

// WorkerLogGroup is the core stack's worker log group (template.yaml).
func WorkerLogGroup(stack string) string { return "/hookpack/" + stack + "/worker" }

// safeIDRE are the ids a query may quote without escaping.
var safeIDRE = regexp.MustCompile(`^[A-Za-z0-9._:#/+=@-]{1,200}$`)

// ErrQueryFailed: a Logs Insights query ended Failed, Cancelled or Timeout.
var ErrQueryFailed = errors.New("logs insights query did not complete")

// Query returns the Logs Insights query for id: ingest lines of tenant
// whose text holds id; MatchLine then keeps exact matches.
func (s *Insights) Query(tenant, id string) (string, error) {
	if !safeIDRE.MatchString(id) {
		return "", fmt.Errorf("%w id %q: it has characters an id never has", ErrMalformed, id)
	}
	return fmt.Sprintf("fields @timestamp, @message | filter msg = \"webhook\" and tenantId = \"%s\" and @message like \"%s\" | sort @timestamp desc | limit %d",
		tenant, id, s.limit()), nil
}

func (s *Insights) limit() int32 {
	if s.Limit <= 0 {
		return 100
	}
	return s.Limit
}

// RunQuery returns the Logs Insights query for the worker lines of the
// event key of tenant, oldest first.
func (s *Insights) RunQuery(tenant, key string) (string, error) {
	if !safeIDRE.MatchString(key) {
		return "", fmt.Errorf("%w key %q: it has characters a key never has", ErrMalformed, key)
	}
	return fmt.Sprintf("fields @timestamp, @message | filter msg = \"message\" and tenantId = \"%s\" and idempotencyKey = \"%s\" | sort @timestamp asc | limit %d",
		tenant, key, s.limit()), nil
}

// Deliveries runs Query and waits for it; it returns a wrapped AWS error,
// ErrQueryFailed, or ctx's error.
func (s *Insights) Deliveries(ctx context.Context, tenant, id string) ([]Delivery, error) {
	q, err := s.Query(tenant, id)
	if err != nil {
		return nil, err
	}
	var out []Delivery
	err = s.run(ctx, q, func(m string) { out = append(out, MatchLine([]byte(m), tenant, id)...) })
	return out, err
}

// Runs runs RunQuery and waits for it; it returns a wrapped AWS error,
// ErrQueryFailed, or ctx's error.
func (s *Insights) Runs(ctx context.Context, tenant, key string) ([]Run, error) {
	q, err := s.RunQuery(tenant, key)
	if err != nil {
		return nil, err
	}
	var out []Run
	err = s.run(ctx, q, func(m string) {
		if r, ok := MatchRun([]byte(m), tenant, key); ok {
			out = append(out, r)
		}
	})
	return out, err
}

// run runs query q and calls fn with the @message of each row.
func (s *Insights) run(ctx context.Context, q string, fn func(message string)) error {
	now, since, poll := time.Now, s.Since, s.Poll
	if s.Now != nil {
		now = s.Now
	}
	if since <= 0 {
		since = 14 * 24 * time.Hour
	}
	if poll <= 0 {
		poll = time.Second
	}
	end := now()
	start, err := s.Client.StartQuery(ctx, &cloudwatchlogs.StartQueryInput{
		LogGroupName: aws.String(s.LogGroup),
		QueryString:  aws.String(q),
		StartTime:    aws.Int64(end.Add(-since).Unix()),
		EndTime:      aws.Int64(end.Unix() + 1),
		Limit:        aws.Int32(s.limit()),
	})
	if err != nil {
		return fmt.Errorf("logs insights on %s: %w", s.LogGroup, err)
	}
	for {
		res, err := s.Client.GetQueryResults(ctx, &cloudwatchlogs.GetQueryResultsInput{QueryId: start.QueryId})
		if err != nil {
			return fmt.Errorf("logs insights results: %w", err)
		}
		switch res.Status {
		case cwltypes.QueryStatusComplete:
			for _, row := range res.Results {
				for _, f := range row {
					if aws.ToString(f.Field) == "@message" {
						fn(aws.ToString(f.Value))
					}
				}
			}
			return nil
		case cwltypes.QueryStatusFailed, cwltypes.QueryStatusCancelled, cwltypes.QueryStatusTimeout:
			return fmt.Errorf("%w: %s on %s", ErrQueryFailed, res.Status, s.LogGroup)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}
