package worker

import (
	"sync"
	"time"
)

// tracker holds the results of one batch while its groups run. A group
// publishes each message's result when the message is finished; at the
// batch's cut-off Handle closes the tracker, and whatever a group still
// running (a straggler: an effect that ignores its context) publishes
// afterwards is discarded, so the batch's answer never waits for it.
type tracker struct {
	// begun is when Handle started the batch.
	begun    time.Time
	mu       sync.Mutex
	results  []result
	finished []bool
	started  []bool
	reserved []bool
	closed   bool
	// sending counts dead letters in flight: their messages' fate is
	// decided by the send, so close waits for them.
	sending sync.WaitGroup
}

func newTracker(begun time.Time, n int) *tracker {
	return &tracker{begun: begun, results: make([]result, n), finished: make([]bool, n), started: make([]bool, n), reserved: make([]bool, n)}
}

// start marks message i started; it reports false once the batch closed
// (the straggling group stops there).
func (t *tracker) start(i int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.started[i] = true
	return true
}

// open reports whether the batch still takes results.
func (t *tracker) open() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.closed
}

// reserve lets message i send its dead letter: false once the batch
// closed (the message is then reported failed, and must not also reach
// the DLQ). A reserved message's result is taken even after closing, and
// close waits for it.
func (t *tracker) reserve(i int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.reserved[i] {
		return false
	}
	t.reserved[i] = true
	t.sending.Add(1)
	return true
}

// publish records message i's result. It reports false when the batch
// closed before and i was not reserved.
func (t *tracker) publish(i int, r result) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reserved[i] {
		defer t.sending.Done()
	} else if t.closed {
		return false
	}
	t.results[i], t.finished[i] = r, true
	return true
}

// close stops taking results and returns them, after any dead letter in
// flight settled; unfinished reports the messages that have none: started
// ones are the stragglers, the others never started.
func (t *tracker) close() (results []result, finished, started []bool) {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.sending.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.results, t.finished, t.started
}
