// Package route decides which of a tenant's destinations an event goes to.
// A Filter selects events by sender and event type ("stripe:invoice.*")
// and, optionally, by conditions on the body's JSON fields; an Event decodes
// its body at most once, however many filters ask. Matching is pure: the
// same event and filters give the same answer on every redelivery.
package route
