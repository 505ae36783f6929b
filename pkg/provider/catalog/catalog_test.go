package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/provider/standardwebhooks"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// whsec are three Standard Webhooks secrets.
var whsec = [3]string{
	"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	"whsec_c3VpdGUtc2VjcmV0LXR3by1mb3Itc3c=",
	"whsec_c3VpdGUtc2VjcmV0LXRocmVlLWZvci1zdw==",
}

// nowMS is providertest.Now in Unix milliseconds (Linear's webhookTimestamp).
var nowMS = strconv.FormatInt(providertest.Now.UnixMilli(), 10)

// sender is one row's contract case: a delivery as the sender's docs show
// it, and how the sender changes it for a retry, another event and other
// content under the same id.
type sender struct {
	header map[string]string
	body   string
	// retry edits the delivery into the sender's own retry (nil: the same
	// bytes again, re-signed).
	retry func(*webhook.Request)
	// other makes another event.
	other func(*webhook.Request)
	// reused keeps the signed id and changes what it defines (nil: the id
	// is not signed).
	reused   func(*webhook.Request)
	settings map[string]string
	unsigned []string
	tampers  []providertest.Change
}

// set returns a request edit that sets the dotted JSON path to v.
func set(path string, v any) func(*webhook.Request) {
	return func(r *webhook.Request) { r.Body = setJSON(r.Body, path, v) }
}

// header returns a request edit that sets header k to v.
func header(k, v string) func(*webhook.Request) {
	return func(r *webhook.Request) { r.Header.Set(k, v) }
}

// both applies every edit.
func both(edits ...func(*webhook.Request)) func(*webhook.Request) {
	return func(r *webhook.Request) {
		for _, e := range edits {
			e(r)
		}
	}
}

func setJSON(body []byte, path string, v any) []byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		panic(err)
	}
	parts := strings.Split(path, ".")
	node := doc
	for i, p := range parts {
		last := i == len(parts)-1
		switch n := node.(type) {
		case map[string]any:
			if last {
				n[p] = v
			} else {
				node = n[p]
			}
		case []any:
			j, _ := strconv.Atoi(p)
			if last {
				n[j] = v
			} else {
				node = n[j]
			}
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return out
}

var senders = map[string]sender{
	"paddle": {
		body:  `{"event_id":"evt_01hv8x2acma2gz5mc9ynztm8gq","event_type":"transaction.paid","occurred_at":"2024-04-12T10:18:49.621022Z","notification_id":"ntf_01hv8x2af6bnh4v5z0v0gzb3y6","data":{"id":"txn_01hv8wptq8987qeep44cyrewp9","status":"paid","customer_id":"ctm_01hv8wt8nffez4p2t6typn4a5j","currency_code":"USD"}}`,
		retry: set("notification_id", "ntf_01hv8xreplayed0000000000000"),
		other: set("event_id", "evt_01hv8x2acma2gz5mc9ynzother"),
		// the same event id with another status
		reused: set("data.status", "billed"),
	},
	"linear": {
		header: map[string]string{"Linear-Delivery": "234d1a4e-b617-4388-90fe-adc3633d6b72", "Linear-Event": "Issue"},
		body:   `{"action":"update","type":"Issue","createdAt":"2024-04-12T10:18:49.621Z","data":{"id":"2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9","title":"Checkout fails","updatedAt":"2024-04-12T10:18:49.621Z","stateId":"8032f0b9"},"updatedFrom":{"stateId":"b3a4ab12","updatedAt":"2024-04-12T10:10:00.000Z"},"url":"https://linear.app/acme/issue/ENG-1","organizationId":"4fbd8d35","webhookTimestamp":` + nowMS + `,"webhookId":"000042e3-d123-4980-b49f-8e140eef9329"}`,
		// Linear re-stamps webhookTimestamp on every attempt and sends a new
		// Linear-Delivery.
		retry:    both(set("webhookTimestamp", json.Number(strconv.FormatInt(providertest.Now.UnixMilli()+30_000, 10))), header("Linear-Delivery", "7f4e0d5c-retry")),
		other:    set("data.updatedAt", "2024-04-12T10:20:00.000Z"),
		unsigned: []string{"Linear-Delivery", "Linear-Event"},
	},
	"square": {
		body:     `{"merchant_id":"6SSW7HV8K2ST5","type":"payment.updated","event_id":"6a8f5f28-54a1-4eb0-a98a-3111513fd4fc","created_at":"2024-04-12T10:18:49.621Z","data":{"type":"payment","id":"hYy9pRFVxpDsO1FB05SunFWUe9JZY","object":{"payment":{"id":"hYy9pRFVxpDsO1FB05SunFWUe9JZY","status":"COMPLETED"}}}}`,
		settings: map[string]string{"base_url": "https://hooks.example.com"},
		other:    set("event_id", "0b2fa6f9-54a1-4eb0-a98a-other"),
		reused:   set("data.object.payment.status", "FAILED"),
		tampers: []providertest.Change{{Name: "another URL path", Apply: func(r *webhook.Request) {
			r.URL = strings.Replace(r.URL, "/square", "/hmac", 1)
		}}},
	},
	"intercom": {
		body: `{"type":"notification_event","app_id":"a86dr8yl","data":{"type":"notification_event_data","item":{"type":"conversation","id":"147","state":"open"}},"links":{},"id":"notif_ccd8a4d0-f965-11e3-a367-c779cae3e1b3","topic":"conversation.user.replied","delivery_status":"pending","delivery_attempts":1,"delivered_at":0,"first_sent_at":1712916000,"created_at":1712915999,"self":null}`,
		// Intercom renders each attempt again.
		retry:  both(set("delivery_attempts", 2), set("delivery_status", "retry"), set("first_sent_at", 1712916000)),
		other:  set("id", "notif_other"),
		reused: set("data.item.state", "closed"),
	},
	"zendesk": {
		body:   `{"account_id":22129848,"detail":{"id":"35436","status":"OPEN","subject":"Help"},"event":{"current":"OPEN","previous":"NEW"},"id":"cbe4028c-7239-495d-b020-f22348516046","subject":"zen:ticket:35436","time":"2024-04-12T10:18:49Z","type":"zen:event-type:ticket.status_changed","zendesk_event_version":"2022-11-06"}`,
		other:  set("id", "0f1c2d3e-other"),
		reused: set("detail.status", "SOLVED"),
	},
	"clerk": {
		header: map[string]string{"Svix-Id": "msg_2cYwXbCaj6zCEAF4Ox8ZzHpOmzA"},
		body:   `{"data":{"id":"user_29w83sxmDNGwOuEthce5gg56FcC","object":"user","first_name":"Example","created_at":1654012591514},"event_attributes":{"http_request":{"client_ip":"0.0.0.0"}},"instance_id":"ins_123","object":"event","timestamp":1654012591835,"type":"user.created"}`,
		other:  header("Svix-Id", "msg_other"),
		reused: set("data.first_name", "Changed"),
	},
	"resend": {
		header: map[string]string{"Svix-Id": "msg_2nGc5pJwBBpV8D9TEWPsBOqrZ8L"},
		body:   `{"type":"email.delivered","created_at":"2024-04-12T10:18:49.621Z","data":{"email_id":"56761188-7520-42d8-8898-ff6fc54ce618","from":"Acme <onboarding@resend.dev>","to":["delivered@resend.dev"],"subject":"Sending this example"}}`,
		other:  header("Svix-Id", "msg_other"),
		reused: set("data.subject", "Changed"),
	},
	"openai": {
		header: map[string]string{"Webhook-Id": "wh_685342e6c53c8190a1be43f081506c52"},
		body:   `{"object":"event","id":"evt_685343a1381c819085d44c354e1b330e","type":"response.completed","created_at":1750287018,"data":{"id":"resp_abc123"}}`,
		other:  header("Webhook-Id", "wh_other"),
		reused: set("data.id", "resp_changed"),
	},
	"replicate": {
		header: map[string]string{"Webhook-Id": "msg_2Rf3kLDaXBsWnTOmoOoBFgzNO1W"},
		body:   `{"id":"ufawqhfynnddngldkgtslldrkq","version":"5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa","status":"succeeded","output":["https://replicate.delivery/out.png"],"created_at":"2024-04-12T10:18:49.621Z","completed_at":"2024-04-12T10:18:52.000Z"}`,
		other:  header("Webhook-Id", "msg_other"),
		reused: set("status", "failed"),
	},
	"bitbucket": {
		header: map[string]string{"X-Request-UUID": "afe1d7d4-3f1c-4c64-9b4b-1b3c5d0e1a2b", "X-Event-Key": "repo:push", "X-Hook-UUID": "cb2a9e5b-1b3c", "X-Attempt-Number": "1"},
		body:   `{"push":{"changes":[{"new":{"type":"branch","name":"main","target":{"hash":"709d658dc5b6d6afcd46049c2f332ee3f515a67d"}}}]},"repository":{"type":"repository","full_name":"acme/app","uuid":"{0e9c2e4c-5c4a-4b3e-9a43-f1f2a4e3a1b2}"},"actor":{"display_name":"Jane","uuid":"{a1b2}"}}`,
		// Bitbucket sends the same payload again with the attempt counted.
		retry:    both(header("X-Attempt-Number", "2"), header("X-Request-UUID", "0c9d8e7f-retry")),
		other:    set("push.changes.0.new.target.hash", "1111111111111111111111111111111111111111"),
		unsigned: []string{"X-Request-UUID", "X-Event-Key", "X-Attempt-Number"},
	},
	"woocommerce": {
		header:   map[string]string{"X-WC-Webhook-Source": "https://shop.example.com/", "X-WC-Webhook-Topic": "order.updated", "X-WC-Webhook-Resource": "order", "X-WC-Webhook-Event": "updated", "X-WC-Webhook-ID": "7", "X-WC-Webhook-Delivery-ID": "1234"},
		body:     `{"id":727,"parent_id":0,"status":"processing","currency":"USD","date_modified_gmt":"2024-04-12T10:18:49","total":"29.35","customer_id":0}`,
		retry:    header("X-WC-Webhook-Delivery-ID", "1235"),
		other:    set("status", "completed"),
		unsigned: []string{"X-WC-Webhook-Delivery-ID", "X-WC-Webhook-Topic"},
	},
	"typeform": {
		body:   `{"event_id":"01HV8X2ACMA2GZ5MC9YNZTM8GQ","event_type":"form_response","form_response":{"form_id":"lT4Z3j","token":"a3a12ec67a1365927098a606107fac15","submitted_at":"2024-04-12T10:18:49Z","answers":[{"type":"text","text":"It's great!","field":{"id":"DlXFaesGBpoF","type":"long_text"}}]}}`,
		other:  set("event_id", "01HV8X2ACMA2GZ5MC9YNZOTHER"),
		reused: set("form_response.answers.0.text", "Changed"),
	},
	"calendly": {
		body:  `{"created_at":"2024-04-12T10:18:49.000000Z","created_by":"https://api.calendly.com/users/AAAAAAAAAAAAAAAA","event":"invitee.created","payload":{"uri":"https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2/invitees/AAAAAAAAAAAAAAAA","email":"test@example.com","status":"active","scheduled_event":{"uri":"https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2"}}}`,
		other: set("event", "invitee.canceled"),
	},
	"sentry": {
		header:   map[string]string{"Sentry-Hook-Resource": "issue", "Sentry-Hook-Timestamp": "1712916000", "Request-ID": "1e2f3a4b-5c6d"},
		body:     `{"action":"created","installation":{"uuid":"a8e5d37a-696c-4c54-adb5-b3f28d64c7de"},"data":{"issue":{"id":"1170820242","title":"Error: boom","status":"unresolved"}},"actor":{"type":"application","id":"sentry","name":"Sentry"}}`,
		other:    set("data.issue.status", "resolved"),
		unsigned: []string{"Request-ID", "Sentry-Hook-Timestamp", "Sentry-Hook-Resource"},
	},
	"vercel": {
		body:   `{"id":"uiWvoCm8B5SDoHzd5pKTg","type":"deployment.created","createdAt":1712916000000,"region":"sfo1","payload":{"deployment":{"id":"dpl_2qYf3mNKw8zuKiXGkKxXhXbTo4ge","url":"app-abc.vercel.app"},"project":{"id":"prj_12HKQaOmR5t5Uy6vdcQsNIiZgHGB"}}}`,
		other:  set("id", "other0Cm8B5SDoHzd5pKTg"),
		reused: set("payload.deployment.url", "changed.vercel.app"),
	},
	"lemonsqueezy": {
		header: map[string]string{"X-Event-Name": "order_created"},
		body:   `{"meta":{"event_name":"order_created","custom_data":{"customer_id":25}},"data":{"type":"orders","id":"1","attributes":{"store_id":1,"identifier":"104e18a2-d755-4d4b-80c4-a6c1dcbe1c10","status":"paid","total":999,"created_at":"2024-04-12T10:18:49.000000Z"}}}`,
		other:  set("data.id", "2"),
	},
	"razorpay": {
		header:   map[string]string{"X-Razorpay-Event-Id": "LZaCfOGkGNlo4f"},
		body:     `{"entity":"event","account_id":"acc_BFQ7uQEaa7j2z7","event":"payment.captured","contains":["payment"],"payload":{"payment":{"entity":{"id":"pay_DESlfW9H8K9uqM","entity":"payment","amount":100,"currency":"INR","status":"captured","order_id":"order_DESlLckIVRkHWj"}}},"created_at":1567674606}`,
		other:    set("payload.payment.entity.id", "pay_OTHERfW9H8K9uq"),
		unsigned: []string{"X-Razorpay-Event-Id"},
	},
	"line": {
		body: `{"destination":"xxxxxxxxxx","events":[{"type":"message","message":{"type":"text","id":"468789577898262530","quoteToken":"q3Plxr4AgKd","text":"Hello, world"},"webhookEventId":"01H810YECXQQZ37VAXPF6H9E6T","deliveryContext":{"isRedelivery":false},"timestamp":1692251666727,"source":{"type":"user","userId":"U4af4980629"},"replyToken":"38ef843bde154d9b91c21320ffd17a0f","mode":"active"}]}`,
		// A redelivered event says so in deliveryContext.
		retry: both(set("events.0.deliveryContext", map[string]any{"isRedelivery": true}), set("events.0.replyToken", "redelivered0000000000000000000000")),
		other: set("events.0.webhookEventId", "01H810YECXQQZ37VAXPF6OTHER"),
	},
	"pagerduty": {
		body:   `{"event":{"id":"01DEN3ZXHEXNHB4UE4VOH1SAQR","event_type":"incident.triggered","resource_type":"incident","occurred_at":"2020-10-02T18:45:22.169Z","agent":null,"client":null,"data":{"id":"PGR0VU2","type":"incident","title":"A little bump in the road","status":"triggered"}}}`,
		other:  set("event.id", "01DEN3ZXHEXNHB4UE4VOOTHER"),
		reused: set("event.data.status", "resolved"),
	},
	"coinbase-commerce": {
		body: `{"id":1,"scheduled_for":"2017-01-31T20:50:02Z","attempt_number":1,"event":{"id":"24934862-d980-46cb-9402-43c81b0cdba6","resource":"event","type":"charge:created","api_version":"2018-03-22","created_at":"2017-01-31T20:49:02Z","data":{"code":"66BEOV2A","name":"The Sovereign Individual","pricing_type":"no_price"}}}`,
		// Each attempt counts itself and is scheduled anew.
		retry:  both(set("attempt_number", 2), set("scheduled_for", "2017-01-31T20:55:02Z")),
		other:  set("event.id", "0b1c2d3e-d980-46cb-9402-other"),
		reused: set("event.data.name", "Changed"),
	},
}

// deliveryOf returns the unsigned delivery of c to row's URL.
func deliveryOf(row *Row, c sender) *webhook.Request {
	r := providertest.Request(c.header, c.body)
	r.Header.Set("Content-Type", "application/json")
	r.URL = "https://abc123.execute-api.eu-west-1.amazonaws.com/webhooks/demo/" + row.Name
	return r
}

// TestContract runs every row through the provider contract suite with the
// sender's delivery and its retry as its documentation describes them.
func TestContract(t *testing.T) {
	for _, s := range Senders() {
		row := s.Row()
		t.Run(row.Name, func(t *testing.T) {
			c, ok := senders[row.Name]
			if !ok {
				t.Fatalf("no contract case for the row %q", row.Name)
			}
			tc := providertest.Case{
				Provider:   s,
				Request:    func() *webhook.Request { return deliveryOf(row, c) },
				Settings:   c.settings,
				Signature:  row.Header,
				OtherEvent: c.other,
				Retry:      c.retry,
				Reused:     c.reused,
				Unsigned:   c.unsigned,
				Tampers:    c.tampers,
				Vectors:    []providertest.Vector{providertest.SampleVector(t, row.Name, "delivery", signed(row)...)},
			}
			if tc.Retry == nil {
				tc.Retry = providertest.Resent
			}
			if row.Scheme == StandardWebhooks {
				tc.Vectors = append(tc.Vectors, specVector)
				tc.Secrets = whsec
				tc.Signature = "Webhook-Signature"
				if c.header["Svix-Id"] != "" {
					tc.Signature = "Svix-Signature"
				}
			}
			tc.Retries = row.Retries
			if row.Scheme == StandardWebhooks {
				tc.Retries = &standardwebhooks.Retries
			}
			providertest.Run(t, tc)
		})
	}
}

// specVector is the Standard Webhooks specification's reference vector
// (https://github.com/standard-webhooks/standard-webhooks, and
// docs/providers/standardwebhooks.md): every Standard Webhooks row verifies
// and reproduces it.
var specVector = providertest.Vector{
	Name: "Standard Webhooks specification",
	Request: func() *webhook.Request {
		return providertest.Request(map[string]string{
			"Webhook-Id":        "msg_p5jXN8AQM9LWM0D4loKWxJek",
			"Webhook-Timestamp": "1614265330",
			"Webhook-Signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
		}, `{"test": 2432232314}`)
	},
	Config:  webhook.Config{Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}},
	At:      time.Unix(1614265330, 0),
	Headers: []string{"Webhook-Signature"},
}

// signed returns the headers Sign writes for row.
func signed(row *Row) []string {
	switch {
	case row.Scheme == StandardWebhooks:
		return nil // the sample's family (webhook- or svix-) is its own
	case row.TimestampHeader != "":
		return []string{row.Header, row.TimestampHeader}
	}
	return []string{row.Header}
}

// TestCheck: a tenant entry needs only the secrets, plus the settings its
// row requires; anything else is named.
func TestCheck(t *testing.T) {
	senders := Senders()
	tests := []struct {
		sender string
		cfg    webhook.Config
		want   string // "" for nil, else a fragment of the error
	}{
		{"paddle", webhook.Config{Secrets: []string{"pdl_ntfset_x"}}, ""},
		{"paddle", webhook.Config{Secrets: []string{"pdl_ntfset_x"}, Settings: map[string]string{"tolerance": "30s"}}, ""},
		{"paddle", webhook.Config{}, "paddle: no secrets"},
		{"paddle", webhook.Config{Secrets: []string{"s"}, Settings: map[string]string{"header": "X-Other"}}, "paddle: unknown settings header (known: tolerance)"},
		{"paddle", webhook.Config{Secrets: []string{"s"}, Settings: map[string]string{"tolerance": "soon"}}, "tolerance"},
		{"square", webhook.Config{Secrets: []string{"s"}}, "square: missing settings base_url"},
		{"square", webhook.Config{Secrets: []string{"s"}, Settings: map[string]string{"base_url": "ftp://x"}}, "square: hmac: base_url"},
		{"square", webhook.Config{Secrets: []string{"s"}, Settings: map[string]string{"base_url": "https://hooks.example.com"}}, ""},
		{"line", webhook.Config{Secrets: []string{"s"}, Settings: map[string]string{"tolerance": "30s"}}, "line: unknown settings tolerance (it takes none)"},
		{"clerk", webhook.Config{Secrets: []string{whsec[0]}}, ""},
		{"clerk", webhook.Config{Secrets: []string{"not base64!"}}, "clerk: standardwebhooks: secret 1"},
	}
	for _, tt := range tests {
		t.Run(tt.sender, func(t *testing.T) {
			err := senders[tt.sender].Check(tt.cfg)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, webhook.ErrMisconfigured)) {
				t.Errorf("Check(%+v) = %v, want %q", tt.cfg, err, tt.want)
			}
		})
	}
	// Every row's engine accepts the row itself.
	for name, s := range senders {
		cfg := webhook.Config{Secrets: []string{whsec[0]}}
		for _, k := range s.Row().Required {
			cfg.Settings = map[string]string{k: "https://hooks.example.com"}
		}
		if err := s.Check(cfg); err != nil {
			t.Errorf("%s: Check(its secrets and required settings) = %v", name, err)
		}
	}
}

// TestRowRetries: a row that signs a timestamp states its sender's retries
// (Retries, the one place its window is set), and a row that signs none
// states none; the tenant's "tolerance" replaces the window's Past, up to
// the dedup retention, and leaves the sender's rule ahead.
func TestRowRetries(t *testing.T) {
	for _, s := range Senders() {
		row := s.Row()
		if hmac := row.Scheme == HMAC; (row.Retries != nil) != (hmac && row.timestamped()) {
			t.Errorf("%s: Retries %v on a row that signs a timestamp: %v", row.Name, row.Retries != nil, hmac && row.timestamped())
		}
	}
	all := Senders()
	tests := []struct {
		sender, tolerance string
		age               time.Duration // how old the signed timestamp is
		want              error
	}{
		{"paddle", "", time.Minute, nil}, // Paddle's SDK says 5 s; a minute spares cold starts and drift
		{"paddle", "", time.Minute + time.Second, webhook.ErrStale},
		{"paddle", "", -24 * time.Hour, nil}, // Paddle's SDK accepts any ts ahead
		{"paddle", "90s", 90 * time.Second, nil},
		{"paddle", "90s", -24 * time.Hour, nil},
		{"calendly", "", 24*time.Hour + 5*time.Minute, nil},
		{"calendly", "", -5*time.Minute - time.Second, webhook.ErrStale},
		{"calendly", "1h", time.Hour + time.Second, webhook.ErrStale},
		{"calendly", "1h", -5 * time.Minute, nil},
		{"zendesk", "", 96*time.Hour + 5*time.Minute, nil}, // no documented horizon: webhook.UndocumentedHorizon
		{"zendesk", "", 96*time.Hour + 5*time.Minute + time.Second, webhook.ErrStale},
		{"zendesk", "", -5*time.Minute - time.Second, webhook.ErrStale},
		{"zendesk", "10m", 10 * time.Minute, nil},
		{"zendesk", "10m", -5*time.Minute - time.Second, webhook.ErrStale},
		{"zendesk", "168h", 0, webhook.ErrMisconfigured},
		{"calendly", "200h", 0, webhook.ErrMisconfigured},
	}
	for _, tt := range tests {
		t.Run(tt.sender+"/"+tt.tolerance+"/"+tt.age.String(), func(t *testing.T) {
			s := all[tt.sender]
			cfg := webhook.Config{Secrets: []string{"suite-secret"}}
			if tt.tolerance != "" {
				cfg.Settings = map[string]string{"tolerance": tt.tolerance}
			}
			req := deliveryOf(s.Row(), senders[tt.sender])
			if err := s.Sign(req, webhook.Config{Secrets: cfg.Secrets}, providertest.Now.Add(-tt.age)); err != nil {
				t.Fatal(err)
			}
			if err := s.Verify(req, cfg, providertest.Now); !errors.Is(err, tt.want) || tt.want == nil && err != nil {
				t.Errorf("Verify(signed %s ago, tolerance %q) = %v, want %v", tt.age, tt.tolerance, err, tt.want)
			}
		})
	}
}

// TestRowsAreLazy: listing the senders builds no settings; a sender builds
// its own on first use only.
func TestRowsAreLazy(t *testing.T) {
	all := Senders()
	if len(all) != len(Rows) {
		t.Fatalf("Senders() = %d, want one per row (%d): a name is listed twice", len(all), len(Rows))
	}
	for name, s := range all {
		if s.fixed != nil {
			t.Errorf("%s built its settings before use", name)
		}
	}
	s := all["paddle"]
	_ = s.Verify(&webhook.Request{}, webhook.Config{Secrets: []string{"x"}}, providertest.Now)
	if s.fixed == nil || all["linear"].fixed != nil {
		t.Errorf("after a paddle delivery: paddle built %v, linear built %v; want paddle only", s.fixed != nil, all["linear"].fixed != nil)
	}
}

// TestTenantSettingsCannotChangeTheScheme: a setting the row owns is ignored
// at run time (Check refuses it at onboarding).
func TestTenantSettingsCannotChangeTheScheme(t *testing.T) {
	s := Senders()["paddle"]
	cfg := s.config(webhook.Config{Secrets: []string{"x"}, Settings: map[string]string{"header": "X-Forged", "tolerance": "30s"}})
	if cfg.Settings["header"] != "Paddle-Signature" || cfg.Settings["tolerance"] != "30s" {
		t.Errorf("config() settings = %v, want the row's header and the tenant's tolerance", cfg.Settings)
	}
}
