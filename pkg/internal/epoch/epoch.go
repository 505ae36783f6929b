// Package epoch converts between time.Time and the integer epoch units that
// DynamoDB items carry. It is the only place such conversions happen: mixing
// seconds (DynamoDB TTL) and milliseconds (lease expiry) is a classic
// idempotency bug, so every caller goes through these helpers.
package epoch

import "time"

// Seconds returns t as Unix epoch seconds, the unit DynamoDB TTL requires.
func Seconds(t time.Time) int64 { return t.Unix() }

// Millis returns t as Unix epoch milliseconds, the unit of lease expiries.
func Millis(t time.Time) int64 { return t.UnixMilli() }

// FromSeconds is the inverse of Seconds.
func FromSeconds(s int64) time.Time { return time.Unix(s, 0).UTC() }

// FromMillis is the inverse of Millis.
func FromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// Micros returns t as Unix epoch microseconds, the unit of rate-limit
// schedules (a millisecond is too coarse for rates above a few hundred a
// second).
func Micros(t time.Time) int64 { return t.UnixMicro() }

// FromMicros is the inverse of Micros.
func FromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }
