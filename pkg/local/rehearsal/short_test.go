package rehearsal

// everyStatement makes the negative check remove every statement of both
// roles (build tag long, make test-long), not only the representative ones.
var everyStatement bool
