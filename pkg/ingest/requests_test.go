package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/local/awscount"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/route"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// TestAWSRequestsPerWebhook holds the request budget: accepted = 3 (a
// strongly consistent GetItem, 1 RRU; the send; one PutItem, 1 WRU: the
// only write), duplicate = 1 (the GetItem), a batch of n events of distinct
// conversations = 2n + ⌈n/10⌉ (n events of one conversation: 3n, a send
// each, so that a failed one is never overtaken),
// credentials fetched 0 times per warm request (cold: the inbound and
// routes parameters). More requests cost money
// and latency on every webhook.
func TestAWSRequestsPerWebhook(t *testing.T) {
	distinct := func(n int) [][2]int {
		out := make([][2]int, n)
		for i := range out {
			out[i] = [2]int{100 + i, 1}
		}
		return out
	}
	ctx := context.Background()
	e := emulate(t, awstest.Moto(t), 3, map[string]tenant.Inbound{"acme": {Providers: map[string]webhook.Config{
		"github": {Secrets: []string{acmeGitHubSecret}}, "whatsapp": {Secrets: []string{acmeWhatsAppSecret}},
	}}})

	counter := awscount.New()
	cfg := counter.Install(e.cfg)
	h := NewAWS(cfg, e.settings(), slog.New(slog.DiscardHandler))
	if got := counter.Take(); len(got) != 0 {
		t.Fatalf("building the handler made AWS requests: %v", got)
	}

	// Each delivery is another event: other signed content (the key is the
	// body's hash).
	github := func(delivery string) events.APIGatewayV2HTTPRequest {
		return githubRequest("acme", acmeGitHubSecret, strings.Replace(githubBody, "42", delivery, 1), delivery)
	}
	steps := []struct {
		name string
		req  events.APIGatewayV2HTTPRequest
		want map[string]int
	}{
		{"cold accepted", github("1"), map[string]int{"SSM.GetParametersByPath": 1, "SSM.GetParameter": 2, "DynamoDB.GetItem": 1, "SQS.SendMessageBatch": 1, "DynamoDB.PutItem": 1}},
		{"warm accepted", github("2"), map[string]int{"DynamoDB.GetItem": 1, "SQS.SendMessageBatch": 1, "DynamoDB.PutItem": 1}},
		{"duplicate", github("2"), map[string]int{"DynamoDB.GetItem": 1}},
		// A batched delivery: one read and one write per event, one send
		// per 10 conversations, one per event of a conversation.
		{"batch of 23 conversations accepted", whatsappDelivery(acmeWhatsAppSecret, distinct(23)), map[string]int{"DynamoDB.GetItem": 23, "SQS.SendMessageBatch": 3, "DynamoDB.PutItem": 23}},
		{"batch of 3 events of one conversation accepted", whatsappBatch(acmeWhatsAppSecret, 9, 3), map[string]int{"DynamoDB.GetItem": 3, "SQS.SendMessageBatch": 3, "DynamoDB.PutItem": 3}},
		{"batch of 3 duplicates", whatsappBatch(acmeWhatsAppSecret, 9, 3), map[string]int{"DynamoDB.GetItem": 3}},
	}
	for _, s := range steps {
		resp, _ := h.Handle(ctx, s.req)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d %s", s.name, resp.StatusCode, resp.Body)
		}
		if got := counter.Take(); fmt.Sprint(got) != fmt.Sprint(s.want) {
			t.Errorf("%s: AWS requests = %v, want %v", s.name, got, s.want)
		}
	}
	// A rejected delivery (bad signature) costs no AWS request once warm.
	h.Handle(ctx, githubRequest("acme", "wrong", githubBody, "req-3"))
	if got := counter.Take(); len(got) != 0 {
		t.Errorf("rejected delivery: AWS requests = %v, want none", got)
	}

	// Unknown tenants cost nothing: no AWS request, no cache entry.
	dir := h.cfg.Tenants.(*tenant.Directory[tenant.Inbound])
	before := dir.Cached()
	for i := range 1000 {
		id := fmt.Sprintf("t%x", rand.Uint64())
		resp, _ := h.Handle(ctx, githubRequest(id, acmeGitHubSecret, githubBody, fmt.Sprint("u-", i)))
		if resp.StatusCode != 404 {
			t.Fatalf("unknown tenant %s: status %d %s, want 404", id, resp.StatusCode, resp.Body)
		}
	}
	if got := counter.Take(); len(got) != 0 {
		t.Errorf("1,000 unknown tenants: AWS requests = %v, want none", got)
	}
	if after := dir.Cached(); after != before {
		t.Errorf("1,000 unknown tenants: cache holds %d entries, was %d", after, before)
	}
}

// TestStreamsOneSend: an event of a tenant with three destinations, two of
// whose filters select it, is queued as three messages (its custom
// effects' and two streams') in one SendMessageBatch, each on its own
// group, naming its stream.
func TestStreamsOneSend(t *testing.T) {
	ctx := context.Background()
	in := tenant.Inbound{Providers: map[string]webhook.Config{"github": {Secrets: []string{acmeGitHubSecret}}}}
	e := emulate(t, awstest.Moto(t), 3, map[string]tenant.Inbound{"acme": in})
	secret := []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	out := tenant.Outbound{Destinations: []tenant.Destination{
		{Name: "ci", URL: "https://ci.example", Secrets: secret, Filter: &route.Filter{Events: []string{"github:issues"}}},
		{Name: "all", URL: "https://all.example", Secrets: secret},
		{Name: "pushes", URL: "https://push.example", Secrets: secret, Filter: &route.Filter{Events: []string{"github:push"}}},
	}}
	if err := e.credentials().Put(ctx, "acme", in, out, "", provider.Registry()); err != nil {
		t.Fatal(err)
	}
	counter := awscount.New()
	h := NewAWS(counter.Install(e.cfg), e.settings(), slog.New(slog.DiscardHandler))
	if resp, _ := h.Handle(ctx, githubRequest("acme", acmeGitHubSecret, githubBody, "d1")); resp.StatusCode != 200 {
		t.Fatalf("status %d %s", resp.StatusCode, resp.Body)
	}
	if got := counter.Take(); got["SQS.SendMessageBatch"] != 1 {
		t.Errorf("AWS requests = %v, want one SQS.SendMessageBatch", got)
	}
	r, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &e.pair.URL, MaxNumberOfMessages: 10,
		MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"MessageGroupId"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{} // stream → group
	conv := ""
	for _, m := range r.Messages {
		got[aws.ToString(m.MessageAttributes[queue.AttrStream].StringValue)] = m.Attributes["MessageGroupId"]
		conv = aws.ToString(m.MessageAttributes[queue.AttrConversation].StringValue)
	}
	want := map[string]string{"effects": conv, "forward:ci": queue.StreamGroup(conv, "ci"), "forward:all": queue.StreamGroup(conv, "all")}
	if conv == "" || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("queued (stream → group) = %v, want %v", got, want)
	}
}
