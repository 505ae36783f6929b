// Package console serves the operator console: web pages over a
// deployment's stores that show every tenant at a glance, find an event by
// any id its sender shows and tell its timeline, list dead letters, chart
// each destination's deliveries, redrive dead letters after a dry run, and
// pause or resume a destination.
//
// It reads and moves through package inspect, package replay and package
// destination, as the command-line tools do: no lookup or move of its own.
// A dead letter's body and the delivery headers the ingest kept show on a
// page of their own, which the operator opens by following a link; every
// other page holds digests, sizes and ids, and none a secret or a
// signature. Every change of state is a POST carrying the page's CSRF
// token; a console bound to a non-loopback address also requires the
// access token Listen returns, and one bound to loopback refuses requests
// whose Host is not a loopback name (DNS rebinding).
package console
