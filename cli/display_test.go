package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/vibeteam/vibeteam/core"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// The live board fits the terminal whatever its width: each task has one
// line on the final screen (a redraw of lines that wrapped would leave
// copies behind), and no line reaches the last column.
func TestBoardFitsTheTerminal(t *testing.T) {
	names := []string{
		"alpha task with a rather long descriptive name that goes on",
		"bravo task, also named at length so that it cannot fit",
		"charlie — the third and last of the parallel tasks",
	}
	for _, cols := range []int{40, 80, 200} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			p := newProject(t)
			p.write("wf.yaml", fmt.Sprintf(`id: board
stages:
  - id: first-stage-of-several
    tasks:
      - { id: a1, name: %q, adapter: fake, executionMode: headless, prompt: "sleep=1500ms" }
      - { id: b2, name: %q, adapter: fake, executionMode: headless, prompt: "sleep=1s" }
      - { id: c3, name: %q, adapter: fake, executionMode: headless, prompt: "sleep=2s" }
  - id: second
    tasks:
      - { id: d4, name: delta the lone task of the second stage with a long name too, adapter: fake, executionMode: headless, prompt: "sleep=1s" }
`, names[0], names[1], names[2]))
			v := startVTerm(t, p, cols, 60, "run", "wf.yaml")
			if code := v.wait(); code != 0 {
				t.Fatalf("exit %d\n%s", code, v.dump())
			}
			screen := v.screen()
			for _, prefix := range []string{"alpha task", "bravo task", "charlie", "delta the"} {
				if got := rowsWith(screen, prefix); len(got) != 1 {
					t.Errorf("%q is on %d rows of the final screen, want 1\n%s", prefix, len(got), v.dump())
				}
			}
			for _, y := range v.lastColumnUsed() {
				line := screen[y]
				for _, prefix := range []string{"alpha", "bravo", "charlie", "delta"} {
					if strings.Contains(line, prefix) {
						t.Errorf("a board line fills the last column (it wraps): %q", line)
					}
				}
			}
			if cols == 200 && len(rowsWith(screen, names[0])) != 1 {
				t.Errorf("a wide terminal cuts the name %q:\n%s", names[0], v.dump())
			}
			if got := rowsWith(screen, "DONE"); len(got) != 4 {
				t.Errorf("%d rows say DONE, want 4 (one per task)\n%s", len(got), v.dump())
			}
		})
	}
}

// A narrower terminal gets a narrower board at once: the board is redrawn
// when the terminal is resized, before the next tick's redraw, and not
// stacked.
func TestBoardFollowsAResize(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: resize
stages:
  - id: s
    tasks:
      - { id: a1, name: "alpha task with a rather long descriptive name that goes on", adapter: fake, executionMode: headless, prompt: "sleep=30s" }
      - { id: b2, name: "bravo task, also named at length so that it cannot fit", adapter: fake, executionMode: headless, prompt: "sleep=1s" }
`)
	v := startVTerm(t, p, 120, 40, "run", "wf.yaml", "--grace", "300ms")
	// Resize once the board is settled (both tasks started, both names
	// whole). Amid the burst of redraws as tasks start, two redraws written
	// for 120 columns can still be in the PTY when the terminal narrows;
	// the second moves up as 120 columns would, and the first stays on
	// screen. Every terminal has that race, and no program can see it
	// coming: it learns of the resize after those bytes are written.
	v.waitFor("the board at 120 columns", func(s []string) bool {
		text := strings.Join(s, "\n")
		return strings.Contains(text, "cannot fit (b2)  ") && strings.Contains(text, "goes on (a1)  fake")
	})
	v.resize(50, 40)
	// The next redraw after the resize is at most one tick away; the
	// bravo task ending is one more.
	screen := v.waitFor("bravo DONE", func(s []string) bool {
		rows := rowsWith(s, "bravo")
		return len(rows) == 1 && strings.Contains(s[rows[0]], "DONE") && len(rowsWith(s, "alpha task")) > 0
	})
	for _, prefix := range []string{"alpha task", "bravo task"} {
		rows := rowsWith(screen, prefix)
		if len(rows) != 1 {
			t.Fatalf("%q is on %d rows, want 1\n%s\nlast bytes: %s", prefix, len(rows), v.dump(), v.rawStart(3000))
		}
		if w := runewidth.StringWidth(screen[rows[0]]); w >= 50 {
			t.Errorf("after the resize, a board line is %d columns wide: %q", w, screen[rows[0]])
		}
	}
	if err := v.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	v.wait()
}

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
		if got := safe(in); got != want {
			t.Errorf("safe(%q) = %q, want %q", in, got, want)
		}
	}
	if got := safeLine("ok  \tpkg\t0.1s\x1b"); got != `ok      pkg     0.1s\x1b` {
		t.Errorf("safeLine expands tabs: %q", got)
	}
}

// Board lines are measured in columns, not bytes or runes: wide (CJK)
// names are cut to fit too.
func TestBoardRowsFitInColumns(t *testing.T) {
	d, err := newDisplay(IO{ErrTTY: true}, false, "")
	if err != nil {
		t.Fatal(err)
	}
	d.color = true // colour codes take no column
	now := time.Now()
	for i, name := range []string{"東京の非常に長いタスクの名前はここまで続きます", "short", "ascii name that is long enough to need cutting"} {
		id := fmt.Sprintf("t%d", i)
		tv := d.view(id)
		tv.name, tv.adapter, tv.status, tv.started = name, "claude", "RUNNING", now.Add(-time.Minute)
	}
	d.view("t1").note = "kept alive, pid 123456"
	for _, cols := range []int{20, 30, 40, 80, 200} {
		for _, r := range d.boardRowsLocked(cols) {
			plain := stripColour(r.text)
			if w := runewidth.StringWidth(plain); w != r.width || w > cols-1 {
				t.Errorf("at %d columns, %q is %d columns wide (recorded %d)", cols, plain, w, r.width)
			}
		}
	}
	if rows := d.boardRowsLocked(200); !strings.Contains(rows[0].text, "東京の非常に長いタスク") || !strings.Contains(rows[0].text, "claude") {
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
	d, err := newDisplay(IO{ErrTTY: true, Out: io.Discard, Err: io.Discard}, false, "")
	if err != nil {
		t.Fatal(err)
	}
	def, err := workflow.Parse([]byte("id: w\nstages:\n  - id: s\n    tasks:\n      - {id: first, adapter: fake}\n      - {id: second, adapter: fake}\n      - {id: third, adapter: fake}\n"), "w.yaml", workflow.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.rank = taskRanks(def)
	for _, id := range []string{"third", "first", "second"} {
		d.handle(core.Event{Task: id, Payload: events.TaskStart{Name: id, Adapter: "fake", Mode: "headless"}})
	}
	var got []string
	for _, r := range d.boardRowsLocked(200) {
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
	d, err := newDisplay(IO{ErrTTY: true, Out: io.Discard, Err: &out}, false, "")
	if err != nil {
		t.Fatal(err)
	}
	d.width = func() int { return 80 }
	d.handle(core.Event{Task: "a", Payload: events.TaskStart{Name: "a", Adapter: "fake", Mode: "interactive"}})
	if out.Len() == 0 {
		t.Fatal("the board was not drawn")
	}
	drawn := out.Len()
	for i := 0; i < 100; i++ {
		d.handle(core.Event{Task: "a", Payload: events.TaskOut{Stream: "output", Text: "x"}})
	}
	if out.Len() != drawn {
		t.Errorf("100 pieces of output wrote %d bytes", out.Len()-drawn)
	}
	d.handle(core.Event{Task: "a", Payload: events.TaskStatusChange{Status: "WAITING_FOR_USER"}})
	if out.Len() == drawn {
		t.Error("a status change did not redraw the board")
	}
}
