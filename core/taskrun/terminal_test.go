package taskrun

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/runner"
)

// screenOf renders lines the way the runner does: rows joined, trailing
// blank rows left out, one final newline.
func screenOf(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

func newClassifier(rows int) *terminal {
	return &terminal{
		states: []adapters.State{
			{Name: "interaction_confirm", Pattern: regexp.MustCompile(`Proceed\? \(y/n\)`)},
			{Name: "interaction_idle", Pattern: regexp.MustCompile(`(?m)^> $`)},
		},
		answers: map[string]*answered{},
	}
}

// answer records d's live match as answered, as the wait loop does.
func answer(ts *terminal, d runner.Detection, start, rows int) {
	row, col := position(d.Screen, start)
	ts.answers[d.State] = &answered{
		state: d.State, pattern: ts.patternOf(d.State), lines: strings.Split(d.Screen, "\n"), rows: rows,
		row: row, col: col, cursorRow: d.CursorRow, newlines: d.Newlines, at: time.Now(),
	}
}

func TestClassifyTellsAppearancesApart(t *testing.T) {
	const rows = 6
	ts := newClassifier(rows)
	d := runner.Detection{Screen: screenOf("Proceed? (y/n) "), CursorRow: 0}
	start, _, _ := ts.classify(&d)
	if d.State != "interaction_confirm" {
		t.Fatalf("fresh question: %q", d.State)
	}
	answer(ts, d, start, rows)

	// Unchanged (the program has not reacted yet): the same appearance.
	same := runner.Detection{Screen: d.Screen, CursorRow: 0}
	if _, stale, _ := ts.classify(&same); same.State != "" || stale == nil {
		t.Errorf("unchanged screen: state %q, stale %v; want the answered question passed over", same.State, stale)
	}

	// Printed again below: new.
	again := runner.Detection{Screen: screenOf("Proceed? (y/n)", "got y", "Proceed? (y/n) "), CursorRow: 2, Newlines: 2}
	start, _, _ = ts.classify(&again)
	if again.State != "interaction_confirm" || start != len("Proceed? (y/n)\ngot y\n") {
		t.Fatalf("asked again below: %q at %d", again.State, start)
	}
	answer(ts, again, start, rows)

	// Answered, then the program shows its prompt below the old questions:
	// idle, not the question.
	idle := runner.Detection{Screen: screenOf("Proceed? (y/n)", "got y", "Proceed? (y/n)", "got y", "> "), CursorRow: 4, Newlines: 4}
	if ts.classify(&idle); idle.State != "interaction_idle" {
		t.Errorf("prompt below answered questions: %q", idle.State)
	}
}

// A screen that repeats itself line for line and scrolls by whole
// question-answer pairs: the count of newlines tells the scroll.
func TestClassifyOnAScrollingPeriodicScreen(t *testing.T) {
	const rows = 6
	ts := newClassifier(rows)
	// Old questions and answers above; the live question on the last row.
	d := runner.Detection{Screen: screenOf("got y", "Proceed? (y/n)", "got y", "Proceed? (y/n)", "got y", "Proceed? (y/n) "), CursorRow: rows - 1, Newlines: 100}
	start, _, _ := ts.classify(&d)
	if d.State != "interaction_confirm" || start != strings.LastIndex(d.Screen, "Proceed") {
		t.Fatalf("live question: %q at %d", d.State, start)
	}
	answer(ts, d, start, rows)
	// Two lines later ("got y", the question again) the screen looks the
	// same, scrolled by two: the question on the last row is new.
	after := runner.Detection{Screen: d.Screen, CursorRow: rows - 1, Newlines: 102}
	if ts.classify(&after); after.State != "interaction_confirm" {
		t.Errorf("the question asked again after scrolling was not seen as new")
	}
	// Without a newline since, the same screen is the same appearance.
	still := runner.Detection{Screen: d.Screen, CursorRow: rows - 1, Newlines: 100}
	if ts.classify(&still); still.State != "" {
		t.Errorf("unchanged screen taken for a new question: %q", still.State)
	}
}

// A dialog that goes and is drawn again is new, even at the same place.
func TestClassifyGoneThenDrawnAgain(t *testing.T) {
	ts := newClassifier(40)
	dialog := screenOf("header", "Proceed? (y/n)", "❯ 1. Yes")
	d := runner.Detection{Screen: dialog, Newlines: 3}
	start, _, _ := ts.classify(&d)
	answer(ts, d, start, 40)
	gone := runner.Detection{Screen: screenOf("header", "working…"), Newlines: 9}
	ts.classify(&gone)
	back := runner.Detection{Screen: dialog, Newlines: 20}
	if ts.classify(&back); back.State != "interaction_confirm" {
		t.Errorf("a dialog drawn again after it had gone is new: got %q", back.State)
	}
	// Redrawn in place with many newlines (a full-frame redraw) but never
	// gone: the same appearance.
	answer(ts, back, start, 40)
	redraw := runner.Detection{Screen: screenOf("header (3s)", "Proceed? (y/n)", "❯ 1. Yes"), Newlines: 200, CursorRow: 39}
	if ts.classify(&redraw); redraw.State != "" {
		t.Errorf("an in-place redraw taken for a new question: %q", redraw.State)
	}
}
