package cli

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/mattn/go-runewidth"
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
