// Package functions_test holds the cold-start budget of every Lambda
// function: the deployed bootstrap (linux/arm64, stripped, lambda.norpc)
// stays at or under 12 MiB, and initialisation makes no AWS call.
package functions_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/bootstrap"
	"github.com/hookpack/hookpack/pkg/local/runtimeapi"
)

const maxBootstrapBytes = 12 << 20

var functions = []struct {
	name string
	env  []string
	// event needs no AWS call to answer, so any request the recorder sees
	// was made at init.
	event string
}{
	{"ingest", []string{"IDEMPOTENCY_TABLE=t", "TENANT_PARAMETER_PREFIX=/p", "QUEUE_URL_TEMPLATE=http://q/{tenant}.fifo"},
		`{"version":"2.0","rawPath":"/webhooks/Bad!/github","pathParameters":{"tenant":"Bad!","provider":"github"},"requestContext":{"http":{"method":"POST"}}}`},
	{"worker", []string{"LEDGER_TABLE=t", "TENANT_PARAMETER_PREFIX=/p", "QUEUE_URL_TEMPLATE=http://q/{tenant}.fifo"},
		`{"Records":[]}`},
	{"watch", []string{"STACK_NAME=s", "TENANT_PARAMETER_PREFIX=/p", "QUEUE_URL_TEMPLATE=http://q/{tenant}.fifo", "STATE_TABLE=t", "LEDGER_TABLE=t", "ALARM_TOPIC_ARN=arn:aws:sns:us-east-1:123456789012:t"},
		`{"detail-type":"not the schedule"}`},
}

// TestBootstrapSize builds what make build deploys (linux/arm64) and holds
// each bootstrap to the budget.
func TestBootstrapSize(t *testing.T) {
	bins, err := bootstrap.Build(context.Background(), "..", t.TempDir(), "linux", "arm64")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range functions {
		t.Run(f.name, func(t *testing.T) {
			fi, err := os.Stat(bins[f.name])
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s bootstrap: %.2f MiB", f.name, float64(fi.Size())/(1<<20))
			if fi.Size() > maxBootstrapBytes {
				t.Errorf("%s bootstrap is %d bytes, budget %d", f.name, fi.Size(), maxBootstrapBytes)
			}
		})
	}
}

func TestInitMakesNoAWSCall(t *testing.T) {
	var calls atomic.Int32
	aws := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "no AWS call expected", http.StatusInternalServerError)
	}))
	defer aws.Close()
	for _, f := range functions {
		t.Run(f.name, func(t *testing.T) {
			calls.Store(0)
			env := append([]string{"AWS_ENDPOINT_URL=" + aws.URL, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test"}, f.env...)
			bin := awstest.Bootstrap(t, f.name)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := runtimeapi.Invoke(ctx, runtimeapi.Options{Binary: bin, Env: env, Event: []byte(f.event), Timeout: 10 * time.Second})
			if err != nil || res.Error != nil {
				t.Fatalf("Invoke() = %v, %v", err, res.Error)
			}
			if !json.Valid(res.Payload) {
				t.Fatalf("payload %s", res.Payload)
			}
			t.Logf("%s init %s, invoke %s", f.name, res.Init, res.Duration)
			if n := calls.Load(); n != 0 {
				t.Errorf("%s made %d AWS requests during init and a request that needs none", f.name, n)
			}
		})
	}
}
