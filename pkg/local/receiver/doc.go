// Package receiver plays a tenant's endpoint for tests: a Recorder that
// keeps every forward as it arrived, and the official npm Standard Webhooks
// libraries (standardwebhooks, svix; installed into .cache/verifiers by
// scripts/install-verifiers.sh) run by Node.js over those forwards with
// their default verify call, as a receiver writes it.
package receiver
