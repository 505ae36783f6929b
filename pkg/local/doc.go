// Package local is the room for everything that exists only to run the pack
// on one machine: the HTTP API, Lambda Runtime API and SQS event source
// mapping stand-ins, the emulators, make run's stack, the deploy rehearsal,
// the demo, the cost model, sample events and test helpers (awstest,
// logtest). Product code (functions/ and every other package under pkg/)
// never imports it, nor do the provider adapters' tests;
// TestProductNeverImportsLocal and TestAdapterTestsNeverImportLocal hold
// that line.
package local
