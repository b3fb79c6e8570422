package ui

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/vibeteam/vibeteam/core"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// flush waits until the loop has applied every message sent before.
func (d *Display) flush() { d.call(func() {}) }

func TestSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain name":                "plain name",
		"évier – 東京 ✓":              "évier – 東京 ✓",
		`quotes " and \ stay`:       `quotes " and \ stay`,
		"\x1b]0;pwn\a\x1b[2J":       `\x1b]0;pwn\a\x1b[2J`,
		"tab\there\r\n":             `tab\there\r\n`,
		"rtl \u202eevil":            `rtl \u202eevil`,
		"c1 \u009b31m":              `c1 \u009b31m`,
		"bad \xff utf8":             `bad \xff utf8`,
		"del \x7f":                  `del \x7f`,
		"nul \x00":                  `nul \x00`,
		"replacement \uFFFD stays":  "replacement \uFFFD stays",
		"zero width \u200b joiner":  `zero width \u200b joiner`,
		"non-breaking\u00a0space":   `non-breaking\u00a0space`,
		"":                          "",
		"emoji 🎉 kept":              "emoji 🎉 kept",
		"bell at the end\a":         `bell at the end\a`,
		"\x1b[31mred\x1b[0m plain":  `\x1b[31mred\x1b[0m plain`,
		"line\u2028separator":       `line\u2028separator`,
		"a\u0301 combining is kept": "a\u0301 combining is kept",
	} {
		if got := Safe(in); got != want {
			t.Errorf("Safe(%q) = %q, want %q", in, got, want)
		}
	}
	if got := SafeLine("ok  \tpkg\t0.1s\x1b"); got != `ok      pkg     0.1s\x1b` {
		t.Errorf("SafeLine expands tabs: %q", got)
	}
}

// Board lines are measured in columns, not bytes or runes: wide (CJK)
// names are cut to fit too.
func TestBoardRowsFitInColumns(t *testing.T) {
	d := NewDisplay(Streams{ErrTTY: true}, false)
	defer d.Close()
	d.color = true // colour codes take no column
	now := time.Now()
	for i, name := range []string{"東京の非常に長いタスクの名前はここまで続きます", "short", "ascii name that is long enough to need cutting"} {
		id := fmt.Sprintf("t%d", i)
		tv := d.view(id)
		tv.name, tv.adapter, tv.status, tv.started = name, "claude", "RUNNING", now.Add(-time.Minute)
	}
	d.view("t1").note = "kept alive, pid 123456"
	for _, cols := range []int{20, 30, 40, 80, 200} {
		for _, r := range d.boardRows(cols) {
			plain := stripColour(r.text)
			if w := runewidth.StringWidth(plain); w != r.width || w > cols-1 {
				t.Errorf("at %d columns, %q is %d columns wide (recorded %d)", cols, plain, w, r.width)
			}
		}
	}
	if rows := d.boardRows(200); !strings.Contains(rows[0].text, "東京の非常に長いタスク") || !strings.Contains(rows[0].text, "claude") {
		t.Errorf("a wide terminal cuts the board: %q", rows[0].text)
	}
}

func stripColour(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// The board lists a stage's tasks in the file's order, whichever started
// first.
func TestBoardFollowsTheFileOrder(t *testing.T) {
	d := NewDisplay(Streams{ErrTTY: true, Out: io.Discard, Err: io.Discard}, false)
	defer d.Close()
	def, err := workflow.Parse([]byte("id: w\nstages:\n  - id: s\n    tasks:\n      - {id: first, adapter: fake}\n      - {id: second, adapter: fake}\n      - {id: third, adapter: fake}\n"), "w.yaml", workflow.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.rank = taskRanks(def)
	for _, id := range []string{"third", "first", "second"} {
		d.Handle(core.Event{Task: id, Payload: events.TaskStart{Name: id, Adapter: "fake", Mode: "headless"}})
	}
	d.flush()
	var got []string
	for _, r := range d.boardRows(200) {
		for _, id := range []string{"first", "second", "third"} {
			if strings.Contains(r.text, id) {
				got = append(got, id)
			}
		}
	}
	if strings.Join(got, " ") != "first second third" {
		t.Errorf("board order %v, want the file's", got)
	}
}

// A task's output, not shown without --verbose, draws nothing: the board
// is drawn again for what changes it, not for each piece of output.
func TestOutputDoesNotRedrawTheBoard(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	d := NewDisplay(Streams{ErrTTY: true, Out: io.Discard, Err: &out}, false)
	defer d.Close()
	d.width = func() int { return 80 }
	d.Handle(core.Event{Task: "a", Payload: events.TaskStart{Name: "a", Adapter: "fake", Mode: "interactive"}})
	d.flush()
	if out.Len() == 0 {
		t.Fatal("the board was not drawn")
	}
	drawn := out.Len()
	for i := 0; i < 100; i++ {
		d.Handle(core.Event{Task: "a", Payload: events.TaskOut{Stream: "output", Text: "x"}})
	}
	d.flush()
	if out.Len() != drawn {
		t.Errorf("100 pieces of output wrote %d bytes", out.Len()-drawn)
	}
	d.Handle(core.Event{Task: "a", Payload: events.TaskStatusChange{Status: "WAITING_FOR_USER"}})
	d.flush()
	if out.Len() == drawn {
		t.Error("a status change did not redraw the board")
	}
}
