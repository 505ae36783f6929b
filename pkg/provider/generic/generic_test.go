package generic

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // Intercom signs with HMAC-SHA1
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Published vectors reproduced through settings alone, which is what this
// package promises: any provider's scheme is configuration.
//
//   - GitHub: https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
//     ("Testing the webhook payload validation").
//   - Slack: https://api.slack.com/authentication/verifying-requests-from-slack
//     (worked example with signing secret 8f742231b10e8888abcd99yyyzzz85a5).
//   - Stripe: stripe/stripe-dotnet EventUtilityTest (secret "webhook_secret",
//     t=1533204620, v1=2220f87e…), body in ../stripe/testdata.
const (
	githubSecret = "It's a Secret to Everybody"
	githubBody   = "Hello, World!"
	githubSig    = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"

	slackSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	slackTS     = "1531420618"
	slackBody   = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	slackSig    = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"

	stripeSecret = "webhook_secret"
	stripeV1     = "2220f87ef101a04665f11cdf770523143f875572008577fa0f20882ddb9cc3c7"
)

var (
	githubCfg = map[string]string{"header": "X-Hub-Signature-256", "prefix": "sha256="}
	slackCfg  = map[string]string{
		"header": "X-Slack-Signature", "prefix": "v0=", "signed": "v0:{timestamp}:{body}",
		"timestamp_header": "X-Slack-Request-Timestamp",
	}
	stripeCfg = map[string]string{
		"header": "Stripe-Signature", "param": "v1", "timestamp_param": "t", "signed": "{timestamp}.{body}",
	}
	// Paddle Billing: Paddle-Signature "ts=…;h1=…" over "{ts}:{body}"
	// (https://developer.paddle.com/webhooks/signature-verification).
	paddleCfg = map[string]string{
		"header": "Paddle-Signature", "separator": ";", "param": "h1", "timestamp_param": "ts",
		"signed": "{timestamp}:{body}", "tolerance": "60s",
		"id": "json:event_id", "type": "json:event_type", "conversation": "json:data.customer_id|json:data.id",
	}
	// Zendesk: base64(HMAC-SHA256(timestamp + body)), timestamp in its own
	// header (https://developer.zendesk.com/documentation/webhooks/verifying/).
	zendeskCfg = map[string]string{
		"header": "X-Zendesk-Webhook-Signature", "encoding": "base64",
		"timestamp_header": "X-Zendesk-Webhook-Signature-Timestamp", "signed": "{timestamp}{body}",
		"tolerance": "300s", "id": "json:id", "type": "json:type", "conversation": "json:subject",
	}
	// Square: base64(HMAC-SHA256(notification URL + body))
	// (https://developer.squareup.com/docs/webhooks/step3validate).
	squareCfg = map[string]string{
		"header": "X-Square-Hmacsha256-Signature", "encoding": "base64", "signed": "{url}{body}",
		"base_url": "https://hooks.example.com",
		"id":       "json:event_id", "type": "json:type", "conversation": "json:data.id",
	}
	// Intercom: X-Hub-Signature "sha1=" + hex HMAC-SHA1 of the body
	// (https://developers.intercom.com/docs/webhooks). A notification
	// carries delivery_status, delivery_attempts, delivered_at and
	// first_sent_at next to what happened (Intercom's webhook notification
	// object): the defining fields leave them out of the payload digest.
	intercomCfg = map[string]string{
		"header": "X-Hub-Signature", "algorithm": "sha1", "prefix": "sha1=",
		"id": "json:id", "type": "json:topic", "conversation": "json:data.item.id",
		"defining": "id,topic,app_id,created_at,data",
	}
	// Linear: Linear-Signature hex HMAC-SHA256 of the body; the signed
	// body's webhookTimestamp (ms) bounds replays (Linear's SDK allows 60 s).
	linearCfg = map[string]string{
		"header": "Linear-Signature", "timestamp_json": "webhookTimestamp", "tolerance": "60s",
		"id": "header:Linear-Delivery", "type": "json:type", "conversation": "json:data.issueId|json:data.id",
	}
)

func hexMAC(secret string, parts ...string) string {
	return hex.EncodeToString(providertest.MAC(sha256.New, secret, parts...))
}

func b64MAC(secret string, parts ...string) string {
	return base64.StdEncoding.EncodeToString(providertest.MAC(sha256.New, secret, parts...))
}

func stripeBody(t testing.TB) string {
	t.Helper()
	return string(providertest.ReadFile(t, "../stripe/testdata/event_test_signature.json"))
}

func req(headers map[string]string, body string) *webhook.Request {
	r := providertest.Request(headers, body)
	r.URL = "https://abc123.execute-api.eu-west-1.amazonaws.com/webhooks/acme/hmac"
	return r
}

func with(base map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// TestContract runs the contract suite for every worked configuration of
// docs/providers/hmac.md and a few more setting combinations; each also
// carries the published vectors reproduced through settings alone.
func TestContract(t *testing.T) {
	vectors := []providertest.Vector{
		{Name: "GitHub docs", Request: func() *webhook.Request { return req(map[string]string{"X-Hub-Signature-256": githubSig}, githubBody) },
			Config: webhook.Config{Secrets: []string{githubSecret}, Settings: githubCfg}, Headers: []string{"X-Hub-Signature-256"}},
		{Name: "Slack docs", Request: func() *webhook.Request {
			return req(map[string]string{"X-Slack-Signature": slackSig, "X-Slack-Request-Timestamp": slackTS}, slackBody)
		}, Config: webhook.Config{Secrets: []string{slackSecret}, Settings: slackCfg}, At: time.Unix(1531420618, 0),
			Headers: []string{"X-Slack-Signature", "X-Slack-Request-Timestamp"}},
		{Name: "stripe-dotnet", Request: func() *webhook.Request {
			return req(map[string]string{"Stripe-Signature": "t=1533204620,v1=" + stripeV1}, stripeBody(t))
		}, Config: webhook.Config{Secrets: []string{stripeSecret}, Settings: stripeCfg}, At: time.Unix(1533204620, 0),
			Headers: []string{"Stripe-Signature"}},
		providertest.SampleVector(t, "hmac", "paddle-transaction-paid", "Paddle-Signature"),
	}
	body := `{"id":"1","event_id":"evt_1","type":"x","topic":"t","subject":"s","data":{"id":"d1","customer_id":"c1","item":{"id":"i1"}},` +
		`"delivery_attempts":1,"first_sent_at":1699999990,"webhookTimestamp":` + strconv.FormatInt(providertest.Now.UnixMilli(), 10) + `}`
	// Intercom renders each attempt again: the attempt counter and the
	// send times change, the notification's id and data do not.
	rerendered := providertest.Replace(`"delivery_attempts":1,"first_sent_at":1699999990`, `"delivery_attempts":2,"first_sent_at":1700000025`)
	// The same signed id over other data: a reused id, answered 409.
	otherData := providertest.Replace(`"c1"`, `"c9"`)
	resent := providertest.Resent
	// Configurations that read the id from the body turn a body without it,
	// or a body that is not exactly one JSON value, into a 400.
	jsonID := []providertest.Change{
		{Name: "not JSON", Apply: providertest.Replace(`{`, `[`)},
		{Name: "trailing data", Apply: func(r *webhook.Request) { r.Body = append(r.Body, ` {}`...) }},
		{Name: "no id", Apply: providertest.Body(`{"type":"x"}`)},
	}
	tests := []struct {
		name      string
		settings  map[string]string
		tolerance time.Duration // of a signed timestamp; zero without one
		malformed []providertest.Change
		retry     func(*webhook.Request) // the sender's retry
		reused    func(*webhook.Request) // nil where the key is a content hash
	}{
		{"github-style prefix", githubCfg, 0, nil, resent, nil},
		{"slack-style timestamp header", slackCfg, DefaultTolerance, nil, resent, nil},
		{"stripe-style param list", stripeCfg, DefaultTolerance, nil, resent, nil},
		{"paddle", paddleCfg, time.Minute, jsonID, resent, otherData},
		{"zendesk base64", zendeskCfg, DefaultTolerance, jsonID, resent, otherData},
		{"square url", squareCfg, 0, jsonID, resent, otherData},
		{"intercom sha1", intercomCfg, 0, jsonID, rerendered, otherData},
		{"linear body timestamp", linearCfg, time.Minute, nil, resent, nil},
		{"sha512 base64 with prefix", map[string]string{"header": "X-Sig", "algorithm": "sha512", "encoding": "base64", "prefix": "sha512="}, 0, nil, resent, nil},
		{"param without timestamp", map[string]string{"header": "X-Sig", "param": "v1"}, 0, nil, resent, nil},
		{"timestamp header and param list", map[string]string{"header": "X-Sig", "param": "s", "timestamp_header": "X-Ts", "signed": "{timestamp}.{url}.{body}"}, DefaultTolerance, nil, resent, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			providertest.Run(t, providertest.Case{
				Provider: Provider{},
				Request: func() *webhook.Request {
					r := req(map[string]string{"Linear-Delivery": "ld1"}, body)
					r.URL += "?x=1"
					return r
				},
				Settings:  tt.settings,
				Signature: tt.settings["header"],
				Tolerance: tt.tolerance,
				OtherEvent: func(r *webhook.Request) {
					r.Body = []byte(strings.NewReplacer(`"1"`, `"2"`, "evt_1", "evt_2", "d1", "d2").Replace(string(r.Body)))
					r.Header.Set("Linear-Delivery", "ld2")
				},
				Retry:  tt.retry,
				Reused: tt.reused,
				// linearCfg reads its id from this header, which nothing signs.
				Unsigned:  []string{"Linear-Delivery"},
				Vectors:   vectors,
				Malformed: tt.malformed,
			})
		})
	}
}

func TestVerify(t *testing.T) {
	slackAt := time.Unix(1531420618, 0)
	paddleTS := "1671552777"
	paddleAt := time.Unix(1671552777, 0)
	paddleBody := `{"event_id":"evt_01h8bzakzx3hm2fmen703n5q45","event_type":"transaction.paid","data":{"id":"txn_01h8bx69629a16wwm9z8rjmak3","customer_id":"ctm_01h8441jn5pcwrfhwh78jqt8hk"}}`
	paddleSig := hexMAC("pdl_ntfset_secret", paddleTS, ":", paddleBody)
	zendeskTS := "2021-09-03T00:15:00Z"
	zendeskAt, _ := time.Parse(time.RFC3339, zendeskTS)
	zendeskBody := `{"type":"zen:event-type:ticket.created","id":"01F8"}`
	squareBody := `{"merchant_id":"6SSW7HV8K2ST5","type":"payment.updated","event_id":"13b867cf-db3d-4b1c-90b6-2f32a9d78124","data":{"id":"KkAkhdMsgzn59SM8A89WgKwekxLZY"}}`
	squareURL := "https://hooks.example.com/webhooks/acme/hmac"
	intercomBody := `{"type":"notification_event","id":"notif_ccd8a4d2","topic":"conversation.user.replied","data":{"item":{"type":"conversation","id":"147"}}}`
	intercomSig := "sha1=" + hex.EncodeToString(providertest.MAC(sha1.New, "intercom-secret", intercomBody))
	linearBody := `{"action":"update","type":"Issue","data":{"id":"2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9"},"webhookTimestamp":1714478400000}`
	linearAt := time.UnixMilli(1714478400000)

	tests := []struct {
		name    string
		secrets []string
		set     map[string]string
		headers map[string]string
		body    string
		now     time.Time
		want    error
	}{
		// Tampering (the contract suite covers the rest).
		{"slack timestamp tampered", []string{slackSecret}, slackCfg, map[string]string{"X-Slack-Signature": slackSig, "X-Slack-Request-Timestamp": "1531420619"}, slackBody, slackAt, webhook.ErrInvalidSignature},

		// Timestamps.
		{"slack stale", []string{slackSecret}, slackCfg, map[string]string{"X-Slack-Signature": slackSig, "X-Slack-Request-Timestamp": slackTS}, slackBody, slackAt.Add(301 * time.Second), webhook.ErrStale},
		{"slack future", []string{slackSecret}, slackCfg, map[string]string{"X-Slack-Signature": slackSig, "X-Slack-Request-Timestamp": slackTS}, slackBody, slackAt.Add(-301 * time.Second), webhook.ErrStale},
		{"slack tolerance setting", []string{slackSecret}, with(slackCfg, "tolerance", "1h"), map[string]string{"X-Slack-Signature": slackSig, "X-Slack-Request-Timestamp": slackTS}, slackBody, slackAt.Add(30 * time.Minute), nil},
		{"slack missing timestamp", []string{slackSecret}, slackCfg, map[string]string{"X-Slack-Signature": slackSig}, slackBody, slackAt, webhook.ErrMissingSignature},
		{"stripe stale", []string{stripeSecret}, stripeCfg, map[string]string{"Stripe-Signature": "t=1533204620,v1=" + stripeV1}, "", time.Unix(1533204620+301, 0), webhook.ErrStale},
		{"stripe missing t", []string{stripeSecret}, stripeCfg, map[string]string{"Stripe-Signature": "v1=" + stripeV1}, "", time.Unix(1533204620, 0), webhook.ErrMissingSignature},
		{"stripe missing v1", []string{stripeSecret}, stripeCfg, map[string]string{"Stripe-Signature": "t=1533204620"}, "", time.Unix(1533204620, 0), webhook.ErrMissingSignature},
		{"stripe garbage v1 then good v1", []string{stripeSecret}, stripeCfg, map[string]string{"Stripe-Signature": "t=1533204620,v1=zz,v1=" + stripeV1}, "", time.Unix(1533204620, 0), nil},

		// Worked configurations from docs/providers/hmac.md.
		{"paddle", []string{"pdl_ntfset_secret"}, paddleCfg, map[string]string{"Paddle-Signature": "ts=" + paddleTS + ";h1=" + paddleSig}, paddleBody, paddleAt.Add(10 * time.Second), nil},
		{"paddle rotation: two h1", []string{"pdl_ntfset_secret"}, paddleCfg, map[string]string{"Paddle-Signature": "ts=" + paddleTS + ";h1=" + strings.Repeat("0", 64) + ";h1=" + paddleSig}, paddleBody, paddleAt, nil},
		{"paddle stale", []string{"pdl_ntfset_secret"}, paddleCfg, map[string]string{"Paddle-Signature": "ts=" + paddleTS + ";h1=" + paddleSig}, paddleBody, paddleAt.Add(61 * time.Second), webhook.ErrStale},
		{"zendesk", []string{"zd-secret"}, zendeskCfg, map[string]string{"X-Zendesk-Webhook-Signature": b64MAC("zd-secret", zendeskTS, zendeskBody), "X-Zendesk-Webhook-Signature-Timestamp": zendeskTS}, zendeskBody, zendeskAt, nil},
		{"zendesk stale", []string{"zd-secret"}, zendeskCfg, map[string]string{"X-Zendesk-Webhook-Signature": b64MAC("zd-secret", zendeskTS, zendeskBody), "X-Zendesk-Webhook-Signature-Timestamp": zendeskTS}, zendeskBody, zendeskAt.Add(time.Hour), webhook.ErrStale},
		{"square with base_url", []string{"sq-key"}, squareCfg, map[string]string{"X-Square-Hmacsha256-Signature": b64MAC("sq-key", squareURL, squareBody)}, squareBody, slackAt, nil},
		{"square signed for another url", []string{"sq-key"}, squareCfg, map[string]string{"X-Square-Hmacsha256-Signature": b64MAC("sq-key", "https://evil.example/webhooks/acme/hmac", squareBody)}, squareBody, slackAt, webhook.ErrInvalidSignature},
		{"intercom sha1", []string{"intercom-secret"}, intercomCfg, map[string]string{"X-Hub-Signature": intercomSig}, intercomBody, slackAt, nil},
		{"linear", []string{"lin_wh_secret"}, linearCfg, map[string]string{"Linear-Signature": hexMAC("lin_wh_secret", linearBody)}, linearBody, linearAt.Add(30 * time.Second), nil},
		{"linear stale body timestamp", []string{"lin_wh_secret"}, linearCfg, map[string]string{"Linear-Signature": hexMAC("lin_wh_secret", linearBody)}, linearBody, linearAt.Add(2 * time.Minute), webhook.ErrStale},
		{"linear body without timestamp", []string{"lin_wh_secret"}, linearCfg, map[string]string{"Linear-Signature": hexMAC("lin_wh_secret", "{}")}, "{}", linearAt, webhook.ErrMissingSignature},

		// Missing and malformed.
		{"not hex", []string{githubSecret}, githubCfg, map[string]string{"X-Hub-Signature-256": "sha256=xyz"}, githubBody, slackAt, webhook.ErrInvalidSignature},
		{"base64 url alphabet accepted", []string{"zd-secret"}, zendeskCfg, map[string]string{"X-Zendesk-Webhook-Signature": strings.TrimRight(base64.URLEncoding.EncodeToString(providertest.MAC(sha256.New, "zd-secret", zendeskTS, zendeskBody)), "="), "X-Zendesk-Webhook-Signature-Timestamp": zendeskTS}, zendeskBody, zendeskAt, nil},

		// Misconfiguration.
		{"no header setting", []string{"k3y-not-in-messages"}, map[string]string{}, map[string]string{"X": "y"}, "", slackAt, webhook.ErrMisconfigured},
		{"unknown algorithm", []string{"k3y-not-in-messages"}, with(githubCfg, "algorithm", "md5"), map[string]string{"X-Hub-Signature-256": githubSig}, githubBody, slackAt, webhook.ErrMisconfigured},
		{"unknown encoding", []string{"k3y-not-in-messages"}, with(githubCfg, "encoding", "base32"), map[string]string{"X-Hub-Signature-256": githubSig}, githubBody, slackAt, webhook.ErrMisconfigured},
		{"template timestamp without source", []string{"k3y-not-in-messages"}, with(githubCfg, "signed", "{timestamp}.{body}"), map[string]string{"X-Hub-Signature-256": githubSig}, githubBody, slackAt, webhook.ErrMisconfigured},
		{"bad base_url", []string{"sq-key"}, with(squareCfg, "base_url", "hooks.example.com"), map[string]string{"X-Square-Hmacsha256-Signature": "AAAA"}, squareBody, slackAt, webhook.ErrMisconfigured},
		{"bad tolerance", []string{slackSecret}, with(slackCfg, "tolerance", "-1"), map[string]string{"X-Slack-Signature": slackSig, "X-Slack-Request-Timestamp": slackTS}, slackBody, slackAt, webhook.ErrMisconfigured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.body
			if strings.HasPrefix(tt.name, "stripe") {
				body = stripeBody(t)
			}
			cfg := webhook.Config{Secrets: tt.secrets, Settings: tt.set}
			err := Provider{}.Verify(req(tt.headers, body), cfg, tt.now)
			if !errors.Is(err, tt.want) {
				t.Errorf("Verify(%v) = %v, want %v", tt.headers, err, tt.want)
			}
			if err != nil {
				for _, s := range tt.secrets {
					if s != "" && strings.Contains(err.Error(), s) {
						t.Errorf("Verify error %q leaks a secret", err)
					}
				}
			}
		})
	}
}

func TestCheckTime(t *testing.T) {
	now := time.Unix(1700000000, 0)
	tests := []struct {
		ts   string
		want error
	}{
		{"1700000000", nil},
		{"1700000000000", nil},
		{"1.7e12", nil},
		{"2023-11-14T22:13:20Z", nil},
		{"2023-11-14T23:13:20+01:00", nil},
		{"1699999000", webhook.ErrStale},
		{"1700001000000", webhook.ErrStale},
		{"yesterday", webhook.ErrMissingSignature},
	}
	for _, tt := range tests {
		err := checkTime(tt.ts, now, webhook.Symmetric(300*time.Second))
		if !errors.Is(err, tt.want) {
			t.Errorf("checkTime(%q) = %v, want %v", tt.ts, err, tt.want)
		}
	}
}

func TestSignedParts(t *testing.T) {
	tests := []struct {
		tmpl string
		want string
	}{
		{"{body}", "BODY"},
		{"{timestamp}.{body}", "TS.BODY"},
		{"v0:{timestamp}:{body}", "v0:TS:BODY"},
		{"{url}{body}", "URLBODY"},
		{"{timestamp}{body}", "TSBODY"},
		{"literal", "literal"},
		{"{other}.{body}", "{other}.BODY"},
		{"{a{body}", "{aBODY"},
		{"{body", "{body"},
		{"}{body}{", "}BODY{"},
		{"{body}{body}", "BODYBODY"},
		{"", ""},
	}
	for _, tt := range tests {
		got := bytes.Join(signedParts(tt.tmpl, []byte("BODY"), "TS", "URL"), nil)
		if string(got) != tt.want {
			t.Errorf("signedParts(%q) = %q, want %q", tt.tmpl, got, tt.want)
		}
	}
}

func TestSplitParams(t *testing.T) {
	got := splitParams("ts=1671552777; h1=aa ;h1=bb;junk;=x", ";")
	if v := got["ts"]; len(v) != 1 || v[0] != "1671552777" {
		t.Errorf("splitParams ts = %q", v)
	}
	if v := got["h1"]; len(v) != 2 || v[0] != "aa" || v[1] != "bb" {
		t.Errorf("splitParams h1 = %q, want [aa bb]", v)
	}
	if _, ok := got["junk"]; ok {
		t.Error("splitParams kept a part without '='")
	}
}

func TestEvents(t *testing.T) {
	body := `{"event_id":"evt_1","event_type":"subscription.updated","data":{"id":"sub_1","customer_id":"ctm_1","items":[{"price":{"id":"pri_1"}}]}}`
	tests := []struct {
		name     string
		set      map[string]string
		headers  map[string]string
		body     string
		wantID   string
		wantType string
		wantConv string
		wantDef  int
		wantErr  error
	}{
		{"json paths", map[string]string{"id": "json:event_id", "type": "json:event_type", "conversation": "json:data.customer_id"}, nil, body, "evt_1", "subscription.updated", "ctm_1", 0, nil},
		{"headers", map[string]string{"id": "header:X-Event-Id", "type": "header:X-Event-Type", "conversation": "header:X-Account"}, map[string]string{"X-Event-Id": "e9", "X-Event-Type": "t9", "X-Account": "a9"}, "not json", "e9", "t9", "a9", 0, nil},
		{"alternatives: first empty", map[string]string{"id": "json:missing|json:event_id", "conversation": "json:data.nothing|json:data.id"}, nil, body, "evt_1", "", "sub_1", 0, nil},
		{"alternatives: header then json", map[string]string{"id": "header:X-Event-Id|json:event_id"}, nil, body, "evt_1", "", "", 0, nil},
		{"array index path", map[string]string{"id": "json:event_id", "conversation": "json:data.items.0.price.id"}, nil, body, "evt_1", "", "pri_1", 0, nil},
		{"no id: content hash of defining fields", map[string]string{"defining": "event_type, data.id"}, nil, body, "", "", "", 2, nil},
		{"no settings: hash of body", nil, nil, "anything", "", "", "", 0, nil},
		{"missing type and conversation are empty", map[string]string{"id": "json:event_id", "type": "json:nope", "conversation": "header:X-Nope"}, nil, body, "evt_1", "", "", 0, nil},
		{"missing id is malformed", map[string]string{"id": "json:nope"}, nil, body, "", "", "", 0, webhook.ErrMalformed},
		{"json source on non-JSON body", map[string]string{"id": "json:event_id"}, nil, "a=b", "", "", "", 0, webhook.ErrMalformed},
		{"bad source kind", map[string]string{"type": "query:type"}, nil, body, "", "", "", 0, webhook.ErrMisconfigured},
		// The documented configurations (docs/providers/hmac.md) on each provider's sample.
		{"paddle", paddleCfg, nil, `{"event_id":"evt_1","event_type":"transaction.paid","data":{"id":"txn_1","customer_id":"ctm_1"}}`, "evt_1", "transaction.paid", "ctm_1", 0, nil},
		{"paddle customer event", paddleCfg, nil, `{"event_id":"evt_2","event_type":"customer.created","data":{"id":"ctm_1"}}`, "evt_2", "customer.created", "ctm_1", 0, nil},
		{"linear comment joins its issue", linearCfg, map[string]string{"Linear-Delivery": "d-1"}, `{"action":"create","type":"Comment","data":{"id":"c1","issueId":"i1"},"webhookId":"w","webhookTimestamp":1}`, "d-1", "Comment", "i1", 0, nil},
		{"linear issue", linearCfg, map[string]string{"Linear-Delivery": "d-2"}, `{"action":"update","type":"Issue","data":{"id":"i1"},"webhookId":"w","webhookTimestamp":1}`, "d-2", "Issue", "i1", 0, nil},
		{"square", squareCfg, nil, `{"merchant_id":"M","type":"payment.updated","event_id":"e-1","data":{"type":"payment","id":"P1"}}`, "e-1", "payment.updated", "P1", 0, nil},
		{"intercom", intercomCfg, nil, `{"type":"notification_event","id":"notif_1","topic":"conversation.user.replied","data":{"item":{"type":"conversation","id":"147"}}}`, "notif_1", "conversation.user.replied", "147", 5, nil},
		{"zendesk", zendeskCfg, nil, `{"type":"zen:event-type:ticket.created","id":"cbe4028c","subject":"zen:ticket:123","detail":{}}`, "cbe4028c", "zen:event-type:ticket.created", "zen:ticket:123", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := Provider{}.Events(req(tt.headers, tt.body), webhook.Config{Settings: tt.set})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Events() = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(evs) != 1 {
				t.Fatalf("Events() = %d events, %v; want 1 event", len(evs), err)
			}
			ev := evs[0]
			if webhook.EventID(ev) != tt.wantID && ev.ID != tt.wantID || ev.Type != tt.wantType || ev.Conversation != tt.wantConv || len(ev.Defining) != tt.wantDef {
				t.Errorf("Events() = id %q type %q conv %q defining %d; want %q %q %q %d", webhook.EventID(ev), ev.Type, ev.Conversation, len(ev.Defining), tt.wantID, tt.wantType, tt.wantConv, tt.wantDef)
			}
			if string(ev.Body) != tt.body {
				t.Error("Events() changed the body")
			}
		})
	}
}

// TestDefiningIgnoresDeliveryMetadata: the "defining" fields make the key
// when no id is signed, and the payload digest whenever they are set, so a
// sender's retry rendered again is a duplicate while other content under the
// same id is still a 409.
func TestDefiningIgnoresDeliveryMetadata(t *testing.T) {
	const notif = `{"type":"notification_event","app_id":"a1","data":{"type":"notification_event_data","item":{"type":"conversation","id":"147","state":"%s"}},` +
		`"links":{},"id":"notif_1","topic":"conversation.admin.closed","delivery_status":"%s","delivery_attempts":%d,"first_sent_at":%d,"created_at":1700000000,"self":null}`
	tests := []struct {
		name          string
		set           map[string]string
		first, second string
		sameDigest    bool // same key in every case: a duplicate, or else 409
	}{
		{"no id: another attempt", map[string]string{"defining": "type,data.id"},
			`{"type":"x","data":{"id":"1"},"attempt":1}`, `{"type":"x","data":{"id":"1"},"attempt":2}`, true},
		{"json id: Intercom's retry rendered again", intercomCfg,
			fmt.Sprintf(notif, "closed", "pending", 1, 1700000001), fmt.Sprintf(notif, "closed", "retry", 2, 1700000061), true},
		{"json id: other data under the same id", intercomCfg,
			fmt.Sprintf(notif, "closed", "pending", 1, 1700000001), fmt.Sprintf(notif, "open", "pending", 1, 1700000001), false},
		{"json id without defining: the whole body", map[string]string{"id": "json:id"},
			fmt.Sprintf(notif, "closed", "pending", 1, 1700000001), fmt.Sprintf(notif, "closed", "retry", 2, 1700000061), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var keys, digests [2]string
			for i, body := range []string{tt.first, tt.second} {
				ev := providertest.OneEvent(t, Provider{}, req(nil, body), webhook.Config{Settings: tt.set})
				keys[i], digests[i] = webhook.IdempotencyKey("t", "hmac", ev), webhook.Digest(ev)
			}
			if keys[0] != keys[1] {
				t.Errorf("keys %q and %q differ, want one key", keys[0], keys[1])
			}
			if got := digests[0] == digests[1]; got != tt.sameDigest {
				t.Errorf("same digest = %v, want %v (true: duplicate, false: 409 id reused)", got, tt.sameDigest)
			}
		})
	}
}

func FuzzSplitParams(f *testing.F) {
	f.Add("ts=1671552777;h1=eb4d0dc8", ";")
	f.Add("t=1,v1=a,v1=b,v0=c", ",")
	f.Add("==;;=", ";")
	f.Add("a=b", "")
	f.Fuzz(func(t *testing.T, raw, sep string) {
		if sep == "" {
			sep = ","
		}
		for k, vs := range splitParams(raw, sep) {
			if strings.Contains(k, sep) {
				t.Fatalf("splitParams(%q, %q) key %q contains the separator", raw, sep, k)
			}
			for _, v := range vs {
				if strings.Contains(v, sep) {
					t.Fatalf("splitParams(%q, %q) value %q contains the separator", raw, sep, v)
				}
			}
		}
	})
}

func FuzzSignedParts(f *testing.F) {
	f.Add("{timestamp}.{body}")
	f.Add("v0:{timestamp}:{body}")
	f.Add("{{body}}{url")
	f.Fuzz(func(t *testing.T, tmpl string) {
		got := bytes.Join(signedParts(tmpl, []byte("B"), "T", "U"), nil)
		want := strings.NewReplacer("{body}", "B", "{timestamp}", "T", "{url}", "U").Replace(tmpl)
		if string(got) != want {
			t.Fatalf("signedParts(%q) = %q, want %q", tmpl, got, want)
		}
	})
}

func FuzzVerify(f *testing.F) {
	f.Add("ts=1671552777;h1=00", []byte(`{}`))
	f.Add("ts=;h1=;h1=zz", []byte(``))
	f.Add(";;;", []byte(`x`))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		cfg := webhook.Config{Secrets: []string{"fuzz"}, Settings: paddleCfg}
		r := req(map[string]string{"Paddle-Signature": header}, string(body))
		if err := (Provider{}).Verify(r, cfg, time.Unix(1671552777, 0)); err == nil {
			ts := splitParams(header, ";")["ts"]
			if len(ts) == 0 || !strings.Contains(strings.ToLower(header), hexMAC("fuzz", ts[0], ":", string(body))) {
				t.Fatalf("Verify(%q) = nil without the real MAC", header)
			}
		}
	})
}

// FuzzEvents reads ids, types, conversations, defining fields and a body
// timestamp from arbitrary bodies and paths: errors wrap the documented
// sentinels, a configured id is never empty, and a body that is not exactly
// one JSON value is malformed whenever a JSON source is configured.
func FuzzEvents(f *testing.F) {
	for _, seed := range []string{
		`{"event_id":"e","event_type":"t","data":{"customer_id":"c","id":"i"},"occurred_at":"2024-04-30T12:00:00Z"}`,
		`{"data":{"id":7,"items":[{"n":1.0},{"n":"<&>"}]},"webhookTimestamp":1714478400000}`,
		`{"event_id":{"b":1,"a":[true,null]},"ts":1.7144784e12}`, `[1,2]`, `null`, `"s"`, `{} x`, `not json`, ``,
	} {
		f.Add([]byte(seed), "json:event_id|header:X-Id", "json:event_type", "json:data.customer_id|json:data.id", "", "occurred_at")
		f.Add([]byte(seed), "", "header:X-Type|json:0", "json:data.items.1.n", "data.id, data.items ,x", "webhookTimestamp")
	}
	f.Add([]byte(`{"event_id":"e","data":{"customer_id":"c"}}`), "json:event_id|header:X-Id", "", "json:data.customer_id", "", "")
	f.Add([]byte(`[1,2]`), "json:0", "", "json:data.customer_id", "", "")
	f.Add([]byte(``), "", "", "json:data.customer_id", "", "")
	now := time.Date(2024, 4, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte, id, typ, conv, defining, tsPath string) {
		cfg := webhook.Config{Secrets: []string{"s"}, Settings: map[string]string{
			"header": "X-Sig", "id": id, "type": typ, "conversation": conv, "defining": defining, "timestamp_json": tsPath, "tolerance": "1h",
		}}
		r := req(map[string]string{"X-Id": "hid", "X-Type": "htype", "X-Sig": hexMAC("s", string(body))}, string(body))
		evs, err := Provider{}.Events(r, cfg)
		if err != nil && !errors.Is(err, webhook.ErrMalformed) && !errors.Is(err, webhook.ErrMisconfigured) {
			t.Fatalf("Events() error %v wraps no sentinel", err)
		}
		needJSON := defining != "" || strings.Contains(id+typ+conv, "json:")
		if err == nil && needJSON && !json.Valid(body) {
			t.Fatalf("Events(%q) = nil error for a body that is not one JSON value", body)
		}
		for _, ev := range evs {
			if webhook.EventID(ev) == "" && id != "" {
				t.Fatalf("Events() returned no id from source %q", id)
			}
		}
		if tsPath == "" {
			return
		}
		err = Provider{}.Verify(r, cfg, now)
		if err != nil && !errors.Is(err, webhook.ErrMissingSignature) && !errors.Is(err, webhook.ErrStale) {
			t.Fatalf("Verify(%q) with timestamp_json %q = %v, want nil, ErrMissingSignature or ErrStale", body, tsPath, err)
		}
		if err == nil && !json.Valid(body) {
			t.Fatalf("Verify(%q) = nil with timestamp_json and a body that is not one JSON value", body)
		}
	})
}

func TestSignErrors(t *testing.T) {
	tests := []struct {
		name     string
		secrets  []string
		settings map[string]string
		url      string
		want     error
	}{
		{"no header", []string{"s"}, map[string]string{}, "", webhook.ErrMisconfigured},
		{"unknown algorithm", []string{"s"}, map[string]string{"header": "X", "algorithm": "md5"}, "", webhook.ErrMisconfigured},
		{"unknown encoding", []string{"s"}, map[string]string{"header": "X", "encoding": "base32"}, "", webhook.ErrMisconfigured},
		{"timestamp_param without param", []string{"s"}, map[string]string{"header": "X", "timestamp_param": "t"}, "", webhook.ErrMisconfigured},
		{"{timestamp} without a source", []string{"s"}, map[string]string{"header": "X", "signed": "{timestamp}.{body}"}, "", webhook.ErrMisconfigured},
		{"bad base_url", []string{"s"}, map[string]string{"header": "X", "signed": "{url}{body}", "base_url": "example.com"}, "https://a.example/p", webhook.ErrMisconfigured},
		{"relative URL with base_url", []string{"s"}, map[string]string{"header": "X", "signed": "{url}{body}", "base_url": "https://b.example"}, "/p", webhook.ErrMalformed},
		{"no secrets", nil, map[string]string{"header": "X"}, "", webhook.ErrMisconfigured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &webhook.Request{Method: http.MethodPost, Body: []byte("{}"), URL: tt.url}
			err := Provider{}.Sign(req, webhook.Config{Secrets: tt.secrets, Settings: tt.settings}, time.Now())
			if !errors.Is(err, tt.want) {
				t.Errorf("Sign() = %v, want %v", err, tt.want)
			}
		})
	}
}
