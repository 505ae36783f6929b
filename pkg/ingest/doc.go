// Package ingest is the webhook receiving path behind API Gateway:
//
//	POST /webhooks/{tenant}/{provider}
//	  validate tenant id → resolve tenant (cached) → verify signature on the
//	  raw bytes → parse events → claim each idempotency key (conditional put)
//	  → send to the tenant's FIFO queue → mark the claim completed → 200
//	GET  /webhooks/{tenant}/{provider}
//	  provider verification handshakes (WhatsApp's hub.challenge)
//
// The sender gets a 2xx only when every event of the delivery is durably
// queued (or was already). A delivery whose key is held by an in-flight
// attempt gets 409 with Retry-After, so if that attempt fails the sender's
// retry still gets in. When SQS fails after a claim, the claim is released
// and the sender gets a 5xx, so its retry succeeds.
//
// Errors are mapped to HTTP statuses in one place (status.go); the handler
// logs exactly one JSON line per request, which doubles as the CloudWatch
// EMF metrics record.
package ingest
