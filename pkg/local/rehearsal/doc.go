// Package rehearsal rehearses a deploy on moto: it creates the core stack
// from the SAM-translated template.yaml on moto's CloudFormation and one
// tenant stack with scripts/tenant/tenant.sh, reads back what the stacks
// created (each function's environment and role policies, the event source
// mapping, the HTTP API routes), runs the real bootstraps against exactly
// that, sends every provider's signed deliveries through, and checks every
// AWS call each function made against its role as the stack created it,
// with moto's IAM policy evaluator. docs/rehearsal.md says what it proves.
package rehearsal
