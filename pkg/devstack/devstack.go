// Package devstack runs the pack on one machine with no AWS account: it
// starts moto server, provisions what template.yaml would (idempotency
// table, each tenant's FIFO queue and FIFO DLQ, tenant credentials as SSM
// SecureString parameters loaded from the local tenants file) and serves the
// real ingest handler behind a local stand-in for API Gateway's HTTP API.
package devstack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hookpack/hookpack/pkg/emulator"
	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/ingest"
	"github.com/hookpack/hookpack/pkg/localapi"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// Options configure a local stack.
type Options struct {
	// Name plays the role of the CloudFormation stack name: it prefixes
	// queues, the table and the parameter path. Default "hookpack-local".
	Name        string
	TenantsFile string
	// Addr is where the HTTP API listens (default 127.0.0.1:3000).
	Addr string
	// Endpoint, when set, is an already running moto server to use.
	Endpoint string
	// MotoPort is where a started moto listens (0 picks a free port;
	// `make run` uses 4566 so events/env.json can point at it).
	MotoPort int
	Logger   *slog.Logger
}

// Stack is a provisioned local deployment.
type Stack struct {
	Options
	AWS      aws.Config
	Tenants  *tenant.File
	Queues   map[string]queue.Pair
	Settings ingest.Settings
	moto     *emulator.Process
	listener net.Listener
}

// Route is the webhook route template.yaml declares.
var Route = localapi.Route{Methods: []string{http.MethodGet, http.MethodPost}, Path: "/webhooks/{tenant}/{provider}"}

// Start claims the listen address (failing fast and clearly when it is
// taken), starts moto unless an endpoint is given, and provisions every
// tenant in the tenants file.
func Start(ctx context.Context, o Options) (*Stack, error) {
	if o.Name == "" {
		o.Name = "hookpack-local"
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:3000"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Stack{Options: o, Queues: map[string]queue.Pair{}}
	f, err := tenant.LoadFile(o.TenantsFile)
	if err != nil {
		return nil, err
	}
	s.Tenants = f
	if s.listener, err = net.Listen("tcp", o.Addr); err != nil {
		return nil, fmt.Errorf("listen on %s: %w (is `make run` already running? set ADDR to use another address)", o.Addr, err)
	}
	if o.Endpoint == "" {
		if s.moto, err = emulator.StartMoto(ctx, o.MotoPort); err != nil {
			s.Close()
			return nil, err
		}
		s.Endpoint = s.moto.Endpoint
	}
	if s.AWS, err = awsConfig(ctx, s.Endpoint); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.provision(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func awsConfig(ctx context.Context, endpoint string) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithBaseEndpoint(endpoint),
	)
	if err != nil {
		return aws.Config{}, fmt.Errorf("aws config: %w", err)
	}
	return cfg, nil
}

// provision creates what template.yaml deploys in AWS.
func (s *Stack) provision(ctx context.Context) error {
	table := s.Name + "-idempotency"
	if err := idempotency.CreateTable(ctx, dynamodb.NewFromConfig(s.AWS), table); err != nil {
		return err
	}
	sq := sqs.NewFromConfig(s.AWS)
	creds := tenant.NewSSM(ssm.NewFromConfig(s.AWS), "/"+s.Name)
	for _, id := range s.Tenants.IDs() {
		pair, err := queue.CreatePair(ctx, sq, s.Name+"-"+id, queue.PairOptions{VisibilityTimeout: 180, MaxReceiveCount: 10})
		if err != nil {
			return err
		}
		s.Queues[id] = pair
		t := s.Tenants.Tenants[id]
		if err := creds.Put(ctx, id, t.Inbound, t.Outbound, ""); err != nil {
			return err
		}
	}
	var tmpl string
	for id, p := range s.Queues {
		tmpl = strings.TrimSuffix(p.URL, id+".fifo") + "{tenant}.fifo"
		break
	}
	s.Settings = ingest.Settings{
		IdempotencyTable: table,
		ParameterPrefix:  "/" + s.Name,
		QueueURLTemplate: tmpl,
		TenantCacheTTL:   5 * time.Second, // local edits to credentials show up fast
	}
	return nil
}

// URL is the base URL of the local HTTP API.
func (s *Stack) URL() string { return "http://" + s.listener.Addr().String() }

// Serve serves the HTTP API until ctx is done, then shuts down gracefully.
func (s *Stack) Serve(ctx context.Context) error {
	h := ingest.NewAWS(s.AWS, s.Settings, s.Logger)
	srv := &http.Server{
		Handler:           localapi.Server(Route, h.Handle, 10*time.Second, s.Logger),
		ReadHeaderTimeout: 5 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(s.listener) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// Close stops the emulator and releases the address.
func (s *Stack) Close() {
	if s.listener != nil {
		_ = s.listener.Close()
	}
	s.moto.Stop()
}

// Banner describes the running stack for a newcomer.
func (s *Stack) Banner() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nhookpack is running locally (moto at %s)\n\n", s.Endpoint)
	fmt.Fprintf(&b, "Tenants file: %s\n\nWebhook URLs:\n", s.TenantsFile)
	for _, id := range s.Tenants.IDs() {
		var names []string
		for p := range s.Tenants.Tenants[id].Providers {
			names = append(names, p)
		}
		sort.Strings(names)
		for _, p := range names {
			fmt.Fprintf(&b, "  %s/webhooks/%s/%s\n", s.URL(), id, p)
		}
	}
	fmt.Fprintf(&b, "\nQueues (inspect with: aws --endpoint-url %s sqs receive-message --queue-url <url>):\n", s.Endpoint)
	for _, id := range s.Tenants.IDs() {
		fmt.Fprintf(&b, "  %s\n", s.Queues[id].URL)
	}
	b.WriteString("\nStop with Ctrl-C.\n")
	return b.String()
}
