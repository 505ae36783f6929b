// Checks deliveries of hookpack's named senders (pkg/provider/catalog) the
// way each sender's receivers are told to: with the sender's own npm
// library where it publishes one, else with the verification snippet its
// documentation publishes, transcribed here with the page it comes from.
// Standard Webhooks senders are also signed by the svix library, for
// hookpack to verify.
//
// stdin:  {"deliveries": [{"sender", "secret", "headers": {lower-case: value},
//          "body": base64, "url"}], "sign": [{"sender", "secret", "id",
//          "timestamp": Unix seconds, "body": base64}]}
// stdout: {"verified": ["" or why the check refused, …],
//          "signed": [webhook-signature header value, …]}
// Run from a folder whose node_modules holds scripts/senders' packages
// (scripts/install-verifiers.sh senders installs them into .cache/senders).
import crypto from "node:crypto";
import { Webhook } from "svix";
import { Paddle } from "@paddle/paddle-node-sdk";
import { LinearWebhookClient } from "@linear/sdk/webhooks";
import { WebhooksHelper as SquareWebhooks } from "square";
import Razorpay from "razorpay";
import { validateSignature as lineValidate } from "@line/bot-sdk";
import coinbase from "coinbase-commerce-node";

const hmac = (alg, secret, data, enc) => crypto.createHmac(alg, secret).update(data).digest(enc);
const same = (a, b) => typeof b === "string" && a.length === b.length && crypto.timingSafeEqual(Buffer.from(a), Buffer.from(b));
const svix = (d) => { new Webhook(d.secret).verify(d.body, d.headers); return true; };

// Each check returns true when the delivery verifies, false or throws when not.
const checks = {
  // Sender libraries.
  // paddle.webhooks.isSignatureValid, the check unmarshal makes before it
  // parses (the client sets up the runtime's crypto; no API call is made).
  paddle: (d) => new Paddle("pdl_sdbx_apikey_unused").webhooks.isSignatureValid(d.body, d.secret, d.headers["paddle-signature"]),
  linear: (d) => new LinearWebhookClient(d.secret).verify(Buffer.from(d.body), d.headers["linear-signature"]),
  square: (d) => SquareWebhooks.verifySignature({
    requestBody: d.body, signatureHeader: d.headers["x-square-hmacsha256-signature"], signatureKey: d.secret, notificationUrl: d.url,
  }),
  razorpay: (d) => Razorpay.validateWebhookSignature(d.body, d.headers["x-razorpay-signature"], d.secret),
  line: (d) => lineValidate(d.body, d.secret, d.headers["x-line-signature"]),
  "coinbase-commerce": (d) => coinbase.Webhook.verifySigHeader(d.body, d.headers["x-cc-webhook-signature"], d.secret),
  clerk: svix, resend: svix, openai: svix, replicate: svix,

  // Documentation snippets.
  // https://developers.intercom.com/docs/references/webhooks/webhook-models (signed notifications)
  intercom: (d) => same("sha1=" + hmac("sha1", d.secret, d.body, "hex"), d.headers["x-hub-signature"]),
  // https://developer.zendesk.com/documentation/webhooks/verifying/
  zendesk: (d) => same(hmac("sha256", d.secret, d.headers["x-zendesk-webhook-signature-timestamp"] + d.body, "base64"), d.headers["x-zendesk-webhook-signature"]),
  // https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/ (secure webhooks)
  bitbucket: (d) => same("sha256=" + hmac("sha256", d.secret, d.body, "hex"), d.headers["x-hub-signature"]),
  // WooCommerce WC_Webhook::generate_signature: base64(hash_hmac sha256, raw)
  woocommerce: (d) => same(hmac("sha256", d.secret, d.body, "base64"), d.headers["x-wc-webhook-signature"]),
  // https://www.typeform.com/developers/webhooks/secure-your-webhooks/
  typeform: (d) => same("sha256=" + hmac("sha256", d.secret, d.body, "base64"), d.headers["typeform-signature"]),
  // https://developer.calendly.com/api-docs/overview/webhooks/webhook-signatures
  calendly: (d) => {
    const { t, v1 } = Object.fromEntries(d.headers["calendly-webhook-signature"].split(",").map((kv) => kv.split("=")));
    return same(hmac("sha256", d.secret, t + "." + d.body, "hex"), v1);
  },
  // https://docs.sentry.io/organization/integrations/integration-platform/webhooks/ (verifying the signature)
  sentry: (d) => same(hmac("sha256", d.secret, d.body, "hex"), d.headers["sentry-hook-signature"]),
  // https://vercel.com/docs/webhooks/webhooks-api (securing webhooks)
  vercel: (d) => same(hmac("sha1", d.secret, d.body, "hex"), d.headers["x-vercel-signature"]),
  // https://docs.lemonsqueezy.com/help/webhooks/signing-requests
  lemonsqueezy: (d) => same(hmac("sha256", d.secret, d.body, "hex"), d.headers["x-signature"]),
  // https://developer.pagerduty.com/docs/webhooks/webhook-signatures/
  pagerduty: (d) => d.headers["x-pagerduty-signature"].split(",").some((s) => same("v1=" + hmac("sha256", d.secret, d.body, "hex"), s.trim())),
};

const input = JSON.parse(await new Promise((ok) => { let s = ""; process.stdin.on("data", (c) => (s += c)); process.stdin.on("end", () => ok(s)); }));
const verified = [];
for (const d of input.deliveries ?? []) {
  d.body = Buffer.from(d.body, "base64").toString("utf8");
  const check = checks[d.sender];
  try {
    if (!check) throw new Error("no check for " + d.sender);
    verified.push((await check(d)) ? "" : "signature refused");
  } catch (e) {
    verified.push(String(e?.message ?? e) || "threw");
  }
}
const signed = (input.sign ?? []).map((s) =>
  new Webhook(s.secret).sign(s.id, new Date(s.timestamp * 1000), Buffer.from(s.body, "base64").toString("utf8")));
process.stdout.write(JSON.stringify({ verified, signed }));
