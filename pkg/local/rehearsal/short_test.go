package rehearsal

// everyStatement runs the rehearsal once without each statement of both
// roles (build tag long, make test-long).
var everyStatement bool
