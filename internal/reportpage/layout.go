// Package reportpage renders a report.Report as one self-contained HTML
// page: inline CSS and SVG, no script, no font or image to fetch, so it
// reads offline and can be attached to a CI run.
package reportpage

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/vibeteam/vibeteam/core/report"
)

// The timeline's geometry, in CSS pixels.
const (
	LabelWidth = 240 // the row labels' column, left of the time axis
	AxisHeight = 28
	RowHeight  = 22
	barHeight  = 14
	markHeight = 5
	rightPad   = 24
	maxWidth   = 1100 // the time axis is at most this wide
	labelChars = 34
)

// scales are the seconds that 100 px stand for, the smallest that fits
// the run in maxWidth is taken: round figures a person can read.
var scales = []float64{0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 86400, 172800, 604800}

// Scale is how many pixels a second takes, and says so.
type Scale struct {
	PxPerSecond float64
	Per100px    time.Duration
}

// ChooseScale is the scale at which a run of wall fits the axis.
func ChooseScale(wall time.Duration) Scale {
	secs := wall.Seconds()
	per := scales[len(scales)-1]
	for _, s := range scales {
		if secs/s*100 <= maxWidth {
			per = s
			break
		}
	}
	return Scale{PxPerSecond: 100 / per, Per100px: time.Duration(per * float64(time.Second))}
}

// X is where t lies on the axis (from the left of the axis).
func (s Scale) X(start, t time.Time) float64 {
	return t.Sub(start).Seconds() * s.PxPerSecond
}

// svgBar is a bar or a gate mark, placed.
type svgBar struct {
	Class, State  string
	X, Y, W, H    string
	Start, End    string
	Title         string
	Kind, Command string
}

type svgRow struct {
	Y, TextY, Label, Note, Full, Detail string
	Indent                              string
	Bars, Marks                         []svgBar
	Stripe                              bool
}

type svgTick struct{ X, Label string }

// timeline is the SVG's content.
type timeline struct {
	Width, Height, AxisW string
	Scale                Scale
	ScaleText            string
	Start, End           string
	Ticks                []svgTick
	Rows                 []svgRow
	AxisY, GridBottom    string
}

func px(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func layout(r *report.Report) timeline {
	sc := ChooseScale(r.Wall())
	axisW := math.Ceil(r.Wall().Seconds() * sc.PxPerSecond)
	h := AxisHeight + len(r.Rows)*RowHeight + 8
	tl := timeline{
		Width: px(LabelWidth + axisW + rightPad), Height: strconv.Itoa(h), AxisW: px(axisW), Scale: sc,
		ScaleText: "100 px = " + Human(sc.Per100px), Start: stamp(r.Start), End: stamp(r.End),
		AxisY: strconv.Itoa(AxisHeight - 6), GridBottom: strconv.Itoa(h - 8),
	}
	for x := 0.0; x <= axisW+0.5; x += 100 {
		at := time.Duration(x / sc.PxPerSecond * float64(time.Second))
		tl.Ticks = append(tl.Ticks, svgTick{X: px(LabelWidth + x), Label: Human(at)})
	}
	for i, row := range r.Rows {
		y := AxisHeight + i*RowHeight
		room := labelChars - 2*row.Depth
		label := cut(row.Label, room)
		note := ""
		if r.Kind == report.KindBacklog {
			// A bead's title after its id, as much as the column holds.
			note = cut(row.Detail, room-len([]rune(label))-1)
		}
		sr := svgRow{Y: strconv.Itoa(y), TextY: strconv.Itoa(y + RowHeight/2 + 4), Label: label, Note: note, Full: row.Label, Detail: row.Detail,
			Indent: strconv.Itoa(8 + 12*row.Depth), Stripe: i%2 == 1}
		for _, b := range row.Bars {
			x0, x1 := sc.X(r.Start, b.Start), sc.X(r.Start, b.End)
			sr.Bars = append(sr.Bars, svgBar{Class: "bar s-" + string(b.State), State: string(b.State),
				X: px(LabelWidth + x0), Y: px(float64(y + (RowHeight-barHeight)/2 + 2)), W: px(math.Max(x1-x0, 1)), H: strconv.Itoa(barHeight),
				Start: stamp(b.Start), End: stamp(b.End),
				Title: fmt.Sprintf("%s: %s %s (%s → %s)", row.Label, b.State, Human(b.End.Sub(b.Start)), clock(b.Start), clock(b.End))})
		}
		for _, m := range row.Marks {
			x0, x1 := sc.X(r.Start, m.Start), sc.X(r.Start, m.End)
			sr.Marks = append(sr.Marks, svgBar{Class: "gate g-" + string(m.Kind), Kind: string(m.Kind), Command: m.Command,
				X: px(LabelWidth + x0), Y: strconv.Itoa(y + 1), W: px(math.Max(x1-x0, 3)), H: strconv.Itoa(markHeight),
				Start: stamp(m.Start), End: stamp(m.End),
				Title: fmt.Sprintf("%s: gate %s, exit %d, %s: %s", row.Label, m.Kind, m.Exit, Human(m.End.Sub(m.Start)), m.Command)})
		}
		tl.Rows = append(tl.Rows, sr)
	}
	return tl
}

// cut is s in at most n characters, an ellipsis saying it was cut.
func cut(s string, n int) string {
	r := []rune(s)
	switch {
	case n < 2:
		return ""
	case len(r) > n:
		return string(r[:n-1]) + "…"
	}
	return s
}

func clock(t time.Time) string { return t.Local().Format("15:04:05.000") }

// Human is a duration as a person reads it: 850ms, 4.2s, 3m10s, 2h05m.
func Human(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
