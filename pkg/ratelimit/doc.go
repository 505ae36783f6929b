// Package ratelimit paces deliveries per (tenant, destination or named
// limit) across every concurrent worker invocation: a limit of rate r
// slots a second and burst b never grants more than b + r·t slots in any
// window of t, whoever asks. A 429 slows the whole limit for everyone.
//
// # Algorithm
//
// GCRA (the generic cell rate algorithm) that schedules instead of
// refusing: a limit is one item holding its theoretical arrival time
// (TAT), where the schedule of every slot granted so far ends. Reserving n
// slots at now gives slot i the time max(now, max(TAT, now) + i·T − τ),
// T = 1/(r·factor), τ = (b−1)/r, and moves the TAT to max(TAT, now) + n·T;
// the caller sleeps until each slot (waiting is not an attempt). Slots
// after now+maxWait are not granted: Reserve returns the ones that fit and
// Retry, when the next one will, so the worker holds the rest of a
// conversation back. τ does not follow the factor, which is why the bound
// holds through any slowing: every slot is at least TAT−τ and the TAT
// grows by at least 1/r per slot.
//
// Slow is the feedback from a 429: it pauses the limit until now +
// Retry-After (or 1 s, doubling per consecutive 429 without one, at most
// 5 min; a Retry-After starts the doubling over; ends on whole seconds),
// pushes the TAT to the pause's end + τ so that every later reservation
// of every invocation lands after the pause, one slot at a time,
// and halves the factor (down to 1/32). A 429 during the pause — the rest
// of the storm of requests already under way — neither halves again nor
// counts: no storm compounds. The factor climbs back linearly (30 s from 0
// to 1) from the pause's end: additive increase, multiplicative decrease,
// computed at each reservation from the stored factor and pause end,
// without a write of its own.
//
// # Cost
//
// DynamoDB stores each limit as one item of the ledger table ("limit#" +
// tenant + "#" + name, TTL attribute expiration: an idle limit vanishes an
// hour after its schedule and recovery end), written with conditional
// UpdateItem only: no transaction, no read on the happy path. The worker
// calls Reserve once per destination per invocation for all of that
// destination's messages of the batch: one UpdateItem, 1 WRU (the item is
// under 1 KB) — $1.25 per million invocations and destination at
// on-demand prices, nothing per message. Each write returns the item
// (ReturnValues), which the store remembers for its next decision; a guess
// gone stale because another invocation wrote meanwhile costs one failed
// conditional write (1 WRU, the item comes back with the failure), at most
// 10 in all (then ErrContention). A reservation's condition is a range of
// TATs, so concurrent reservations that all fit do not invalidate each
// other: BenchmarkReserveDynamoDB measures 1.00 call per reservation from
// one container, 1.01 from four taking turns at half the rate, 1.96 at
// twice the rate (a full horizon leaves a one-step range of TATs, so a
// stale memory misses). When the remembered item shows nothing fits, one strongly
// consistent GetItem (1 RRU, $0.25 per million) gives the exact Retry. No
// call at all for an unlimited limit. Slow costs one or two writes per
// counted 429, one GetItem per 429 during a pause.
//
// # Limits of the guarantee
//
// DynamoDB has no server clock: slots are computed from the caller's
// clock. Lambda hosts follow the Amazon Time Sync Service (clock error
// well under a millisecond), so with a skew of at most ε between any two
// invocations the bound becomes b + r·(t + 2ε): at most one extra slot
// when r·2ε < 1, i.e. for any rate below 500/s at ε = 1 ms. A slot is a
// permission to start a request; network jitter after it is outside the
// limit. Slots granted before a 429 are not taken back (the horizon
// maxWait bounds how many). Rates below one a day count as one a day;
// schedules are kept in microseconds, rounded so never faster than the rate.
package ratelimit
