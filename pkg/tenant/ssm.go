package tenant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/hookpack/hookpack/pkg/tenantid"
	"github.com/hookpack/hookpack/pkg/webhook"
)

type ssmAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
	GetParametersByPath(ctx context.Context, in *ssm.GetParametersByPathInput, opts ...func(*ssm.Options)) (*ssm.GetParametersByPathOutput, error)
	PutParameter(ctx context.Context, in *ssm.PutParameterInput, opts ...func(*ssm.Options)) (*ssm.PutParameterOutput, error)
}

// SSM reads tenant credentials from Parameter Store SecureString parameters
// under prefix ("/hookpack" → "/hookpack/tenants/acme/inbound"), and the
// list of onboarded tenant ids from StringList parameters under
// "<prefix>/tenant-ids/" ("…/tenant-ids/0" = "acme,globex"; a list outgrowing
// one parameter's 4 KB continues in "…/1", up to 10 parameters — about 1,000
// ids of 40 characters — read with one GetParametersByPath request).
type SSM struct {
	client ssmAPI
	prefix string
}

// NewSSM returns a store reading parameters under prefix.
func NewSSM(client ssmAPI, prefix string) *SSM {
	return &SSM{client: client, prefix: prefix}
}

// Inbound returns the tenant's inbound configuration with its Routes, or
// an error wrapping ErrNotFound when the tenant has no inbound
// configuration and ErrInvalid when it fails Inbound.Validate against
// providers or its routes fail Routes.Validate. A tenant without a routes
// parameter has no streams (one GetParameter more per lookup).
func (s *SSM) Inbound(ctx context.Context, id string, providers webhook.Registry) (Inbound, error) {
	var in Inbound
	if err := s.get(ctx, id, "inbound", &in); err != nil {
		return in, err
	}
	if err := in.Validate(id, providers); err != nil {
		return in, err
	}
	err := s.get(ctx, id, "routes", &in.Routes)
	switch {
	case errors.Is(err, ErrNotFound):
		return in, nil
	case err != nil:
		return in, err
	}
	return in, in.Routes.Validate(id)
}

// Outbound returns the tenant's outbound credentials, or an error wrapping
// ErrNotFound or ErrInvalid.
func (s *SSM) Outbound(ctx context.Context, id string) (Outbound, error) {
	var out Outbound
	if err := s.get(ctx, id, "outbound", &out); err != nil {
		return out, err
	}
	return out, out.Validate(id)
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
		return fmt.Errorf("%w: tenant %q: %s credentials are not valid JSON", ErrInvalid, id, kind)
	}
	return nil
}

// IDs returns the onboarded tenant ids: one GetParametersByPath request (more
// only when the list spans over 10 parameters). An empty list is not an
// error; an id that fails tenantid.Validate is.
func (s *SSM) IDs(ctx context.Context) ([]string, error) {
	shards, err := s.idShards(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, sh := range shards {
		for _, id := range sh.ids {
			if err := tenantid.Validate(id); err != nil {
				return nil, fmt.Errorf("%s lists %q: %w", sh.name, id, err)
			}
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// maxShardBytes is a standard parameter's value limit.
const maxShardBytes = 4096

type idShard struct {
	name string
	ids  []string
}

func (s *SSM) idShards(ctx context.Context) ([]idShard, error) {
	var out []idShard
	in := &ssm.GetParametersByPathInput{Path: aws.String(s.idsPath())}
	for {
		page, err := s.client.GetParametersByPath(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list tenant ids: %w", err)
		}
		for _, p := range page.Parameters {
			sh := idShard{name: aws.ToString(p.Name)}
			for _, id := range strings.Split(aws.ToString(p.Value), ",") {
				if id = strings.TrimSpace(id); id != "" {
					sh.ids = append(sh.ids, id)
				}
			}
			out = append(out, sh)
		}
		if page.NextToken == nil {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}

// register adds id to the list of onboarded tenants unless it is there: to
// the first list parameter with room, or a new one. Concurrent registrations
// can lose one another's id (Parameter Store has no conditional write):
// onboard one tenant at a time.
func (s *SSM) register(ctx context.Context, id string) error {
	shards, err := s.idShards(ctx)
	if err != nil {
		return err
	}
	for _, sh := range shards {
		if slices.Contains(sh.ids, id) {
			return nil
		}
	}
	next := 0 // one past the highest shard number: removals leave gaps
	for _, sh := range shards {
		if n, err := strconv.Atoi(path.Base(sh.name)); err == nil && n >= next {
			next = n + 1
		}
	}
	target := idShard{name: fmt.Sprintf("%s/%d", s.idsPath(), next)}
	for _, sh := range shards {
		if len(strings.Join(sh.ids, ","))+1+len(id) <= maxShardBytes {
			target = sh
			break
		}
	}
	_, err = s.client.PutParameter(ctx, &ssm.PutParameterInput{
		Name:      aws.String(target.name),
		Value:     aws.String(strings.Join(append(target.ids, id), ",")),
		Type:      types.ParameterTypeStringList,
		Overwrite: aws.Bool(true),
	})
	if err != nil {
		return fmt.Errorf("register tenant %s: %w", id, err)
	}
	return nil
}

func (s *SSM) idsPath() string { return strings.TrimRight(s.prefix, "/") + "/tenant-ids" }

// Put validates a tenant's configuration (against providers: its inbound
// one, and the senders its outbound filters name, which in must enable),
// writes its inbound, outbound and routes (Outbound.Routes) parameters, in
// that order, as SecureString (KMS key keyID, or the
// account's aws/ssm key when empty), overwriting existing values, and adds
// id to the onboarded tenants. It returns an error wrapping
// tenantid.ErrInvalid or ErrInvalid, writing nothing, when the
// configuration fails validation. It is used by the local stack
// and tests; scripts/tenant does the same with the AWS CLI.
func (s *SSM) Put(ctx context.Context, id string, in Inbound, out Outbound, keyID string, providers webhook.Registry) error {
	if err := tenantid.Validate(id); err != nil {
		return err
	}
	if err := in.Validate(id, providers); err != nil {
		return err
	}
	if err := out.ValidateWith(id, providers, &in); err != nil {
		return err
	}
	for _, p := range []struct {
		kind string
		v    any
	}{{"inbound", in}, {"outbound", out}, {"routes", out.Routes()}} {
		kind := p.kind
		b, err := json.Marshal(p.v)
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
	return s.register(ctx, id)
}
