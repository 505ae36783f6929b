package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hookpack/hookpack/pkg/internal/epoch"
	"github.com/hookpack/hookpack/pkg/internal/lease"
)

// Memory is an in-process ledger with the same semantics as DynamoDB,
// including which error a write whose conditions fail for several reasons
// reports. It backs unit tests, benchmarks and the example, and passes the
// same contract suite.
type Memory struct {
	opts Options

	mu       sync.Mutex
	effects  map[string]memEffect
	entities map[string]memEntity
	attempts map[string]int
	// last is the last receive counted per message.
	last map[string]int
	// lose is how many of the next claims lose their first answer
	// (LoseAnswers), loseEvery all of them (LoseEveryAnswer).
	lose, loseEvery int
}

type memEffect struct {
	Record
	token  string
	origin string
	// byReplay: claimed by a replay (Fence.Replay).
	byReplay bool
	// repeat and taken are what the claim that wrote the record reported
	// of the record it replaced (Lease.Repeat, Lease.Taken): a retry of the
	// claim answers with them (DynamoDB: the prev_ attributes).
	repeat bool
	taken  *Record
}

type memEntity struct {
	Entity
	series string
}

// NewMemory returns an empty in-memory ledger.
func NewMemory(opts Options) *Memory {
	return &Memory{
		opts:     opts.WithDefaults(DefaultRetention, DefaultLease),
		effects:  map[string]memEffect{},
		entities: map[string]memEntity{},
		attempts: map[string]int{},
		last:     map[string]int{},
	}
}

// LoseAnswers makes each of the next n claims lose its answer after it
// landed, and send the same request again, as the AWS SDK retries a
// request whose response was lost: the caller sees the retry's answer.
func (m *Memory) LoseAnswers(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lose += n
}

// LoseEveryAnswer makes each of the next n claims land and lose the
// answers of all its tries: Claim returns an error, as the AWS SDK does
// once its retries are spent.
func (m *Memory) LoseEveryAnswer(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loseEvery += n
}

// errAnswersLost is the error of a claim whose answers were all lost.
var errAnswersLost = errors.New("connection reset: every answer lost")

// Claim behaves like (*DynamoDB).Claim.
func (m *Memory) Claim(_ context.Context, f Fence, k Key, dur time.Duration) (Lease, error) {
	if err := checkClaim(f, k); err != nil {
		return Lease{}, err
	}
	now := m.opts.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	l := Lease{Key: k, Fence: f, Token: lease.Token(), Expires: now.Add(lease.OrDefault(dur, m.opts.Lease))}
	switch {
	case m.loseEvery > 0:
		m.loseEvery--
		m.claim(l, now) // it lands; every answer is lost
		return Lease{}, fmt.Errorf("claim %s: %w", k, errAnswersLost)
	case m.lose > 0:
		m.lose--
		m.claim(l, now) // it lands; its answer is lost
	}
	return m.claim(l, now)
}

// claim is one try of the claim l at now. The caller holds m.mu.
func (m *Memory) claim(l Lease, now time.Time) (Lease, error) {
	f, k, pk := l.Fence, l.Key, effectPK(l.Key)
	var taken *Record
	revivedBy, repeat := false, false
	var deadFrom []string
	// Compare in the stored units, exactly as the DynamoDB condition does.
	if r, ok := m.effects[pk]; ok && epoch.Seconds(r.Expires) >= epoch.Seconds(now) {
		if r.token == l.Token {
			// An earlier try landed (its answer was lost): the claim is
			// ours, and the record says what it replaced.
			l.Repeat = r.repeat
			if r.taken != nil {
				taken := *r.taken
				l.Taken = &taken
			}
			return l, nil
		}
		if newer(r.Series, r.Fence, f) {
			return Lease{}, &ConflictError{Record: r.Record, err: ErrFenced}
		}
		if r.Status == StatusCompleted && r.DeadMessage != "" && revives(r.DeadMessage, r.DeadFrom, r.origin, f) {
			// A replay of an event dead-lettered after this effect
			// completed: the effect stays done, the event lives again.
			r.DeadMessage, r.DeadSent, r.Fence, r.Series, r.byReplay = "", false, f.Token(), f.series(), true
			m.effects[pk] = r
			return Lease{}, conflict(r.Record, true)
		}
		if r.Status == StatusCompleted && r.DeadMessage == "" && adopts(r.Series, f, k) {
			r.Fence, r.Series = f.Token(), f.series()
			m.effects[pk] = r
			return Lease{}, conflict(r.Record, true)
		}
		isDone := done(r.Series, r.Fence, r.origin, r.byReplay, f)
		takeOver := r.Status == StatusInProgress && epoch.Millis(r.LeaseExpires) < epoch.Millis(now) && !isDone
		revived := r.Status == StatusDead && revives(r.DeadMessage, r.DeadFrom, r.origin, f)
		if !takeOver && !revived && r.Status != StatusFailed {
			return Lease{}, conflict(r.Record, isDone)
		}
		if takeOver {
			taken = &r.Record
		}
		deadFrom = r.DeadFrom // the claim keeps them (DynamoDB: its UpdateItem does)
		repeat = true
		// A revival, a retry of a replay's claim, or another message of
		// the same origin is a replay's claim (see done).
		revivedBy = revived || r.byReplay && f.wrote(r.Series, r.Fence) || resent(r.Series, r.Fence, r.origin, f)
	}
	l.Taken, l.Repeat = taken, repeat
	m.effects[pk] = memEffect{
		Record: Record{
			Key: k, Status: StatusInProgress, Fence: f.Token(),
			// Stored in DynamoDB's units, so records read back alike.
			LeaseExpires: epoch.FromMillis(epoch.Millis(l.Expires)),
			Expires:      epoch.FromSeconds(epoch.Seconds(now.Add(m.opts.Retention))),
			DeadFrom:     deadFrom,
			Series:       f.series(),
		},
		token:    l.Token,
		origin:   f.Origin,
		byReplay: f.Replay || revivedBy,
		repeat:   repeat,
		taken:    taken,
	}
	return l, nil
}

// owned returns the effect record l still owns, or the error
// (*DynamoDB).Complete and Fail report: nil with already set when l's own
// write to status landed before (a retried request). The caller holds m.mu.
func (m *Memory) owned(op string, l Lease, status Status) (r memEffect, already bool, err error) {
	r, ok := m.effects[effectPK(l.Key)]
	switch {
	case ok && r.token == l.Token && r.Status == StatusInProgress && r.Fence == l.Fence.Token():
		return r, false, nil
	case ok && r.token == l.Token && r.Status == status && r.Fence == l.Fence.Token():
		return r, true, nil
	case ok && newer(r.Series, r.Fence, l.Fence):
		return r, false, fmt.Errorf("%s %s: %w", op, l.Key, ErrFenced)
	default:
		return r, false, fmt.Errorf("%s %s: %w", op, l.Key, ErrLeaseLost)
	}
}

// Complete behaves like (*DynamoDB).Complete.
func (m *Memory) Complete(_ context.Context, l Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, already, err := m.owned("complete", l, StatusCompleted)
	if err != nil || already {
		return err
	}
	r.Status, r.Reason = StatusCompleted, ""
	r.Expires = epoch.FromSeconds(epoch.Seconds(m.opts.Now().Add(m.opts.Retention)))
	r.LeaseExpires = time.Time{}
	m.effects[effectPK(l.Key)] = r
	return nil
}

// Fail behaves like (*DynamoDB).Fail.
func (m *Memory) Fail(_ context.Context, l Lease, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, already, err := m.owned("fail", l, StatusFailed)
	if err != nil || already {
		return err
	}
	r.Status, r.Reason = StatusFailed, reasonText(reason)
	r.LeaseExpires = time.Time{}
	m.effects[effectPK(l.Key)] = r
	return nil
}

// Bury behaves like (*DynamoDB).Bury.
func (m *Memory) Bury(_ context.Context, f Fence, keys []Key, own []Lease, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.opts.Now()
	exp := epoch.FromSeconds(epoch.Seconds(now.Add(m.opts.Retention)))
	for _, k := range keys {
		r, ok := m.effects[effectPK(k)]
		if ok && epoch.Seconds(r.Expires) < epoch.Seconds(now) {
			ok = false
		}
		mine := ok && r.Status == StatusInProgress && slices.ContainsFunc(own, func(l Lease) bool { return l.Key == k && l.Token == r.token })
		switch {
		case !ok:
			r = memEffect{Record: Record{Key: k}}
		case newer(r.Series, r.Fence, f):
			continue // a newer worker's: nothing of ours to bury
		case mine, r.Status == StatusFailed, r.Status == StatusDead && r.DeadMessage == f.MessageID:
		case k.Effect == f.record() && finished(r.Record, r.Series, r.origin, r.byReplay, f):
			return &ConflictError{Record: r.Record, err: ErrCompleted}
		case r.Status == StatusCompleted && r.DeadMessage == "":
			// Completed before its event was dead-lettered: it stays done,
			// and its event refuses all but a replay.
			r.DeadMessage, r.DeadSent, r.Reason, r.Expires = f.MessageID, false, reasonText(reason), exp
			r.DeadFrom = deadFromAdd(r.DeadFrom, f.MessageID)
			if f.Origin != "" {
				r.origin = f.Origin
			}
			m.effects[effectPK(k)] = r
			continue
		case r.Dead() && revives(r.DeadMessage, r.DeadFrom, r.origin, f):
			// Dead-lettered from another message that f could have revived
			// (f is a replay of it): f's dead letter is now the event's, so
			// that f's own copies cannot revive it.
			r.DeadMessage, r.DeadSent, r.Reason, r.Expires = f.MessageID, false, reasonText(reason), exp
			r.DeadFrom = deadFromAdd(r.DeadFrom, f.MessageID)
			if f.Origin != "" {
				r.origin = f.Origin
			}
			m.effects[effectPK(k)] = r
			continue
		case r.Status == StatusCompleted, r.Status == StatusDead:
			// Dead-lettered already from another message, of which f is a
			// stray copy: that dead letter stands; the record only starts
			// its retention again.
			r.Expires = exp
			m.effects[effectPK(k)] = r
			continue
		case epoch.Millis(r.LeaseExpires) >= epoch.Millis(now):
			return &ConflictError{Record: r.Record, err: ErrInFlight}
		}
		r.Expires = exp
		r.Status, r.Reason, r.DeadMessage, r.DeadSent, r.LeaseExpires = StatusDead, reasonText(reason), f.MessageID, false, time.Time{}
		r.DeadFrom = deadFromAdd(r.DeadFrom, f.MessageID)
		if f.Origin != "" {
			r.origin = f.Origin
		}
		m.effects[effectPK(k)] = r
	}
	return nil
}

// Buried behaves like (*DynamoDB).Buried.
func (m *Memory) Buried(_ context.Context, f Fence, keys []Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		if r, ok := m.effects[effectPK(k)]; ok && r.Dead() && r.DeadMessage == f.MessageID {
			r.DeadSent = true
			m.effects[effectPK(k)] = r
		}
	}
	return nil
}

// Apply behaves like (*DynamoDB).Apply.
func (m *Memory) Apply(_ context.Context, f Fence, u Update) error {
	if err := checkApply(f, u); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	pk := entityPK(f.Tenant, u.Entity)
	if e, ok := m.entities[pk]; ok {
		if newer(e.series, e.Fence, f) {
			return fmt.Errorf("apply %s of %s: %w", u.Entity, f.Tenant, ErrFenced)
		}
		if e.Version >= u.Version {
			return fmt.Errorf("apply %s of %s version %d: %w", u.Entity, f.Tenant, u.Version, ErrStale)
		}
	}
	var data []byte
	if len(u.Data) > 0 {
		data = bytes.Clone(u.Data)
	}
	m.entities[pk] = memEntity{
		Entity: Entity{
			Tenant: f.Tenant, ID: u.Entity, Version: u.Version, Data: data, Fence: f.Token(),
			UpdatedAt: epoch.FromMillis(epoch.Millis(m.opts.Now())),
		},
		series: f.series(),
	}
	return nil
}

// Entity behaves like (*DynamoDB).Entity.
func (m *Memory) Entity(_ context.Context, tenantID, id string) (Entity, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entities[entityPK(tenantID, id)]
	if !ok {
		return Entity{}, fmt.Errorf("entity %s of %s: %w", id, tenantID, ErrNotFound)
	}
	out := e.Entity
	out.Data = bytes.Clone(e.Data)
	return out, nil
}

// Record behaves like (*DynamoDB).Record.
func (m *Memory) Record(_ context.Context, k Key) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.effects[effectPK(k)]
	if !ok {
		return Record{}, fmt.Errorf("record %s: %w", k, ErrNotFound)
	}
	return r.Record, nil
}

// Attempts behaves like (*DynamoDB).Attempts.
func (m *Memory) Attempts(_ context.Context, messageID string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.attempts[messageID], nil
}

// Effects behaves like (*DynamoDB).Effects.
func (m *Memory) Effects(_ context.Context, tenantID, event string) ([]Record, error) {
	if err := validTenant(tenantID); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Record
	for _, r := range m.effects {
		if r.Key.Tenant == tenantID && (event == "" || r.Key.Event == event) {
			out = append(out, r.Record)
		}
	}
	return out, nil
}

// FailedAttempt behaves like (*DynamoDB).FailedAttempt.
func (m *Memory) FailedAttempt(_ context.Context, messageID string, receive int) (int, error) {
	if err := validName("message id", messageID); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if last, ok := m.last[messageID]; ok && last >= receive {
		return m.attempts[messageID], nil
	}
	m.last[messageID] = receive
	m.attempts[messageID]++
	return m.attempts[messageID], nil
}

// deadFromAdd returns the set ids with id added, sorted (as Record reads
// DynamoDB's string set back), in a new slice: records are copied by value.
func deadFromAdd(ids []string, id string) []string {
	if slices.Contains(ids, id) {
		return ids
	}
	out := append(slices.Clone(ids), id)
	slices.Sort(out)
	return out
}
