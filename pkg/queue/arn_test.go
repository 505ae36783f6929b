package queue_test

import (
	"errors"
	"testing"

	"github.com/hookpack/hookpack/pkg/queue"
)

func TestURLForARN(t *testing.T) {
	arn := "arn:aws:sqs:eu-west-1:123456789012:hookpack-acme.fifo"
	tests := []struct {
		name, arn, template, want string
		wantErr                   bool
	}{
		{"public endpoint", arn, "", "https://sqs.eu-west-1.amazonaws.com/123456789012/hookpack-acme.fifo", false},
		{"template's host", arn, "https://sqs.eu-west-1.amazonaws.com/123456789012/hookpack-{tenant}.fifo", "https://sqs.eu-west-1.amazonaws.com/123456789012/hookpack-acme.fifo", false},
		{"emulator host", arn, "http://127.0.0.1:5000/123456789012/x-{tenant}.fifo", "http://127.0.0.1:5000/123456789012/hookpack-acme.fifo", false},
		{"china partition", "arn:aws-cn:sqs:cn-north-1:123456789012:q.fifo", "", "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q.fifo", false},
		{"not an ARN", "hookpack-acme.fifo", "", "", true},
		{"not SQS", "arn:aws:sns:eu-west-1:123456789012:topic", "", "", true},
		{"relative template", arn, "/123456789012/x.fifo", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := queue.URLForARN(tt.arn, tt.template)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("URLForARN(%q, %q) = %q, %v; want %q", tt.arn, tt.template, got, err, tt.want)
			}
		})
	}
	if _, err := queue.URLForARN("arn:aws:sqs:x", ""); !errors.Is(err, queue.ErrInvalidARN) {
		t.Errorf("URLForARN(short) = %v, want ErrInvalidARN", err)
	}
}
