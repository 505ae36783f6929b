//go:build race

package provider_test

// raceDetector is true in a test binary built with -race (make test's),
// where BenchmarkHotPath runs its smaller sizes only: run once there, it
// proves the benchmark still works, and the instrumented 1 MB parses took
// ten seconds of the run's CPU to measure nothing (make bench runs them).
const raceDetector = true
