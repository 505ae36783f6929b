//go:build !race

package provider_test

// raceDetector: see race_test.go.
const raceDetector = false
