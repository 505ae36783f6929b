//go:build long

package rehearsal

func init() { everyStatement = true }
