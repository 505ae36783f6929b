// Package senders holds the proof from the senders' side for the verifiers
// whose sender publishes a library on npm: its tests sign deliveries with
// discord-interactions' tweetnacl, Node's crypto (as SendGrid signs) and
// @hubspot/api-client, check them with the Go providers, and check the Go
// providers' signatures with discord-interactions' verifyKey,
// @sendgrid/eventwebhook's verifySignature and @hubspot/api-client's
// Signature.isValid. Modules finds the libraries of scripts/senders, which
// scripts/install-verifiers.sh senders (run by make emulators) installs into
// .cache/senders, for these tests and pkg/provider/catalog's.
package senders
