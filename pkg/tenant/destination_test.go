package tenant

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/route"
	"github.com/hookpack/hookpack/pkg/webhook"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want float64 // 0: invalid
	}{
		{"20/s", 20},
		{"1/s", 1},
		{"600/m", 10},
		{"30/m", 0.5},
		{"1/h", 1.0 / 3600},
		{"3600/h", 1},
		{"1000/s", 1000},
		{"60000/m", 1000},
		{"1001/s", 0},
		{"60001/m", 0},
		{"0/s", 0},
		{"-1/s", 0},
		{"+1/s", 0},
		{"1.5/s", 0},
		{"20", 0},
		{"20/d", 0},
		{"20/sec", 0},
		{"/s", 0},
		{"20/S", 0},
		{" 20/s", 0},
		{"", 0},
		{"99999999999/s", 0},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if tt.want == 0 {
			if err == nil || !errors.Is(err, ErrInvalid) {
				t.Errorf("ParseRate(%q) = %v, %v, want ErrInvalid", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseRate(%q) = %v, %v, want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestLimit(t *testing.T) {
	tests := []struct {
		rate    string
		burst   int
		want    Limit
		wantErr bool
	}{
		{"", 0, Limit{}, false},
		{"20/s", 0, Limit{PerSecond: 20, Burst: 20}, false},
		{"20/s", 40, Limit{PerSecond: 20, Burst: 40}, false},
		{"30/m", 0, Limit{PerSecond: 0.5, Burst: 1}, false}, // at least 1
		{"90/m", 0, Limit{PerSecond: 1.5, Burst: 1}, false}, // rounded down
		{"1/h", 5, Limit{PerSecond: 1.0 / 3600, Burst: 5}, false},
		{"1000/s", 0, Limit{PerSecond: 1000, Burst: 1000}, false},
		{"20/s", MaxBurst, Limit{PerSecond: 20, Burst: MaxBurst}, false},
		{"20/s", MaxBurst + 1, Limit{}, true},
		{"20/s", -1, Limit{}, true},
		{"", 5, Limit{}, true},
		{"fast", 0, Limit{}, true},
	}
	for _, tt := range tests {
		got, err := Destination{Rate: tt.rate, Burst: tt.burst}.Limit()
		if (err != nil) != tt.wantErr || got != tt.want || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("Limit(%q, %d) = %+v, %v, want %+v (error: %v)", tt.rate, tt.burst, got, err, tt.want, tt.wantErr)
		}
	}
}

const (
	secret  = "whsec_s3cr3tValue"
	secret2 = "whsec_0therValue"
)

// outbound decodes an outbound.json document in which $S stands for the
// secret.
func outbound(t testing.TB, doc string) Outbound {
	t.Helper()
	var o Outbound
	if err := json.Unmarshal([]byte(strings.ReplaceAll(doc, "$S", secret)), &o); err != nil {
		t.Fatalf("outbound %s: %v", doc, err)
	}
	return o
}

func TestValidateDestinations(t *testing.T) {
	const dest = `{"name":"billing","url":"https://billing.example/hooks?token=$S","secrets":["$S"]}`
	in := Inbound{Providers: map[string]webhook.Config{"stripe": {Secrets: []string{"x"}}, "github": {Secrets: []string{"y"}}}}
	tests := []struct {
		name string
		doc  string
		want []string // every problem, in order; none: valid
	}{
		{"legacy", `{"targetUrl":"https://t.example","secrets":["$S"],"timeout":"10s"}`, nil},
		{"nothing", `{}`, nil},
		{"one destination", `{"destinations":[` + dest + `]}`, nil},
		{"every field", `{"destinations":[{"name":"billing-2","url":"https://b.example","secrets":["$S","` + secret2 + `"],"timeout":"5s","rate":"20/s","burst":40,
			"filter":{"events":["stripe:invoice.*","github:*","*:push"],"where":[{"path":"data.object.currency","in":["usd","eur"]},{"path":"livemode","equals":true},{"path":"x","exists":true}]}},
			{"name":"ops","url":"https://ops.example","secrets":["$S"],"rate":"100/h"}]}`, nil},
		{"both forms", `{"targetUrl":"https://t.example","secrets":["$S"],"timeout":"10s","destinations":[` + dest + `]}`,
			[]string{"outbound.destinations: set targetUrl or destinations, not both",
				"outbound.secrets: with destinations, each destination has its own secrets",
				"outbound.timeout: with destinations, each destination has its own timeout"}},
		{"top-level secrets", `{"secrets":["$S"],"destinations":[` + dest + `]}`, []string{"outbound.secrets: with destinations"}},
		{"empty list", `{"destinations":[]}`, []string{"outbound.destinations: empty list"}},
		{"no name", `{"destinations":[{"url":"https://b.example","secrets":["$S"]}]}`, []string{"outbound.destinations[0].name: missing"}},
		{"bad names", `{"destinations":[{"name":"Billing","url":"https://a.example","secrets":["$S"]},{"name":"-a","url":"https://b.example","secrets":["$S"]},
			{"name":"a_b","url":"https://c.example","secrets":["$S"]},{"name":"` + strings.Repeat("a", MaxNameLength+1) + `","url":"https://d.example","secrets":["$S"]},
			{"name":"` + strings.Repeat("a", MaxNameLength) + `","url":"https://e.example","secrets":["$S"]}]}`,
			[]string{"outbound.destinations[0].name: not a-z", "outbound.destinations[1].name: not a-z", "outbound.destinations[2].name: not a-z",
				fmt.Sprintf("outbound.destinations[3].name: longer than %d characters", MaxNameLength)}},
		{"duplicate name", `{"destinations":[` + dest + `,{"name":"billing","url":"https://b.example","secrets":["$S"]}]}`,
			[]string{"outbound.destinations[1].name: the name of destinations[0] too"}},
		{"duplicate url", `{"destinations":[` + dest + `,{"name":"b","url":"https://billing.example/hooks?token=$S","secrets":["$S"]}]}`,
			[]string{"outbound.destinations[1].url: the URL of destinations[0] too"}},
		{"bad urls", `{"destinations":[{"name":"a","url":"","secrets":["$S"]},{"name":"b","url":"ftp://x","secrets":["$S"]},{"name":"c","url":"https://u:$S@x.example","secrets":["$S"]}]}`,
			[]string{"outbound.destinations[0].url: empty URL", "outbound.destinations[1].url: not an absolute http(s) URL", "outbound.destinations[2].url: URL must not carry user information"}},
		{"secrets", `{"destinations":[{"name":"a","url":"https://a.example"},{"name":"b","url":"https://b.example","secrets":["$S"," "]}]}`,
			[]string{"outbound.destinations[0].secrets: at least one secret is required", "outbound.destinations[1].secrets[1]: empty secret"}},
		{"timeouts", `{"destinations":[{"name":"a","url":"https://a.example","secrets":["$S"],"timeout":"soon"},{"name":"b","url":"https://b.example","secrets":["$S"],"timeout":"0s"}]}`,
			[]string{"outbound.destinations[0].timeout: not a positive duration", "outbound.destinations[1].timeout: not a positive duration"}},
		{"rates", `{"destinations":[{"name":"a","url":"https://a.example","secrets":["$S"],"rate":"20"},{"name":"b","url":"https://b.example","secrets":["$S"],"rate":"2000/s"}]}`,
			[]string{`outbound.destinations[0].rate: not "<n>/s"`, "outbound.destinations[1].rate: over 1000 per second"}},
		{"bursts", `{"destinations":[{"name":"a","url":"https://a.example","secrets":["$S"],"burst":5},{"name":"b","url":"https://b.example","secrets":["$S"],"rate":"1/s","burst":-1},
			{"name":"c","url":"https://c.example","secrets":["$S"],"rate":"1/s","burst":1001}]}`,
			[]string{"outbound.destinations[0].burst: a burst needs a rate", "outbound.destinations[1].burst: not 1 to 1000", "outbound.destinations[2].burst: not 1 to 1000"}},
		{"filters", `{"destinations":[{"name":"a","url":"https://a.example","secrets":["$S"],"filter":{"events":["stripe"],"where":[{"path":"a","equals":1,"in":[1]},{"path":"b","in":[]},{"path":"c..d","exists":true}]}}]}`,
			[]string{`outbound.destinations[0].filter.events[0]: want "<sender>:<type pattern>"`, "outbound.destinations[0].filter.where[0]: sets more than one of equals, in and exists",
				"outbound.destinations[0].filter.where[1].in: empty list", "outbound.destinations[0].filter.where[2].path: an empty segment"}},
		{"senders", `{"destinations":[{"name":"a","url":"https://a.example","secrets":["$S"],"filter":{"events":["paypal:*","shopify:orders/create","stripe:*","*"]}}]}`,
			[]string{`outbound.destinations[0].filter.events[0]: unknown sender "paypal"`,
				`outbound.destinations[0].filter.events[1]: sender "shopify" is not enabled in the tenant's inbound configuration`}},
		{"every problem at once", `{"targetUrl":"https://t.example","secrets":["$S"],"destinations":[{"name":"A","url":"ftp://x","secrets":[""],"timeout":"x","rate":"x","filter":{"events":[":x"]}},
			{"name":"A","url":"ftp://x","burst":3}]}`,
			[]string{"outbound.destinations: set targetUrl or destinations, not both", "outbound.secrets: with destinations",
				"outbound.destinations[0].name: not a-z", "outbound.destinations[0].url: not an absolute", "outbound.destinations[0].secrets[0]: empty secret",
				"outbound.destinations[0].timeout: not a positive duration", `outbound.destinations[0].rate: not "<n>/s"`, "outbound.destinations[0].filter.events[0]: no sender",
				"outbound.destinations[1].name: not a-z", "outbound.destinations[1].url: not an absolute", "outbound.destinations[1].secrets: at least one secret", "outbound.destinations[1].burst: a burst needs a rate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := outbound(t, tt.doc).ValidateWith("acme", provider.Registry(), &in)
			var got []string
			if err != nil {
				for _, line := range strings.Split(err.Error(), "\n") {
					got = append(got, strings.TrimPrefix(line, ErrInvalid.Error()+`: tenant "acme": `))
				}
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("ValidateWith() = %v, want ErrInvalid", err)
				}
				if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "billing.example") {
					t.Errorf("ValidateWith() error %q reveals a secret or a URL", err)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("ValidateWith() = %d problems\n%s\nwant %d: %q", len(got), strings.Join(got, "\n"), len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("problem %d = %q, want %q…", i, got[i], w)
				}
			}
		})
	}
}

// TestValidateLeavesSendersToValidateWith: Validate, which the worker runs
// without the registry, checks a filter's form but not which senders exist;
// ValidateWith without an inbound configuration checks only the registry.
func TestValidateLeavesSendersToValidateWith(t *testing.T) {
	o := outbound(t, `{"destinations":[{"name":"a","url":"https://a.example","secrets":["$S"],"filter":{"events":["paypal:*","shopify:*"]}}]}`)
	if err := o.Validate("acme"); err != nil {
		t.Errorf("Validate() = %v, want nil", err)
	}
	err := o.ValidateWith("acme", provider.Registry(), nil)
	if err == nil || !strings.Contains(err.Error(), `unknown sender "paypal"`) || strings.Contains(err.Error(), `"shopify"`) {
		t.Errorf("ValidateWith(no inbound) = %v, want only the unknown sender paypal", err)
	}
}

func TestMatch(t *testing.T) {
	body, err := os.ReadFile("testdata/stripe-invoice-paid.json")
	if err != nil {
		t.Fatal(err)
	}
	three := outbound(t, `{"destinations":[
		{"name":"everything","url":"https://all.example","secrets":["$S"]},
		{"name":"billing","url":"https://billing.example","secrets":["$S"],"filter":{"events":["stripe:invoice.*"],"where":[{"path":"data.object.currency","in":["usd","eur"]}]}},
		{"name":"live","url":"https://live.example","secrets":["$S"],"filter":{"where":[{"path":"livemode","equals":true}]}},
		{"name":"code","url":"https://code.example","secrets":["$S"],"filter":{"events":["github:*"]}}]}`)
	legacy := outbound(t, `{"targetUrl":"https://t.example","secrets":["$S"],"timeout":"5s"}`)
	tests := []struct {
		name string
		out  Outbound
		ev   *route.Event
		want []string // destination names; "" is the legacy destination
	}{
		{"configuration order", three, route.NewEvent("stripe", "invoice.paid", body), []string{"everything", "billing", "live"}},
		{"events only", three, route.NewEvent("github", "push", []byte(`{"livemode":false}`)), []string{"everything", "code"}},
		{"body not JSON", three, route.NewEvent("stripe", "invoice.paid", []byte("livemode=true")), []string{"everything"}},
		{"legacy: every event", legacy, route.NewEvent("github", "push", []byte("x")), []string{""}},
		{"no outbound: none", Outbound{}, route.NewEvent("github", "push", nil), nil},
		{"none selects it", outbound(t, `{"destinations":[{"name":"a","url":"https://a.example","secrets":["$S"],"filter":{"events":["github:*"]}}]}`),
			route.NewEvent("stripe", "invoice.paid", body), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, d := range tt.out.Match(tt.ev) {
				got = append(got, d.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Match() = %q, want %q", got, tt.want)
			}
		})
	}
	if got := legacy.Targets(); len(got) != 1 || got[0].URL != legacy.TargetURL || got[0].Timeout != "5s" || got[0].Secrets[0] != secret || got[0].Filter != nil {
		t.Errorf("Targets() of a targetUrl = %+v, want its URL, secrets and timeout", got)
	}
}

// TestOutboundRoundTrip: what SSM.Put writes reads back the same.
func TestOutboundRoundTrip(t *testing.T) {
	o := outbound(t, `{"destinations":[{"name":"billing","url":"https://b.example","secrets":["$S"],"timeout":"5s","rate":"20/s","burst":40,
		"filter":{"events":["stripe:invoice.*"],"where":[{"path":"a","in":["usd",1]},{"path":"b","equals":null},{"path":"c","exists":false}]}}]}`)
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var back Outbound
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, o) {
		t.Errorf("round trip = %+v, want %+v", back, o)
	}
	if strings.Contains(string(b), "targetUrl") {
		t.Errorf("Marshal = %s: an unset targetUrl is written", b)
	}
}

// BenchmarkMatch is the worker's question for a typical event: a Stripe
// invoice.paid body against three destinations with filters, two of them
// with conditions (the body is decoded once). "bare" is the body's decode
// alone, as route.Event makes it: the floor of any filter with conditions.
func BenchmarkMatch(b *testing.B) {
	body, err := os.ReadFile("testdata/stripe-invoice-paid.json")
	if err != nil {
		b.Fatal(err)
	}
	o := outbound(b, `{"destinations":[
		{"name":"billing","url":"https://billing.example","secrets":["$S"],"rate":"20/s","filter":{"events":["stripe:invoice.*","stripe:customer.subscription.*"],"where":[{"path":"data.object.currency","in":["usd","eur"]}]}},
		{"name":"live","url":"https://live.example","secrets":["$S"],"filter":{"events":["stripe:*"],"where":[{"path":"livemode","equals":true},{"path":"data.object.amount_paid","exists":true}]}},
		{"name":"code","url":"https://code.example","secrets":["$S"],"filter":{"events":["github:*","gitlab:*"]}}]}`)
	b.Run("match", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if n := len(o.Match(route.NewEvent("stripe", "invoice.paid", body))); n != 2 {
				b.Fatalf("Match() = %d destinations, want 2", n)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var doc any
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			if err := dec.Decode(&doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
