package queue

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrInvalidARN: the string is not an SQS queue ARN.
var ErrInvalidARN = errors.New("invalid SQS queue ARN")

// ARN is a parsed queue ARN.
type ARN struct {
	Partition, Region, Account, Name string
}

// String formats the ARN.
func (a ARN) String() string {
	return "arn:" + a.Partition + ":sqs:" + a.Region + ":" + a.Account + ":" + a.Name
}

// ParseARN parses "arn:<partition>:sqs:<region>:<account>:<name>".
func ParseARN(s string) (ARN, error) {
	p := strings.Split(s, ":")
	if len(p) != 6 || p[0] != "arn" || p[2] != "sqs" || p[1] == "" || p[3] == "" || p[4] == "" || p[5] == "" {
		return ARN{}, fmt.Errorf("%w: %q", ErrInvalidARN, s)
	}
	return ARN{Partition: p[1], Region: p[3], Account: p[4], Name: p[5]}, nil
}

// URLForARN returns the URL of the queue named by an eventSourceARN. The
// scheme and host come from template (any absolute queue URL of the
// deployment, e.g. the QUEUE_URL_TEMPLATE, which points at an emulator
// locally); an empty template means the public SQS endpoint of the ARN's
// region and partition.
func URLForARN(arn, template string) (string, error) {
	a, err := ParseARN(arn)
	if err != nil {
		return "", err
	}
	if template == "" {
		host := "sqs." + a.Region + ".amazonaws.com"
		if a.Partition == "aws-cn" {
			host += ".cn"
		}
		return "https://" + host + "/" + a.Account + "/" + a.Name, nil
	}
	u, err := url.Parse(strings.ReplaceAll(template, "{tenant}", "x"))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("queue URL template %q is not an absolute URL", template)
	}
	return u.Scheme + "://" + u.Host + "/" + a.Account + "/" + a.Name, nil
}
