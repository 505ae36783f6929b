package ingest

// holdBack keeps each conversation in delivery order at the check stage,
// as queue.SQS.SendBatch does at the send stage, and returns the indexes of
// the events to send, in delivery order. After the first event of a
// conversation that this delivery cannot send but that must be queued
// (its key could not be read), the later events of that conversation whose
// keys are free are marked outHeldBack and not sent, so the sender's
// retry, which the first event's 503 asks for, queues the conversation in
// order. Sent, they would overtake that event. A duplicate is no stop (it
// is queued already), nor is a reused id (another payload under a signed
// id, never queued in this form: holding its conversation behind it would
// block the conversation for as long as the sender retries).
//
// Keys are read concurrently (one round trip for the whole delivery on the
// happy path), and nothing was written for a held-back event.
func holdBack(msgs []pending, st []keyState) []int {
	stopped := map[string]bool{} // conversations with an event not sent
	var send []int
	for i, s := range st {
		g := msgs[i].msg.GroupID
		switch {
		case stopped[g] && s.free:
			st[i].out = outHeldBack
		case s.free:
			send = append(send, i)
		case s.out == outDuplicate, s.out == outReused:
		default:
			stopped[g] = true
		}
	}
	return send
}
