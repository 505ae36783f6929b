package samples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/render"
	"github.com/hookpack/hookpack/pkg/local/samples"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// TestEveryProviderSigns holds every registered provider to the Signer
// contract on every sample body: signed with the sample's own tenant
// config at an arbitrary time, the delivery verifies at that time, and a
// flipped body byte does not.
func TestEveryProviderSigns(t *testing.T) {
	reg := provider.Registry()
	for name, p := range reg {
		if _, ok := p.(webhook.Signer); !ok {
			t.Errorf("provider %q implements no webhook.Signer", name)
		}
	}
	all, err := providertest.LoadSamples(samplesDir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	for _, s := range all {
		if s.Method != http.MethodPost {
			continue
		}
		t.Run(s.Provider+"/"+s.Name, func(t *testing.T) {
			p, _ := reg.Lookup(s.Provider)
			signer, ok := p.(webhook.Signer)
			if !ok {
				t.Skipf("%s implements no webhook.Signer (reported above)", s.Provider)
			}
			req := s.Request()
			var err error
			if req.Body, err = s.Stamp(now); err != nil {
				t.Fatal(err)
			}
			if err := signer.Sign(req, s.TenantConfig, now); err != nil {
				t.Fatalf("Sign() = %v", err)
			}
			if err := p.Verify(req, s.TenantConfig, now); err != nil {
				t.Fatalf("Verify(signed) = %v", err)
			}
			if bodyUnsigned[s.Provider] {
				// The credential covers no body: a changed one still verifies.
				return
			}
			req.Body = append([]byte(nil), req.Body...)
			req.Body[len(req.Body)/2] ^= 1
			if err := p.Verify(req, s.TenantConfig, now); !errors.Is(err, webhook.ErrInvalidSignature) {
				t.Errorf("Verify(tampered) = %v, want %v", err, webhook.ErrInvalidSignature)
			}
		})
	}
}

// bodyUnsigned are the senders whose credential (a shared token, basic
// auth) does not cover the body; their contract suites say so too
// (providertest.Case.BodyUnsigned).
var bodyUnsigned = map[string]bool{"gitlab": true, "telegram": true, "postmark": true, "chargebee": true, "mailgun": true}

// TestGenerate checks the generated events as the ingest handler reads them:
// addressed to demo, on the route template.yaml declares, verifying with the
// demo tenant's secrets at the generation time (and, for timestamped
// schemes, not an hour later).
func TestGenerate(t *testing.T) {
	now := time.UnixMilli(1_795_366_800_123)
	cfgs := demo(t)
	reg := provider.Registry()
	evs := generate(t, now)
	if len(evs) == 0 {
		t.Fatal("Generate() = no events")
	}
	for _, ev := range evs {
		t.Run(ev.File, func(t *testing.T) {
			pl := ev.Payload
			prov := ev.Sample.Provider
			if ev.File != prov+"-"+ev.Sample.Name+".json" {
				t.Errorf("File = %q, want %s-%s.json", ev.File, prov, ev.Sample.Name)
			}
			if got := handshakes[ev.File]; got != (ev.Reply != nil) {
				t.Errorf("Reply = %+v, handshake want %v", ev.Reply, got)
			}
			if pl.PathParameters["tenant"] != "demo" || pl.PathParameters["provider"] != prov {
				t.Errorf("pathParameters = %v, want demo/%s", pl.PathParameters, prov)
			}
			if want := ev.Sample.Method + " /webhooks/{tenant}/{provider}"; pl.RouteKey != want || pl.RequestContext.RouteKey != want {
				t.Errorf("routeKey = %q / %q, want %q", pl.RouteKey, pl.RequestContext.RouteKey, want)
			}
			if pl.RawPath != "/webhooks/demo/"+prov || pl.RequestContext.HTTP.Path != pl.RawPath {
				t.Errorf("rawPath = %q, http.path = %q", pl.RawPath, pl.RequestContext.HTTP.Path)
			}
			rc := pl.RequestContext
			if !strings.HasSuffix(rc.DomainName, ".amazonaws.com") || !strings.Contains(rc.DomainName, ".execute-api.") ||
				pl.Headers["host"] != rc.DomainName || rc.APIID != rc.DomainPrefix || rc.APIID == "" {
				t.Errorf("domainName %q, host %q, apiId %q, domainPrefix %q: want one execute-api host", rc.DomainName, pl.Headers["host"], rc.APIID, rc.DomainPrefix)
			}
			if rc.TimeEpoch != now.UnixMilli() || rc.Stage != "$default" || rc.HTTP.Protocol != "HTTP/1.1" || rc.HTTP.SourceIP == "" {
				t.Errorf("requestContext = %+v", rc)
			}
			if ct := pl.Headers["content-type"]; strings.HasPrefix(ct, "application/x-www-form-urlencoded") != pl.IsBase64Encoded {
				t.Errorf("content-type %q with isBase64Encoded %v: HTTP API base64-encodes form bodies only", ct, pl.IsBase64Encoded)
			}

			p, _ := reg.Lookup(prov)
			cfg := cfgs[prov]
			req := toRequest(t, pl)
			if ev.Sample.Method == http.MethodGet {
				hs := p.(webhook.Handshaker)
				reply, ok, err := hs.Handshake(req, cfg)
				if err != nil || !ok || !reply.Equal(*ev.Reply) {
					t.Errorf("Handshake() = %+v, %v, %v; want %+v", reply, ok, err, *ev.Reply)
				}
				return
			}
			// The sample's bytes, with a signed send time (stampMs) set to now
			// (Mailgun signs inside the body, so its bytes carry the signature).
			if body, err := ev.Sample.Stamp(now); prov != "mailgun" && (err != nil || string(req.Body) != string(body)) {
				t.Errorf("body differs from the sample's bytes (stamped %v)", err)
			}
			if err := p.Verify(req, cfg, now); err != nil {
				t.Errorf("Verify(at generation) = %v", err)
			}
			// A sample with "at" is signed with a timestamp: stale past its
			// sender's window, which may cover the sender's whole retry
			// horizon (SendGrid's a day) but stays inside the 7-day dedup
			// window (pkg/provider's TestRetries).
			stamped := ev.Sample.At != 0
			err := p.Verify(req, cfg, now.Add(8*24*time.Hour))
			if stamped && !errors.Is(err, webhook.ErrStale) || !stamped && err != nil {
				t.Errorf("Verify(8 days later) = %v, stale want %v", err, stamped)
			}
		})
	}
}

func TestGenerateErrors(t *testing.T) {
	all, err := providertest.LoadSamples(samplesDir)
	if err != nil {
		t.Fatal(err)
	}
	var github providertest.Sample
	for _, s := range all {
		if s.Provider == "github" {
			github = s
		}
	}
	cfg := map[string]webhook.Config{"github": {Secrets: []string{"s"}}}
	tests := []struct {
		name string
		reg  webhook.Registry
		cfgs map[string]webhook.Config
		want error
	}{
		{"unknown provider", webhook.Registry{}, cfg, samples.ErrUnknownProvider},
		{"not enabled", provider.Registry(), map[string]webhook.Config{}, samples.ErrNotEnabled},
		{"no signer", webhook.Registry{"github": verifyOnly{}}, cfg, samples.ErrCannotSign},
		{"no secret", provider.Registry(), map[string]webhook.Config{"github": {}}, webhook.ErrMisconfigured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := samples.Generate([]providertest.Sample{github}, samples.Options{Tenant: "demo", Providers: tt.cfgs, Registry: tt.reg, Now: time.Now()})
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), "github/issues-opened") {
				t.Errorf("Generate() = %v, want %v naming the sample", err, tt.want)
			}
		})
	}
}

// verifyOnly is a provider without a Signer.
type verifyOnly struct{}

func (verifyOnly) Verify(*webhook.Request, webhook.Config, time.Time) error { return nil }
func (verifyOnly) Events(*webhook.Request, webhook.Config) ([]webhook.Event, error) {
	return nil, nil
}

// TestCommittedEvents keeps events/ingest in step with the samples and the
// tenants file: the committed files are exactly the timeless events
// (`go run ./scripts/events -committed` writes them), and each one still
// verifies with the demo tenant's current secrets a year from now (so a
// changed secret or sample without regenerating fails here, and a
// committed event never goes stale).
func TestCommittedEvents(t *testing.T) {
	dir := t.TempDir()
	o := samples.Options{Tenant: "demo", Providers: demo(t), Registry: provider.Registry(), Now: time.Now()}
	var timeless []samples.Event
	for _, ev := range generate(t, o.Now) {
		if samples.Timeless(ev, o) {
			timeless = append(timeless, ev)
		}
	}
	if _, err := samples.Write(dir, timeless); err != nil {
		t.Fatal(err)
	}
	names := func(d string) []string {
		files, err := filepath.Glob(filepath.Join(d, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, 0, len(files))
		for _, f := range files {
			out = append(out, filepath.Base(f))
		}
		sort.Strings(out)
		return out
	}
	want, got := names(dir), names(ingestDir)
	if !slices.Equal(got, want) {
		t.Fatalf("events/ingest holds %v, the timeless events are %v: run go run ./scripts/events -committed", got, want)
	}
	cfgs := demo(t)
	reg := provider.Registry()
	for _, name := range got {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(ingestDir, name))
			if err != nil {
				t.Fatal(err)
			}
			var ev events.APIGatewayV2HTTPRequest
			dec := json.NewDecoder(strings.NewReader(string(b)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&ev); err != nil {
				t.Fatalf("not an HTTP API event: %v", err)
			}
			req := toRequest(t, ev)
			p, ok := reg.Lookup(req.Provider)
			if !ok || req.Tenant != "demo" {
				t.Fatalf("addressed to %s/%s, want demo and a registered provider", req.Tenant, req.Provider)
			}
			if req.Method == http.MethodGet {
				if _, ok, err := p.(webhook.Handshaker).Handshake(req, cfgs[req.Provider]); !ok || err != nil {
					t.Errorf("Handshake() = %v, %v: run make events", ok, err)
				}
				return
			}
			if err := p.Verify(req, cfgs[req.Provider], time.Now().AddDate(1, 0, 0)); err != nil {
				t.Errorf("Verify(a year from now) = %v: run go run ./scripts/events -committed", err)
			}
		})
	}
}

func TestWriteReplacesTheFolder(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"github.json", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	evs := generate(t, time.Now())
	removed, err := samples.Write(dir, evs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{"github.json"}) {
		t.Errorf("Write() removed %v, want [github.json]", removed)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Errorf("Write() removed a file that is not an event: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, evs[0].File))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"authentication"`) || !strings.HasSuffix(string(b), "}\n") {
		t.Errorf("%s = %s; want no requestContext.authentication (no mTLS) and a final newline", evs[0].File, b)
	}
}

// TestEnvJSONMatchesTemplate keeps events/env.json (make invoke's
// environment) declaring exactly the variables template.yaml gives
// IngestFunction, rendered as CloudFormation will see it.
func TestEnvJSONMatchesTemplate(t *testing.T) {
	out, err := render.JSON(context.Background(), root, "template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tpl struct {
		Resources map[string]struct {
			Properties struct {
				Environment struct {
					Variables map[string]any `json:"Variables"`
				} `json:"Environment"`
			} `json:"Properties"`
		} `json:"Resources"`
	}
	if err := json.Unmarshal(out, &tpl); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "events", "env.json"))
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]map[string]string
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("events/env.json: %v", err)
	}
	// "Parameters" applies to every function: sam local invoke passes the
	// variables the template declares (the endpoints); the credentials and
	// region there are for make invoke, SAM sets those itself.
	invokeOnly := map[string]bool{"AWS_ACCESS_KEY_ID": true, "AWS_SECRET_ACCESS_KEY": true, "AWS_REGION": true}
	for _, fn := range []string{"IngestFunction", "WorkerFunction"} {
		declared := tpl.Resources[fn].Properties.Environment.Variables
		want := slices.Sorted(maps.Keys(declared))
		got := slices.Collect(maps.Keys(env[fn]))
		for k := range env["Parameters"] {
			if _, ok := declared[k]; ok {
				got = append(got, k)
			} else if !invokeOnly[k] {
				t.Errorf("events/env.json Parameters.%s: not declared by %s, sam local invoke would drop it", k, fn)
			}
		}
		slices.Sort(got)
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("events/env.json %s declares %v, template.yaml %v", fn, got, want)
		}
	}
}

// TestCommittedWorkerEvent keeps events/worker/sqs-batch.json what
// `go run ./scripts/events -committed` writes: the messages the ingest path
// queues today for the samples (a stale key has the worker apply a delivery
// that ingest later queues again under its current key a second time), each
// with SequenceNumber 0, below every number SQS assigns.
func TestCommittedWorkerEvent(t *testing.T) {
	path := root + "/events/worker/sqs-batch.json"
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var committed events.SQSEvent
	if err := json.Unmarshal(got, &committed); err != nil || len(committed.Records) == 0 {
		t.Fatalf("%s is no SQS event with records: %v", path, err)
	}
	first, err := envelope.Decode([]byte(committed.Records[0].Body))
	if err != nil {
		t.Fatalf("%s: first record: %v", path, err)
	}
	all, err := providertest.LoadSamples(samplesDir)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := samples.WorkerBatch(all, samples.WorkerOptions{
		Tenant: "demo", Providers: demo(t), Registry: provider.Registry(), Now: first.ReceivedAt,
		QueueARN: "arn:aws:sqs:us-east-1:123456789012:" + devstack.QueueName(devstack.DefaultName, "demo") + ".fifo",
	})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := samples.WriteWorker(t.TempDir(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := os.ReadFile(fresh); !bytes.Equal(got, want) {
		for i := range min(len(batch.Records), len(committed.Records)) {
			if g, w := committed.Records[i].Attributes["MessageDeduplicationId"], batch.Records[i].Attributes["MessageDeduplicationId"]; g != w {
				t.Errorf("record %d: deduplication id %s, ingest queues it as %s", i, g, w)
			}
		}
		t.Fatalf("%s is not the batch the samples make today: run go run ./scripts/events -committed", path)
	}
}
