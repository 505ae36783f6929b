// Package destination keeps the state of a tenant's destinations that
// every worker invocation and operator shares: whether a destination is
// paused (since when, why, by whom), and since when it has been failing
// without a success, from which the worker pauses it by itself (auto-pause).
//
// While a destination is paused the worker delivers nothing to it: its
// messages wait on the queue, no attempt counted, coming back every Poll
// (one minute at first, a tenth of the pause's age later, so that a long
// pause spends few of a message's receives), until an operator resumes it.
//
// # Storage and cost
//
// DynamoDB keeps a tenant's destinations as one item of the ledger table
// ("destinations#" + tenant; tenant ids cannot contain '#' and no ledger
// key starts so), one attribute per paused destination ("paused:<name>",
// a map of since, reason and by) and one per failing destination
// ("failing:<name>", since and the failure's reason). One eventually
// consistent GetItem (0.5 RRU: $0.0625 per million at on-demand prices)
// reads all of a tenant's destinations; the worker reads it at most once
// per invocation and, through Cache, at most once per DefaultCacheTTL per
// container: at worst $0.0063 per million webhooks at 10 messages per
// invocation, and at most 8,640 reads ($0.00054) per container-day of
// steady traffic, never one per event. A legacy targetUrl reads nothing. Writes happen only when something changes: a
// failure that starts a streak, the auto-pause that ends one, the first
// success after failures, and an operator's pause or resume (1 WRU each);
// a healthy delivery writes nothing.
package destination
