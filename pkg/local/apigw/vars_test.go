package apigw

import "time"

var (
	testNow     = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	testTimeout = 5 * time.Second
)
