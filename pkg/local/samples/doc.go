// Package samples turns the provider sample deliveries under
// events/samples into the API Gateway HTTP API (payload format 2.0) events
// under events/ingest that `make invoke` and `sam local invoke` feed to
// IngestFunction.
//
// Samples carry the signatures their providers published, valid for the
// sample's own secret and, for timestamped schemes, only around the
// sample's "at" time. Generate re-signs each one now with a tenant's own
// secret through the provider's webhook.Signer, so the events are accepted
// by a stack that loads the tenants file (`make run`): regenerate them with
// `make events` shortly before invoking, since timestamped schemes allow a
// few minutes of skew.
package samples
