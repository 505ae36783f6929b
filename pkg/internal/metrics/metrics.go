// Package metrics writes CloudWatch Embedded Metric Format (EMF) fields into
// a structured log line, so metrics cost no API calls. The worker writes one
// such line per batch and outcome; the ingest function's metrics come from
// metric filters on its one line per webhook (template.yaml), which costs no
// log bytes at all.
package metrics

import (
	"log/slog"
	"time"
)

// Namespace is the CloudWatch namespace of every metric the pack emits.
const Namespace = "Hookpack"

// Unit names accepted by CloudWatch.
const (
	Count        = "Count"
	Milliseconds = "Milliseconds"
)

// Metric is one metric in a record: Value, or Values when several
// observations are aggregated into one line (EMF takes up to 100 values per
// metric and computes statistics over all of them).
type Metric struct {
	Name   string
	Unit   string
	Value  float64
	Values []float64
}

// Attrs returns slog attributes that make a JSON log line an EMF record:
// the "_aws" metadata plus one top-level field per metric. dimensions must
// name attributes present on the same line (e.g. "outcome"); keep them
// low-cardinality, every distinct combination is a billed custom metric.
func Attrs(now time.Time, dimensions []string, ms ...Metric) []any {
	defs := make([]map[string]string, len(ms))
	attrs := make([]any, 0, len(ms)+1)
	for i, m := range ms {
		defs[i] = map[string]string{"Name": m.Name, "Unit": m.Unit}
		if m.Values != nil {
			attrs = append(attrs, slog.Any(m.Name, m.Values))
		} else {
			attrs = append(attrs, slog.Float64(m.Name, m.Value))
		}
	}
	aws := map[string]any{
		"Timestamp": now.UnixMilli(),
		"CloudWatchMetrics": []map[string]any{{
			"Namespace":  Namespace,
			"Dimensions": [][]string{dimensions},
			"Metrics":    defs,
		}},
	}
	return append(attrs, slog.Any("_aws", aws))
}
