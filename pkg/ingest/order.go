package ingest

// holdBack keeps each conversation in delivery order at the claim stage,
// as queue.SQS.SendBatch does at the send stage, and returns the indexes of
// the events to send, in delivery order. After the first event of a
// conversation that is not claimed by this delivery but will be queued
// later (its claim failed, or another delivery holds its lease), the later
// events of that conversation that this delivery
// claimed are marked outHeldBack: they are not sent and their claims are
// released, so the sender's retry, which the first event's answer (503 or
// 409) asks for, claims and queues the conversation in order. Sent, they
// would overtake that event. A reused id (another payload under a signed
// id) is no stop: it is never queued in this form, so holding its
// conversation behind it would block the conversation for as long as the
// sender retries.
//
// Claims run concurrently (one round trip for the whole delivery on the
// happy path), so a held-back event was claimed and costs a release; an
// event whose key another event of this delivery claimed is not a stop.
func holdBack(msgs []pending, st []claimState) []int {
	ours := map[string]bool{} // keys this delivery claimed
	for i, s := range st {
		if s.claimed {
			ours[msgs[i].key] = true
		}
	}
	stopped := map[string]bool{} // conversations with an event not claimed
	var send []int
	for i, s := range st {
		g := msgs[i].msg.GroupID
		switch {
		case stopped[g] && s.claimed:
			st[i].out = outHeldBack
		case s.claimed:
			send = append(send, i)
		case s.out == outDuplicate, s.out == outReused, s.out == outInFlight && ours[msgs[i].key]:
		default:
			stopped[g] = true
		}
	}
	return send
}
