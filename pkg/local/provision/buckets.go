package provision

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

type bucketAPI interface {
	CreateBucket(ctx context.Context, in *s3.CreateBucketInput, opts ...func(*s3.Options)) (*s3.CreateBucketOutput, error)
}

// BucketName turns a stack name into a valid S3 bucket name for its payload
// bucket: lower case, letters, digits and hyphens, at most 63 characters.
func BucketName(stack string) string {
	b := []byte(strings.ToLower(stack) + "-payloads")
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b[max(0, len(b)-63):]), "-")
}

// Bucket creates the payload bucket (queue.Payloads) as template.yaml
// deploys it, less what the emulator ignores (encryption, lifecycle). An
// existing bucket is not an error.
func Bucket(ctx context.Context, client bucketAPI, name string) error {
	_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	var owned *types.BucketAlreadyOwnedByYou
	var exists *types.BucketAlreadyExists
	if err != nil && !errors.As(err, &owned) && !errors.As(err, &exists) {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	return nil
}
