// Package webhook is the contract between the ingest path and the provider
// adapters: the raw Request, the tenant's Config, the verified Events, the
// Provider, Handshaker and Signer interfaces, and the sentinel errors the
// ingest handler maps to HTTP statuses in one place. It also holds what
// several adapters share: constant-time HMAC matching, timestamp tolerance,
// idempotency keys and SQS group ids.
//
// Verify always runs on the raw bytes before anything parses them.
package webhook
