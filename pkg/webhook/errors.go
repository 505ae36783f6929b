package webhook

import "fmt"

// Errorf returns an error that wraps sentinel and carries a message safe to
// show the sender: "invalid signature: no secret matched".
func Errorf(sentinel error, format string, args ...any) error {
	return errorf(sentinel, format, args...)
}

func errorf(sentinel error, format string, args ...any) error {
	return &detailError{sentinel: sentinel, detail: fmt.Sprintf(format, args...)}
}

type detailError struct {
	sentinel error
	detail   string
}

func (e *detailError) Error() string { return e.sentinel.Error() + ": " + e.detail }
func (e *detailError) Unwrap() error { return e.sentinel }
