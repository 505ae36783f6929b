// Package watch is the stack-wide alerting of a hookpack core stack: one
// scheduled run looks at every onboarded tenant's queue and dead-letter
// queue with two GetQueueAttributes requests, asks CloudWatch for a queue's
// oldest-message age only when that queue holds messages, and publishes one
// message naming the tenant, the rule, the numbers and the commands to run
// to the stack's alarm topic when a rule is breached. It replaces three
// CloudWatch alarms per tenant (docs/scale.md prices both).
package watch
