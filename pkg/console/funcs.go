package console

import (
	"fmt"
	"html/template"
	"strings"
	"time"
)

// funcs are the templates' helpers: times in UTC to the second, and spans
// from the page's now.
var funcs = template.FuncMap{
	"stamp": func(v any) string {
		t := timeOf(v)
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	// span is t less now for a reader: "3m10s ago", "in 13d4h".
	"span": func(now time.Time, v any) string {
		t := timeOf(v)
		if t.IsZero() {
			return ""
		}
		if d := t.Sub(now); d >= 0 {
			return "in " + roundSpan(d)
		}
		return roundSpan(now.Sub(t)) + " ago"
	},
	"seconds": func(s *float64) string {
		if s == nil {
			return ""
		}
		return roundSpan(time.Duration(*s * float64(time.Second)))
	},
	"mul100": func(f float64) float64 { return 100 * f },
	"add":    func(a, b int) int { return a + b },
	"sub":    func(a, b int) int { return a - b },
	"join":   strings.Join,
	// state is an inspect.State as the command line prints it: DEAD LETTERED.
	"state": func(s any) string { return strings.ToUpper(strings.ReplaceAll(fmt.Sprint(s), "_", " ")) },
	"queueName": func(url string) string {
		return url[strings.LastIndexByte(url, '/')+1:]
	},
	"ms": func(v float64) string {
		if v == 0 {
			return ""
		}
		return time.Duration(v * float64(time.Millisecond)).Round(time.Millisecond).String()
	},
}

// roundSpan keeps a span's two largest units.
func roundSpan(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd%dh", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
	case d >= time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	case d >= time.Minute:
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// timeOf is a time.Time or what a *time.Time points at (zero for nil).
func timeOf(v any) time.Time {
	switch t := v.(type) {
	case time.Time:
		return t
	case *time.Time:
		if t != nil {
			return *t
		}
	}
	return time.Time{}
}
