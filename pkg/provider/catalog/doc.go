// Package catalog names the senders whose schemes are rows of data: each Row
// describes one sender (signature header, algorithm, encoding, signed
// content, timestamp, the retries whose window bounds that timestamp, where
// its id, type and conversation are, the fields that define an event) for
// the generic HMAC engine
// (pkg/provider/generic) or the Standard Webhooks provider, so a tenant's
// inbound.json needs only the sender's secret — plus its public URL where
// the scheme signs it. docs/providers/README.md lists every sender, and
// docs/providers/<name>.md each one's onboarding.
package catalog
