package catalog

import (
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// Rows are the named senders whose schemes are data. Each one's page,
// docs/providers/<name>.md, cites the sender's documentation for its
// scheme and its retries; catalog_test.go runs each through the provider
// contract suite with its retry as documented, and the sender's own library
// or published snippet checks the signatures (scripts/senders).
//
// Defining lists the fields that make an event what it is whenever the
// sender renders a retry or a replay differently from the first attempt
// (re-stamped timestamps, delivery counters, redelivery flags, a new
// notification id): the payload digest, and the key where no id is signed,
// are computed from them, so the sender's own retry is a duplicate.
var Rows = []Row{
	// The worked examples of docs/providers/hmac.md, promoted.
	{
		Name: "paddle", Header: "Paddle-Signature", Separator: ";", Param: "h1", TimestampParam: "ts", Signed: "{timestamp}:{body}",
		ID: "json:event_id", Type: "json:event_type", Conversation: "json:data.customer_id|json:data.id",
		// A replay from the dashboard is a new notification_id for the same event.
		Defining: "event_id,event_type,occurred_at,data",
		// A live notification is retried up to 60 times over 3 days; Paddle's
		// SDK refuses a ts more than 5 s old (none ahead), and its page tells
		// a manual check to do the same, so every attempt is signed when sent.
		// hookpack follows the rule's shape (only too old) with a minute
		// back, not 5 s: a cold start or a drifting clock must not refuse a
		// fresh delivery, and the dedup window catches a replayed capture.
		Retries: &webhook.Retries{
			Signing: webhook.ByRule,
			Horizon: 72 * time.Hour,
			Source:  "https://developer.paddle.com/webhooks/about/respond-to-webhooks, https://developer.paddle.com/webhooks/about/signature-verification, @paddle/paddle-node-sdk src/notifications/helpers/webhooks-validator.ts",
			Window:  webhook.Window{Past: time.Minute, Future: webhook.AnyFuture},
		},
	},
	{
		Name: "linear", Header: "Linear-Signature", TimestampJSON: "webhookTimestamp",
		ID: "header:Linear-Delivery", Type: "json:type", Conversation: "json:data.issueId|json:data.id",
		// Linear re-stamps webhookTimestamp on every attempt.
		Defining: "action,type,createdAt,data,updatedFrom",
		// Three retries, after 1 minute, 1 hour and 6 hours; @linear/sdk's
		// verify refuses a webhookTimestamp more than a minute from now
		// either way, so every attempt is stamped when sent.
		Retries: &webhook.Retries{
			Signing: webhook.ByRule,
			Horizon: 7*time.Hour + time.Minute,
			Source:  "https://linear.app/developers/webhooks, @linear/sdk packages/sdk/src/webhooks/client.ts",
			Window:  webhook.Symmetric(time.Minute),
		},
	},
	{
		Name: "square", Header: "X-Square-Hmacsha256-Signature", Encoding: "base64", Signed: "{url}{body}",
		ID: "json:event_id", Type: "json:type", Conversation: "json:data.id",
		Required: []string{"base_url"},
	},
	{
		Name: "intercom", Header: "X-Hub-Signature", Algorithm: "sha1", Prefix: "sha1=",
		ID: "json:id", Type: "json:topic", Conversation: "json:data.item.id",
		// delivery_attempts, delivery_status, first_sent_at change per attempt.
		Defining: "id,topic,app_id,created_at,data",
	},
	{
		Name: "zendesk", Header: "X-Zendesk-Webhook-Signature", Encoding: "base64",
		TimestampHeader: "X-Zendesk-Webhook-Signature-Timestamp", Signed: "{timestamp}{body}",
		ID: "json:id", Type: "json:type", Conversation: "json:subject",
		// Zendesk names the responses it retries but no schedule, and not
		// whether a retry is signed again: the window covers the horizon
		// assumed for a sender that does not say.
		Retries: &webhook.Retries{
			Signing: webhook.Unsaid,
			Source:  "https://developer.zendesk.com/api-reference/webhooks/introduction/#webhook-retries",
			Window:  webhook.Covering(webhook.UndocumentedHorizon),
		},
	},

	// Standard Webhooks senders.
	{Name: "clerk", Scheme: StandardWebhooks, Type: "type", Conversation: "data.id"},
	{Name: "resend", Scheme: StandardWebhooks, Type: "type", Conversation: "data.email_id"},
	{Name: "openai", Scheme: StandardWebhooks, Type: "type", Conversation: "data.id"},
	{Name: "replicate", Scheme: StandardWebhooks, Type: "status", Conversation: "id"},

	// HMAC senders.
	{
		Name: "bitbucket", Header: "X-Hub-Signature", Prefix: "sha256=",
		ID: "header:X-Request-UUID", Type: "header:X-Event-Key", Conversation: "json:repository.uuid",
	},
	{
		Name: "woocommerce", Header: "X-WC-Webhook-Signature", Encoding: "base64",
		ID: "header:X-WC-Webhook-Delivery-ID", Type: "header:X-WC-Webhook-Topic", Conversation: "json:id",
	},
	{
		Name: "typeform", Header: "Typeform-Signature", Encoding: "base64", Prefix: "sha256=",
		ID: "json:event_id", Type: "json:event_type", Conversation: "json:form_response.form_id",
	},
	{
		Name: "calendly", Header: "Calendly-Webhook-Signature", Param: "v1", TimestampParam: "t", Signed: "{timestamp}.{body}",
		Type: "json:event", Conversation: "json:payload.scheduled_event.uri|json:payload.event|json:payload.uri",
		// Calendly retries for 24 hours with exponential back-off and does
		// not say a retry is signed again: the window covers the 24 hours.
		Retries: &webhook.Retries{
			Signing: webhook.Unsaid,
			Horizon: 24 * time.Hour,
			Source:  "https://developer.calendly.com/api-docs/overview/webhooks/webhook-errors",
			Window:  webhook.Covering(24 * time.Hour),
		},
	},
	{
		Name: "sentry", Header: "Sentry-Hook-Signature",
		ID: "header:Request-ID", Type: "header:Sentry-Hook-Resource",
		Conversation: "json:data.issue.id|json:data.event.issue_id|json:data.error.issue_id",
	},
	{
		Name: "vercel", Header: "X-Vercel-Signature", Algorithm: "sha1",
		ID: "json:id", Type: "json:type", Conversation: "json:payload.deployment.id|json:payload.project.id",
	},
	{
		Name: "lemonsqueezy", Header: "X-Signature",
		Type: "json:meta.event_name", Conversation: "json:data.id",
	},
	{
		Name: "razorpay", Header: "X-Razorpay-Signature",
		ID: "header:X-Razorpay-Event-Id", Type: "json:event",
		Conversation: "json:payload.payment.entity.order_id|json:payload.order.entity.id|json:payload.subscription.entity.id|json:payload.payment.entity.id",
	},
	{
		Name: "line", Header: "X-Line-Signature", Encoding: "base64",
		Type: "json:events.0.type", Conversation: "json:events.0.source.groupId|json:events.0.source.roomId|json:events.0.source.userId",
		// A redelivery sets deliveryContext.isRedelivery (and its replyToken
		// cannot be used); the event's id, time, type and source stay. The
		// time, type and source keep events apart should one lack an id.
		Defining: "destination,events.*.webhookEventId,events.*.timestamp,events.*.type,events.*.source",
	},
	{
		Name: "pagerduty", Header: "X-PagerDuty-Signature", Param: "v1",
		ID: "json:event.id", Type: "json:event.event_type", Conversation: "json:event.data.id",
	},
	{
		Name: "coinbase-commerce", Header: "X-CC-Webhook-Signature",
		ID: "json:event.id", Type: "json:event.type", Conversation: "json:event.data.code|json:event.data.id",
		// attempt_number and scheduled_for change per attempt.
		Defining: "event",
	},
}
