package tenant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"
)

type ssmAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
	PutParameter(ctx context.Context, in *ssm.PutParameterInput, opts ...func(*ssm.Options)) (*ssm.PutParameterOutput, error)
}

// SSM reads tenant credentials from Parameter Store SecureString parameters
// under prefix ("/hookpack" → "/hookpack/tenants/acme/inbound").
type SSM struct {
	client ssmAPI
	prefix string
}

// NewSSM returns a store reading parameters under prefix.
func NewSSM(client ssmAPI, prefix string) *SSM {
	return &SSM{client: client, prefix: prefix}
}

// Inbound returns the tenant's inbound configuration, or an error wrapping
// ErrNotFound when the tenant has none.
func (s *SSM) Inbound(ctx context.Context, id string) (Inbound, error) {
	var in Inbound
	err := s.get(ctx, id, "inbound", &in)
	return in, err
}

// Outbound returns the tenant's outbound credentials, or an error wrapping
// ErrNotFound.
func (s *SSM) Outbound(ctx context.Context, id string) (Outbound, error) {
	var out Outbound
	err := s.get(ctx, id, "outbound", &out)
	return out, err
}

func (s *SSM) get(ctx context.Context, id, kind string, v any) error {
	name := parameterName(s.prefix, id, kind)
	out, err := s.client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
	var nf *types.ParameterNotFound
	if errors.As(err, &nf) {
		return fmt.Errorf("%s %s: %w", kind, id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("get %s credentials of %s: %w", kind, id, err)
	}
	if err := json.Unmarshal([]byte(aws.ToString(out.Parameter.Value)), v); err != nil {
		// The parameter's content is never echoed: it holds secrets.
		return fmt.Errorf("%s credentials of %s are not valid JSON", kind, id)
	}
	return nil
}

// Put writes both parameters of a tenant as SecureString (KMS key keyID, or
// the account's aws/ssm key when empty), overwriting existing values. It is
// used by onboarding and the local stack.
func (s *SSM) Put(ctx context.Context, id string, in Inbound, out Outbound, keyID string) error {
	if err := ValidID(id); err != nil {
		return err
	}
	for kind, v := range map[string]any{"inbound": in, "outbound": out} {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %s credentials of %s: %w", kind, id, err)
		}
		in := &ssm.PutParameterInput{
			Name:      aws.String(parameterName(s.prefix, id, kind)),
			Value:     aws.String(string(b)),
			Type:      types.ParameterTypeSecureString,
			Overwrite: aws.Bool(true),
		}
		if keyID != "" {
			in.KeyId = aws.String(keyID)
		}
		if _, err := s.client.PutParameter(ctx, in); err != nil {
			return fmt.Errorf("put %s credentials of %s: %w", kind, id, err)
		}
	}
	return nil
}
