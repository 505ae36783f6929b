// Package forward delivers a verified event to a tenant's own HTTPS
// endpoint, signed the Standard Webhooks way (https://www.standardwebhooks.com),
// and classifies the answer so the worker knows whether to retry.
//
// A delivery is a POST of the event's body when it is JSON, byte for byte,
// with the provider's Content-Type; any other body (a form, text, bytes)
// arrives as a Wrapped JSON document — the form's fields, the raw bytes —
// with Content-Type application/json and Hookpack-Original-Content-Type
// (see Payload), since the official verifiers JSON-parse what they verify.
// Headers:
//
//	webhook-id:        MessageID(event key), the same on every attempt
//	webhook-timestamp: Unix seconds of this attempt
//	webhook-signature: "v1,<base64 HMAC-SHA256(key, id.timestamp.body)>" for
//	                   every secret, space-separated (the key is the
//	                   base64-decoded secret after "whsec_")
//	Idempotency-Key:   the effect's ledger idempotency key, the same on every
//	                   attempt, redelivery and replay
//
// Classification (Classify): 2xx is success; 408, 409, 425, 429, 5xx,
// timeouts and connection errors are transient and honour Retry-After;
// every other status, an untrusted TLS certificate, an unusable URL or
// header name are permanent. A cancelled context is never reported as the
// target's fault. Header values never carry control characters.
//
// The receiving side is not here: receivers (and the local harness) verify
// with the official Standard Webhooks libraries (docs/receiving.md).
package forward
