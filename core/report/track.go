package report

import (
	"slices"
	"sort"
	"time"
)

// track gathers one row's stretches as its events begin and end them;
// several states may hold at once (a gate runs inside a merge step), and
// bars flattens them, the highest ranked state showing.
type track struct {
	open    map[State]time.Time
	spans   []Bar
	marks   []Mark
	gateAt  time.Time // the start of the gate run under way
	gateCmd string
	last    time.Time // the latest event seen
}

func newTrack() *track { return &track{open: map[State]time.Time{}} }

func (t *track) seen(at time.Time) {
	if at.After(t.last) {
		t.last = at
	}
}

// begin opens a stretch in state s at at; one already open stays as it is.
func (t *track) begin(s State, at time.Time) {
	t.seen(at)
	if _, ok := t.open[s]; !ok {
		t.open[s] = at
	}
}

// end closes the stretch in state s, if one is open.
func (t *track) end(s State, at time.Time) {
	t.seen(at)
	start, ok := t.open[s]
	if !ok {
		return
	}
	delete(t.open, s)
	t.add(s, start, at)
}

func (t *track) add(s State, start, end time.Time) {
	if end.After(start) {
		t.spans = append(t.spans, Bar{State: s, Start: start, End: end})
	}
}

// endAll closes every open stretch at at.
func (t *track) endAll(at time.Time) {
	for s := range t.open {
		t.end(s, at)
	}
}

// bars is the row's stretches flattened: at each moment the highest
// ranked state that holds, adjacent pieces of one state joined.
func (t *track) bars() []Bar {
	if len(t.spans) == 0 {
		return nil
	}
	var cuts []time.Time
	for _, s := range t.spans {
		cuts = append(cuts, s.Start, s.End)
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i].Before(cuts[j]) })
	cuts = slices.CompactFunc(cuts, func(a, b time.Time) bool { return a.Equal(b) })
	var out []Bar
	for i := 0; i+1 < len(cuts); i++ {
		from, to := cuts[i], cuts[i+1]
		best := State("")
		for _, s := range t.spans {
			if !s.Start.After(from) && !s.End.Before(to) && rank[s.State] > rank[best] {
				best = s.State
			}
		}
		if best == "" {
			continue
		}
		if n := len(out); n > 0 && out[n-1].State == best && out[n-1].End.Equal(from) {
			out[n-1].End = to
			continue
		}
		out = append(out, Bar{State: best, Start: from, End: to})
	}
	return out
}
