package capture

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	auth := func(service string) string {
		return "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/" + service + "/aws4_request, SignedHeaders=host, Signature=x"
	}
	tests := []struct {
		name, method, path, service, target, body string
		want                                      []Call
	}{
		{"dynamodb", "POST", "/", "dynamodb", "DynamoDB_20120810.PutItem", `{"TableName":"t1"}`,
			[]Call{{Action: "dynamodb:PutItem", Operation: "PutItem", Resource: "arn:aws:dynamodb:us-east-1:123456789012:table/t1"}}},
		{"sqs batch is its single action", "POST", "/", "sqs", "AmazonSQS.SendMessageBatch", `{"QueueUrl":"https://sqs.us-east-1.amazonaws.com/123456789012/s_a.fifo"}`,
			[]Call{{Action: "sqs:SendMessage", Operation: "SendMessageBatch", Resource: "arn:aws:sqs:us-east-1:123456789012:s_a.fifo"}}},
		{"sqs query protocol", "POST", "/", "sqs", "", "Action=DeleteMessage&QueueUrl=http%3A%2F%2Flocalhost%2F123456789012%2Fq",
			[]Call{{Action: "sqs:DeleteMessage", Operation: "DeleteMessage", Resource: "arn:aws:sqs:us-east-1:123456789012:q"}}},
		{"cloudwatch signs as monitoring", "POST", "/", "monitoring", "GraniteServiceVersion20100801.GetMetricData", `{"MetricDataQueries":[]}`,
			[]Call{{Action: "cloudwatch:GetMetricData", Operation: "GetMetricData", Resource: "*"}}},
		{"sns publish", "POST", "/", "sns", "", "Action=Publish&TopicArn=arn%3Aaws%3Asns%3Aus-east-1%3A123456789012%3At&Message=m",
			[]Call{{Action: "sns:Publish", Operation: "Publish", Resource: "arn:aws:sns:us-east-1:123456789012:t"}}},
		{"ssm by path", "POST", "/", "ssm", "AmazonSSM.GetParametersByPath", `{"Path":"/s/tenant-ids"}`,
			[]Call{{Action: "ssm:GetParametersByPath", Operation: "GetParametersByPath", Resource: "arn:aws:ssm:us-east-1:123456789012:parameter/s/tenant-ids"}}},
		{"ssm names", "POST", "/", "ssm", "AmazonSSM.GetParameters", `{"Names":["/a","b"]}`,
			[]Call{{Action: "ssm:GetParameters", Operation: "GetParameters", Resource: "arn:aws:ssm:us-east-1:123456789012:parameter/a"},
				{Action: "ssm:GetParameters", Operation: "GetParameters", Resource: "arn:aws:ssm:us-east-1:123456789012:parameter/b"}}},
		{"s3 put", "PUT", "/bucket/q.fifo/k", "s3", "", "",
			[]Call{{Action: "s3:PutObject", Operation: "PutObject", Resource: "arn:aws:s3:::bucket/q.fifo/k"}}},
		{"s3 head is GetObject", "HEAD", "/bucket/k", "s3", "", "",
			[]Call{{Action: "s3:GetObject", Operation: "HeadObject", Resource: "arn:aws:s3:::bucket/k"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, "http://127.0.0.1:1"+tt.path, strings.NewReader(tt.body))
			req.Header.Set("Authorization", auth(tt.service))
			if tt.target != "" {
				req.Header.Set("X-Amz-Target", tt.target)
			}
			got := parse(req, []byte(tt.body))
			if len(got) != len(tt.want) {
				t.Fatalf("parse(%s) = %+v, want %+v", tt.name, got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("parse(%s)[%d] = %+v, want %+v", tt.name, i, got[i], tt.want[i])
				}
			}
		})
	}
}

// The recording transport must hand the transport under it the whole
// body: the chaos fault transport reads it too.
func TestTransportPassesTheBodyOn(t *testing.T) {
	rec, err := NewRecorder("")
	if err != nil {
		t.Fatal(err)
	}
	body := `{"TableName":"t1"}`
	var got string
	base := roundTripper(func(req *http.Request) (*http.Response, error) {
		b, _ := io.ReadAll(req.Body)
		got = string(b)
		return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("{}"))}, nil
	})
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/", strings.NewReader(body))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/dynamodb/aws4_request")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.GetItem")
	if _, err := rec.Transport("WorkerFunction", base).RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if got != body {
		t.Errorf("the transport below read %q, want %q", got, body)
	}
	want := []Call{{Function: "WorkerFunction", Action: "dynamodb:GetItem", Operation: "GetItem", Resource: "arn:aws:dynamodb:us-east-1:123456789012:table/t1"}}
	if calls := rec.Calls(); len(calls) != 1 || calls[0] != want[0] {
		t.Errorf("recorded %+v, want %+v", calls, want)
	}
}

// A client that gives up (a poller stopping its long poll) is not an
// error of the proxy: nothing is logged. A target that cannot be reached
// is: the client gets 502 and the log says why.
func TestEndpointErrors(t *testing.T) {
	var logs bytes.Buffer
	log.SetOutput(&logs)
	defer log.SetOutput(os.Stderr)

	hang := make(chan struct{})
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hang }))
	defer target.Close()
	defer close(hang)
	rec, err := NewRecorder(target.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	endpoint, err := rec.Endpoint("WorkerFunction")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/", strings.NewReader("Action=ReceiveMessage&QueueUrl=q"))
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("a request to a hanging target returned before its context ended")
	}
	time.Sleep(100 * time.Millisecond) // the proxy notices the cancelled client
	if logs.Len() != 0 {
		t.Errorf("a cancelled client was logged: %s", logs.String())
	}

	rec2, _ := NewRecorder("http://127.0.0.1:1") // nothing listens on port 1
	defer rec2.Close()
	endpoint, err = rec2.Endpoint("WorkerFunction")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(endpoint+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(logs.String(), "proxy error") {
		t.Errorf("unreachable target: status %d, log %q; want 502 and the error logged", resp.StatusCode, logs.String())
	}
}
