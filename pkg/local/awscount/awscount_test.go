package awscount_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookpack/hookpack/pkg/local/awscount"
)

// A call the SDK retries once (the first answer a 500) is two requests to
// New and one call to NewCalls.
func TestRequestsAndCalls(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if hits.Add(1)%2 == 1 {
			http.Error(w, `{"__type":"InternalError"}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")}
	for _, tc := range []struct {
		name    string
		counter *awscount.Requests
		want    int
	}{{"New", awscount.New(), 2}, {"NewCalls", awscount.NewCalls(), 1}} {
		client := sqs.NewFromConfig(tc.counter.Install(cfg))
		if _, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(srv.URL + "/q")}); err != nil {
			t.Fatalf("%s: GetQueueAttributes = %v", tc.name, err)
		}
		if got := tc.counter.Take()["SQS.GetQueueAttributes"]; got != tc.want {
			t.Errorf("%s counted %d, want %d", tc.name, got, tc.want)
		}
	}
}
