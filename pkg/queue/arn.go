package queue

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrInvalidARN: the string is not an SQS queue ARN.
var ErrInvalidARN = errors.New("invalid SQS queue ARN")

// arn is a parsed queue ARN.
type arn struct {
	Partition, Region, Account, Name string
}

// parseARN parses "arn:<partition>:sqs:<region>:<account>:<name>".
func parseARN(s string) (arn, error) {
	p := strings.Split(s, ":")
	if len(p) != 6 || p[0] != "arn" || p[2] != "sqs" || p[1] == "" || p[3] == "" || p[4] == "" || p[5] == "" {
		return arn{}, fmt.Errorf("%w: %q", ErrInvalidARN, s)
	}
	return arn{Partition: p[1], Region: p[3], Account: p[4], Name: p[5]}, nil
}

// URLForARN returns the URL of the queue named by an eventSourceARN. It
// returns an error wrapping ErrInvalidARN when queueARN is not an SQS ARN. The
// scheme and host come from template (any absolute queue URL of the
// deployment, e.g. the QUEUE_URL_TEMPLATE, which points at an emulator
// locally); an empty template means the public SQS endpoint of the ARN's
// region and partition.
func URLForARN(queueARN, template string) (string, error) {
	a, err := parseARN(queueARN)
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
