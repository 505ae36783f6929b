package emulator

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hookpack/hookpack/pkg/lambdaenv"
)

// Region is the region every emulator client uses; Account is moto's
// account id.
const (
	Region  = "us-east-1"
	Account = "123456789012"
)

// AWSConfig returns an AWS configuration for the emulators, with static fake
// credentials: endpoint serves every service, dynamoEndpoint (when set)
// DynamoDB.
func AWSConfig(ctx context.Context, endpoint, dynamoEndpoint string) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion(Region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithBaseEndpoint(endpoint),
	)
	if err != nil {
		return aws.Config{}, fmt.Errorf("aws config: %w", err)
	}
	// DynamoDB Local's error responses carry no CRC32 header: the
	// functions' own option (lambdaenv.Start) keeps the SDK from warning
	// about them while validating every response that has one.
	cfg.APIOptions = append(cfg.APIOptions, lambdaenv.AcceptMissingCRC32)
	cfg.ServiceOptions = append(cfg.ServiceOptions, func(id string, o any) {
		if opts, ok := o.(*dynamodb.Options); ok && id == dynamodb.ServiceID {
			if dynamoEndpoint != "" {
				opts.BaseEndpoint = aws.String(dynamoEndpoint)
			}
		}
	})
	return cfg, nil
}
