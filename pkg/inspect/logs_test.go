package inspect_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	cwltypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"

	"github.com/hookpack/hookpack/pkg/inspect"
	"github.com/hookpack/hookpack/pkg/local/awstest"
)

const hash = "sha256:05d522eee04d26df544e1dd26acf78b44d07ee7df30ab952d7bc895162761b5b"

func TestMatchLine(t *testing.T) {
	github := `{"time":"2026-11-27T04:43:53Z","msg":"webhook","tenantId":"demo","provider":"github","outcome":"accepted","status":200,"eventId":"4f2c1a60-0001","dedupId":"` + hash + `"}`
	shopify := `{"msg":"webhook","tenantId":"demo","provider":"shopify","outcome":"duplicate","status":200,"eventId":"orders/create:98880550-7158-44d4:b54557e4-bdd9","dedupId":"` + hash + `"}`
	twilio := `{"msg":"webhook","tenantId":"demo","provider":"twilio","outcome":"accepted","status":200,"eventId":"SM5f3c:delivered"}`
	stripe := `{"msg":"webhook","tenantId":"demo","provider":"stripe","outcome":"accepted","status":200,"eventId":"evt_1"}`
	batch := `{"msg":"webhook","tenantId":"demo","provider":"hmac","outcome":"accepted","status":200,"eventId":"a","events":2,"eventIds":["a=accepted","tr:1=duplicate=` + hash + `"]}`
	tests := []struct {
		name, line, tenant, id string
		want                   []string // keys
	}{
		{"github delivery id", github, "demo", "4f2c1a60-0001", []string{"demo#github#" + hash}},
		{"github key", github, "demo", "demo#github#" + hash, []string{"demo#github#" + hash}},
		{"github content hash", github, "demo", hash, []string{"demo#github#" + hash}},
		{"another tenant", github, "acme", "4f2c1a60-0001", nil},
		{"a part of an id", github, "demo", "4f2c1a60", nil},
		{"shopify event id", shopify, "demo", "98880550-7158-44d4", []string{"demo#shopify#" + hash}},
		{"shopify webhook id", shopify, "demo", "b54557e4-bdd9", []string{"demo#shopify#" + hash}},
		{"shopify eventId", shopify, "demo", "orders/create:98880550-7158-44d4:b54557e4-bdd9", []string{"demo#shopify#" + hash}},
		{"twilio MessageSid", twilio, "demo", "SM5f3c", []string{"demo#twilio#SM5f3c:delivered"}},
		{"stripe evt_", stripe, "demo", "evt_1", []string{"demo#stripe#evt_1"}},
		{"batch, signed id", batch, "demo", "a", []string{"demo#hmac#a"}},
		{"batch, unsigned id", batch, "demo", "tr:1", []string{"demo#hmac#" + hash}},
		{"not the ingest's line", `{"msg":"message","tenantId":"demo","eventId":"evt_1"}`, "demo", "evt_1", nil},
		{"not JSON", `evt_1`, "demo", "evt_1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, d := range inspect.MatchLine([]byte(tt.line), tt.tenant, tt.id) {
				got = append(got, d.Key)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("MatchLine(%s, %q) = %q, want %q", tt.line, tt.id, got, tt.want)
			}
		})
	}
}

// A delivery is dated when it arrived: its line is written when the ingest
// answered, which may be after the worker's first attempt.
func TestMatchLineArrival(t *testing.T) {
	line := `{"time":"2026-11-27T04:43:53.5Z","msg":"webhook","tenantId":"demo","provider":"stripe","outcome":"accepted","status":200,"durationMs":250.5,"eventId":"evt_1"}`
	got := inspect.MatchLine([]byte(line), "demo", "evt_1")
	want := time.Date(2026, 11, 27, 4, 43, 53, 249500000, time.UTC)
	if len(got) != 1 || !got[0].Time.Equal(want) {
		t.Errorf("MatchLine(%s) = %+v, want one delivery arrived at %s", line, got, want)
	}
}

func TestLogFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "functions.log")
	lines := `{"msg":"webhook","tenantId":"demo","provider":"github","outcome":"accepted","status":200,"eventId":"d1","dedupId":"` + hash + `"}
{"msg":"message","tenantId":"demo","eventId":"d1"}
{"msg":"webhook","tenantId":"demo","provider":"github","outcome":"duplicate","status":200,"eventId":"d1","dedupId":"` + hash + `"}
`
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := inspect.LogFile{Path: path}.Deliveries(context.Background(), "demo", "d1")
	if err != nil || len(got) != 2 || got[0].Outcome != "accepted" || got[1].Outcome != "duplicate" {
		t.Errorf("Deliveries() = %+v, %v; want the accepted and the duplicate line", got, err)
	}
	// One MessageSid, two statuses: two events, both listed.
	twilio := `{"msg":"webhook","tenantId":"demo","provider":"twilio","outcome":"accepted","status":200,"eventId":"SM1:sent"}
{"msg":"webhook","tenantId":"demo","provider":"twilio","outcome":"accepted","status":200,"eventId":"SM1:delivered"}
`
	if err := os.WriteFile(path, []byte(twilio), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err = inspect.LogFile{Path: path}.Deliveries(context.Background(), "demo", "SM1")
	if err != nil || len(got) != 2 || got[0].Key != "demo#twilio#SM1:sent" || got[1].Key != "demo#twilio#SM1:delivered" {
		t.Errorf("Deliveries(SM1) = %+v, %v; want both statuses' events", got, err)
	}
	if _, err := (inspect.LogFile{Path: path + ".none"}).Deliveries(context.Background(), "demo", "d1"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Deliveries() of a missing file = %v, want ErrNotExist", err)
	}
}

// insights answers a query Running, then with rows.
type insights struct {
	query  string
	start  time.Time
	polls  int
	status cwltypes.QueryStatus
	rows   []string
}

func (f *insights) StartQuery(_ context.Context, in *cloudwatchlogs.StartQueryInput, _ ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.StartQueryOutput, error) {
	f.query, f.start = aws.ToString(in.QueryString), time.Unix(aws.ToInt64(in.StartTime), 0)
	return &cloudwatchlogs.StartQueryOutput{QueryId: aws.String("q1")}, nil
}

func (f *insights) GetQueryResults(_ context.Context, in *cloudwatchlogs.GetQueryResultsInput, _ ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.GetQueryResultsOutput, error) {
	f.polls++
	if f.polls == 1 {
		return &cloudwatchlogs.GetQueryResultsOutput{Status: cwltypes.QueryStatusRunning}, nil
	}
	out := &cloudwatchlogs.GetQueryResultsOutput{Status: f.status}
	for _, r := range f.rows {
		out.Results = append(out.Results, []cwltypes.ResultField{{Field: aws.String("@timestamp"), Value: aws.String("x")}, {Field: aws.String("@message"), Value: aws.String(r)}})
	}
	return out, nil
}

func TestInsights(t *testing.T) {
	now := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	row := `{"msg":"webhook","tenantId":"acme","provider":"github","outcome":"accepted","status":200,"eventId":"d1","dedupId":"` + hash + `"}`
	f := &insights{status: cwltypes.QueryStatusComplete, rows: []string{row, strings.Replace(row, `"d1"`, `"d10"`, 1)}}
	s := &inspect.Insights{Client: f, LogGroup: inspect.IngestLogGroup("hookpack"), Since: 48 * time.Hour, Poll: time.Millisecond, Now: func() time.Time { return now }}
	got, err := s.Deliveries(context.Background(), "acme", "d1")
	if err != nil || len(got) != 1 || got[0].Key != "acme#github#"+hash {
		t.Fatalf("Deliveries() = %+v, %v; want the one line of d1", got, err)
	}
	for _, want := range []string{`msg = "webhook"`, `tenantId = "acme"`, `@message like "d1"`} {
		if !strings.Contains(f.query, want) {
			t.Errorf("query %q lacks %s", f.query, want)
		}
	}
	if !f.start.Equal(now.Add(-48 * time.Hour)) {
		t.Errorf("query starts %s, want Since before now", f.start)
	}
	if _, err := s.Deliveries(context.Background(), "acme", `d1" or 1=1`); !errors.Is(err, inspect.ErrMalformed) {
		t.Errorf("an id with quotes: %v, want ErrMalformed", err)
	}
	failed := &insights{status: cwltypes.QueryStatusFailed}
	s.Client = failed
	if _, err := s.Deliveries(context.Background(), "acme", "d1"); !errors.Is(err, inspect.ErrQueryFailed) {
		t.Errorf("a failed query: %v, want ErrQueryFailed", err)
	}
}

// The log groups the inspector searches are the ones template.yaml gives
// the ingest and the worker.
func TestLogGroupsAreTheTemplates(t *testing.T) {
	tpl, err := os.ReadFile(filepath.Join(awstest.ModuleRoot(), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, group := range []func(string) string{inspect.IngestLogGroup, inspect.WorkerLogGroup} {
		want := strings.Replace(group("STACK"), "STACK", "${AWS::StackName}", 1)
		if !strings.Contains(string(tpl), "LogGroupName: !Sub "+want) {
			t.Errorf("template.yaml names no log group %s", want)
		}
	}
}

func TestMatchRun(t *testing.T) {
	const key = "demo#stripe#evt_1"
	line := `{"time":"2026-11-27T04:43:54Z","level":"WARN","msg":"message","messageId":"m1","outcome":"retried","receiveCount":2,"durationMs":12,` +
		`"groupId":"cus_1","tenantId":"demo","provider":"stripe","eventId":"evt_1","idempotencyKey":"` + key + `","attempt":2,"error":"answered 503"}`
	tests := []struct {
		name, line, tenant, key string
		want                    inspect.Run
		ok                      bool
	}{
		{"a worker line", line, "demo", key, inspect.Run{Time: time.Date(2026, 11, 27, 4, 43, 54, 0, time.UTC), MessageID: "m1", Outcome: "retried",
			ReceiveCount: 2, Attempt: 2, Error: "answered 503", DurationMs: 12}, true},
		{"a replay's line", `{"time":"2026-11-27T04:43:54Z","level":"INFO","msg":"message","messageId":"m2","outcome":"processed","receiveCount":1,` +
			`"tenantId":"demo","idempotencyKey":"` + key + `","replayedBy":"scripts/replay","replayOf":"d1"}`, "demo", key,
			inspect.Run{Time: time.Date(2026, 11, 27, 4, 43, 54, 0, time.UTC), MessageID: "m2", Outcome: "processed", ReceiveCount: 1,
				ReplayedBy: "scripts/replay", ReplayOf: "d1"}, true},
		{"a backoff set: visible again after it", strings.Replace(line, `"attempt":2`, `"attempt":2,"visibilitySec":40`, 1), "demo", key,
			inspect.Run{Time: time.Date(2026, 11, 27, 4, 43, 54, 0, time.UTC), MessageID: "m1", Outcome: "retried", ReceiveCount: 2, Attempt: 2, Error: "answered 503", DurationMs: 12,
				VisibleAgain: time.Date(2026, 11, 27, 4, 44, 34, 0, time.UTC)}, true},
		{"a backoff of 0 s: visible at once", strings.Replace(line, `"attempt":2`, `"attempt":2,"visibilitySec":0`, 1), "demo", key,
			inspect.Run{Time: time.Date(2026, 11, 27, 4, 43, 54, 0, time.UTC), MessageID: "m1", Outcome: "retried", ReceiveCount: 2, Attempt: 2, Error: "answered 503", DurationMs: 12,
				VisibleAgain: time.Date(2026, 11, 27, 4, 43, 54, 0, time.UTC)}, true},
		{"a backoff SQS refused: not known", strings.Replace(line, `"attempt":2`, `"attempt":2,"visibilitySec":40,"visibilityError":"throttled"`, 1), "demo", key,
			inspect.Run{Time: time.Date(2026, 11, 27, 4, 43, 54, 0, time.UTC), MessageID: "m1", Outcome: "retried", ReceiveCount: 2, Attempt: 2, Error: "answered 503", DurationMs: 12}, true},
		{"another event", line, "demo", key + "0", inspect.Run{}, false},
		{"another tenant", line, "acme", key, inspect.Run{}, false},
		{"the ingest's line", `{"msg":"webhook","tenantId":"demo","idempotencyKey":"` + key + `"}`, "demo", key, inspect.Run{}, false},
		{"not JSON", key, "demo", key, inspect.Run{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := inspect.MatchRun([]byte(tt.line), tt.tenant, tt.key)
			if ok != tt.ok || got != tt.want {
				t.Errorf("MatchRun(%s, %q) = %+v, %v; want %+v, %v", tt.line, tt.key, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// make run's log file holds the ingest's and the worker's lines: both are
// found in it.
func TestLogFileRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "functions.log")
	lines := `{"msg":"webhook","tenantId":"demo","provider":"stripe","outcome":"accepted","status":200,"eventId":"evt_1"}
{"msg":"message","tenantId":"demo","idempotencyKey":"demo#stripe#evt_1","messageId":"m1","outcome":"retried","receiveCount":1,"attempt":1}
{"msg":"message","tenantId":"demo","idempotencyKey":"demo#stripe#evt_2","messageId":"m2","outcome":"processed","receiveCount":1,"attempt":1}
{"msg":"message","tenantId":"demo","idempotencyKey":"demo#stripe#evt_1","messageId":"m1","outcome":"processed","receiveCount":2,"attempt":2}
`
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := inspect.LogFile{Path: path}.Runs(context.Background(), "demo", "demo#stripe#evt_1")
	if err != nil || len(got) != 2 || got[0].Outcome != "retried" || got[1].Outcome != "processed" {
		t.Errorf("Runs() = %+v, %v; want evt_1's retried and processed lines", got, err)
	}
}

func TestInsightsRuns(t *testing.T) {
	const key = "acme#stripe#evt_1"
	row := `{"msg":"message","tenantId":"acme","idempotencyKey":"` + key + `","messageId":"m1","outcome":"dead_lettered","receiveCount":1}`
	f := &insights{status: cwltypes.QueryStatusComplete, rows: []string{row, strings.Replace(row, key, key+"0", 1)}}
	s := &inspect.Insights{Client: f, LogGroup: inspect.WorkerLogGroup("hookpack"), Poll: time.Millisecond}
	got, err := s.Runs(context.Background(), "acme", key)
	if err != nil || len(got) != 1 || got[0].MessageID != "m1" {
		t.Fatalf("Runs() = %+v, %v; want m1's line", got, err)
	}
	for _, want := range []string{`msg = "message"`, `tenantId = "acme"`, `idempotencyKey = "` + key + `"`} {
		if !strings.Contains(f.query, want) {
			t.Errorf("query %q lacks %s", f.query, want)
		}
	}
	if _, err := s.Runs(context.Background(), "acme", `acme#stripe#x" or 1=1`); !errors.Is(err, inspect.ErrMalformed) {
		t.Errorf("a key with quotes: %v, want ErrMalformed", err)
	}
}
