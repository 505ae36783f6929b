// Package chaos is `make chaos`: a seeded fault-injection run of the whole
// local pipeline — moto (with AWS's FIFO semantics) and DynamoDB Local, the
// real ingest and worker handlers behind the local API Gateway and event
// source mapping — that sends thousands of signed deliveries, duplicated and
// retried the way providers do, while AWS calls fail, time out, throttle and
// lose their answers, function instances die at the worst moments, custom
// effects hang past the function timeout, the mapping loses deletions and
// invokes batches twice, crashed messages are redriven from the DLQ, a
// target stays down past the retry horizon, the target misbehaves and
// poison events sit in busy conversations. It then checks the pack's
// promises: nothing accepted is lost or left to expire, no effect is
// applied twice, every conversation is applied in order, and every dead
// letter has a reason.
//
// Faults are injected from outside the product code: an http.RoundTripper
// under the functions' AWS clients, the target service, and the local event
// source mapping. The run's seed fixes the workload and every decision.
package chaos
