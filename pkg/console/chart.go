package console

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/inspect"
	"github.com/hookpack/hookpack/pkg/worker"
)

// chart is a line chart of deliveries per second, one series per effect,
// laid out for an SVG of Width × Height: the template draws what it says.
type chart struct {
	Width, Height int
	// Left, Top, Right, Bottom bound the plot area.
	Left, Top, Right, Bottom int
	From, To                 time.Time
	Step                     time.Duration
	// Max is the top of the y axis, in deliveries per second.
	Max    float64
	Series []series
	YTicks []tick
	XTicks []tick
	Total  int
}

// series is one destination's (or the forward's) line.
type series struct {
	Name   string
	Color  string
	Points string // SVG polyline points
	Total  int
	// Peak is its highest rate over one step.
	Peak float64
}

type tick struct {
	Pos   int
	Label string
}

// palette colours the series in order.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"}

// seriesName is what the chart calls an effect: a destination by its name,
// the forward as the event's delivery (to a targetUrl, or the record every
// destination's delivery completes), a custom effect by its name.
func seriesName(effect string) string {
	if name, ok := strings.CutPrefix(effect, worker.DestinationEffect("")); ok {
		return name
	}
	if effect == worker.ForwardEffect {
		return "forward (the event)"
	}
	return effect + " (custom effect)"
}

// drawChart counts runs per effect in steps of step from from to to, as
// deliveries per second.
func drawChart(runs []inspect.EffectRun, from, to time.Time, step time.Duration) chart {
	c := chart{Width: 760, Height: 260, Left: 48, Top: 12, Right: 744, Bottom: 228, From: from, To: to, Step: step}
	n := int(to.Sub(from) / step)
	if n < 1 {
		n = 1
	}
	counts := map[string][]int{}
	for _, d := range runs {
		i := int(d.At.Sub(from) / step)
		if d.At.Before(from) || i >= n && !d.At.Equal(to) {
			continue
		}
		i = min(i, n-1)
		if counts[d.Effect] == nil {
			counts[d.Effect] = make([]int, n)
		}
		counts[d.Effect][i]++
	}
	effects := slices.Sorted(maps.Keys(counts))
	per := step.Seconds()
	for _, e := range effects {
		for _, k := range counts[e] {
			c.Max = max(c.Max, float64(k)/per)
		}
	}
	c.Max = niceMax(c.Max)
	x := func(i int) int { return c.Left + (c.Right-c.Left)*i/n }
	y := func(v float64) int { return c.Bottom - int(float64(c.Bottom-c.Top)*v/c.Max) }
	for si, e := range effects {
		s := series{Name: seriesName(e), Color: palette[si%len(palette)]}
		var pts []string
		for i, k := range counts[e] {
			v := float64(k) / per
			s.Total += k
			s.Peak = max(s.Peak, v)
			// Each step's rate is drawn across its step.
			pts = append(pts, fmt.Sprintf("%d,%d %d,%d", x(i), y(v), x(i+1), y(v)))
		}
		s.Points = strings.Join(pts, " ")
		c.Total += s.Total
		c.Series = append(c.Series, s)
	}
	for i := 0; i <= 4; i++ {
		v := c.Max * float64(i) / 4
		c.YTicks = append(c.YTicks, tick{Pos: y(v), Label: trimFloat(v)})
	}
	for i := 0; i <= 5; i++ {
		t := from.Add(time.Duration(i) * to.Sub(from) / 5)
		c.XTicks = append(c.XTicks, tick{Pos: c.Left + (c.Right-c.Left)*i/5, Label: t.UTC().Format("15:04:05")})
	}
	return c
}

// niceMax rounds a chart's top up to 1, 2 or 5 times a power of ten (1 for
// an empty chart).
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := 0.01
	for {
		for _, m := range []float64{1, 2, 5} {
			if v <= m*p {
				return m * p
			}
		}
		p *= 10
	}
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// PlotWidth and PlotHeight are the plot area's size.
func (c chart) PlotWidth() int  { return c.Right - c.Left }
func (c chart) PlotHeight() int { return c.Bottom - c.Top }
