package main

import (
	"slices"
	"testing"
)

func TestLoadEnv(t *testing.T) {
	tests := []struct {
		name, function, endpoint, ddb string
		want                          []string
	}{
		{"file as is", "IngestFunction", "", "", []string{
			"AWS_ENDPOINT_URL=http://127.0.0.1:4566",
			"AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000",
			"QUEUE_URL_TEMPLATE=http://127.0.0.1:4566/123456789012/hookpack-local_{tenant}.fifo",
		}},
		{"make run on other ports", "WorkerFunction", "http://127.0.0.1:5000", "http://127.0.0.1:9000", []string{
			"AWS_ENDPOINT_URL=http://127.0.0.1:5000",
			"AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9000",
			"QUEUE_URL_TEMPLATE=http://127.0.0.1:5000/123456789012/hookpack-local_{tenant}.fifo",
			"LEDGER_TABLE=hookpack-local-ledger",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := loadEnv("../../events/env.json", tt.function, tt.endpoint, tt.ddb)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !slices.Contains(env, w) {
					t.Errorf("loadEnv(%s, %q, %q) = %v, want it to hold %s", tt.function, tt.endpoint, tt.ddb, env, w)
				}
			}
		})
	}
	if _, err := loadEnv("../../events/env.json", "NoSuchFunction", "", ""); err == nil {
		t.Error("loadEnv(NoSuchFunction) = nil error, want one")
	}
}
