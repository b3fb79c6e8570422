package cli

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
)

// reportBacklog runs a backlog whose beads go through what a report
// shows: bd-1 lands, bd-2's gate is red (blocked), bd-3's agent reports
// tokens and cost before it lands, bd-4 waits for a review; the gate
// takes a while, so merges queue behind each other.
func reportBacklog(t *testing.T) (*beadProject, *state.Session) {
	t.Helper()
	p, logPath := newBacklogProject(t, bead("bd-1", "One", nil), bead("bd-2", "Breaks the build", nil),
		bead("bd-3", "Asks an agent", map[string]any{"labels": []any{"grimoire:agent"}}),
		bead("bd-4", "Needs a review", map[string]any{"labels": []any{"grimoire:review"}}))
	dir := t.TempDir()
	p.write(".vibeteam/grimoires/ship.yaml", strings.Replace(backlogGrimoire, "require_review: false", "require_review: false\n    gate: true", 1))
	p.write(".vibeteam/grimoires/review.yaml", strings.Replace(backlogGrimoire, "require_review: false", "require_review: true", 1))
	p.write(".vibeteam/adapters/structured.yaml", fmt.Sprintf("name: structured\ncommand: %s\nmodes:\n  headless:\n    args: []\n    output: claude-stream-json\n    prompt: { position: arg }\n", fakeAgent))
	answer := `{"type":"system","subtype":"init","session_id":"rep-1","model":"claude-test-1"}` + "\n" +
		`{"type":"result","subtype":"success","is_error":false,"result":"done\n` + "```json\\n{\\\"success\\\": true}\\n```" + `","session_id":"rep-1","total_cost_usd":0.6,"usage":{"input_tokens":300,"output_tokens":40}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "answer.jsonl"), []byte(answer), 0o644); err != nil {
		t.Fatal(err)
	}
	p.write(".vibeteam/grimoires/agent.yaml", `name: agent
steps:
  - name: ask
    type: agent
    adapter: structured
    spell: |
      cat=`+dir+`/answer.jsonl
  - name: work
    type: script
    command: echo {{.bead.id}} > {{.bead.id}}.txt
  - name: merge
    type: merge
    require_review: false
    gate: true
`)
	p.write(".vibeteam/config.yaml", "grimoires:\n  default: ship\nmerge:\n  gate: \"sleep 0.3; ! test -f bd-2.txt || { echo 'FAIL: bd-2 breaks the build'; exit 1; }\"\n")
	r := p.bdExec("run", "--ready", "--jobs", "4", "--headless", "--set", "log="+logPath, "--set", "pause=0.3")
	wantCode(t, r, 3)
	return p, p.backlogSession()
}

// svgBar is a bar or gate mark of the report's timeline, as the page has it.
type pageBar struct {
	state, kind string
	start, end  time.Time
}

// reportPage is what a test reads of a report.
type reportPage struct {
	rows     []string
	bars     map[string][]pageBar // by row
	marks    map[string][]pageBar
	ids      map[string]string // text of the elements with an id
	outcomes map[string]string // text of each outcome row
	svg      map[string]string // the timeline's attributes
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

func parseReport(t *testing.T, doc string) *reportPage {
	t.Helper()
	root, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	rp := &reportPage{bars: map[string][]pageBar{}, marks: map[string][]pageBar{}, ids: map[string]string{}, outcomes: map[string]string{}, svg: map[string]string{}}
	stamp := func(n *html.Node, key string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, attr(n, key))
		if err != nil {
			t.Fatalf("%s %q: %v", key, attr(n, key), err)
		}
		return v
	}
	var walk func(n *html.Node, row string)
	walk = func(n *html.Node, row string) {
		if n.Type == html.ElementNode {
			switch {
			case n.Data == "svg" && attr(n, "id") == "timeline":
				for _, a := range n.Attr {
					rp.svg[a.Key] = a.Val
				}
			case n.Data == "g" && attr(n, "class") == "row":
				row = attr(n, "data-row")
				rp.rows = append(rp.rows, row)
			case n.Data == "rect" && attr(n, "data-state") != "":
				rp.bars[row] = append(rp.bars[row], pageBar{state: attr(n, "data-state"), start: stamp(n, "data-start"), end: stamp(n, "data-end")})
			case n.Data == "rect" && attr(n, "data-kind") != "":
				rp.marks[row] = append(rp.marks[row], pageBar{kind: attr(n, "data-kind"), start: stamp(n, "data-start"), end: stamp(n, "data-end")})
			case n.Data == "tr" && attr(n, "data-row") != "":
				rp.outcomes[attr(n, "data-row")] = text(n)
			}
			if id := attr(n, "id"); id != "" {
				rp.ids[id] = text(n)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, row)
		}
	}
	walk(root, "")
	return rp
}

// hasBar reports whether row has a bar in state from start to end.
func (rp *reportPage) hasBar(row, st string, start, end time.Time) bool {
	for _, b := range rp.bars[row] {
		if b.state == st && b.start.Equal(start) && b.end.Equal(end) {
			return true
		}
	}
	return false
}

// wantBars derives, from a bead session's event log alone, the bars its
// row must have, and checks them.
func wantBars(t *testing.T, rp *reportPage, row string, evs []state.Event, backlogEnd time.Time) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	want := func(st string, start, end time.Time) {
		t.Helper()
		seen[st] = true
		if !rp.hasBar(row, st, start, end) {
			t.Errorf("%s: no %s bar from %s to %s; bars: %+v", row, st, start.Format(time.StampMicro), end.Format(time.StampMicro), rp.bars[row])
		}
	}
	var queuedAt, gateAt, mergedAt, reviewAt time.Time
	for _, e := range evs {
		switch p := e.Payload.(type) {
		case events.SessionStart:
			if b := rp.bars[row]; len(b) == 0 || b[0].state != "running" || !b[0].start.Equal(e.Time) {
				t.Errorf("%s: the first bar is not running from session_started (%s): %+v", row, e.Time, b)
			}
			seen["running"] = true
		case events.MergeQueue:
			queuedAt = e.Time
		case events.GateStart:
			if !queuedAt.IsZero() {
				want("queued", queuedAt, e.Time)
				queuedAt = time.Time{}
			}
			gateAt = e.Time
		case events.GateEnd:
			want("gating", gateAt, e.Time)
			kind := map[bool]string{true: "green", false: "red"}[p.Green]
			found := false
			for _, m := range rp.marks[row] {
				found = found || m.kind == kind && m.start.Equal(gateAt) && m.end.Equal(e.Time)
			}
			if !found {
				t.Errorf("%s: no %s gate mark from %s to %s: %+v", row, kind, gateAt, e.Time, rp.marks[row])
			}
		case events.MergeDone:
			mergedAt = e.Time
		case events.MergeWait:
			reviewAt = e.Time
		case events.SessionEnd:
			switch p.Status {
			case "completed":
				want("merged", mergedAt, e.Time)
			case "blocked":
				want("blocked", e.Time, backlogEnd)
			case "pending_merge":
				// From the review's request, on past the session's end
				// to the backlog's.
				want("waiting", reviewAt, backlogEnd)
			}
		}
	}
	return seen
}

// The report of a backlog, parsed: one row per bead; for each state a
// bead went through a bar from the event that began it to the one that
// ended it; gate marks; the totals; each bead's outcome, merge commit,
// reason and next command; nothing fetched from a network.
func TestReportOfABacklog(t *testing.T) {
	t.Parallel()
	p, bl := reportBacklog(t)
	r := p.exec("report", bl.ID[:6], "--out", "-")
	wantCode(t, r, 0)
	doc := r.stdout
	for _, bad := range []string{"http://", "https://", "<script", "<link", "<img", "src=", "href=", "url(", "@import"} {
		if strings.Contains(strings.ToLower(doc), bad) {
			t.Errorf("the report holds %q: it must not fetch anything", bad)
		}
	}
	rp := parseReport(t, doc)
	if got := strings.Join(rp.rows, " "); got != "bd-1 bd-2 bd-3 bd-4" {
		t.Fatalf("rows %q, want one per bead", got)
	}
	states := map[string]bool{}
	for _, b := range bl.Backlog.Beads {
		for st := range wantBars(t, rp, b.ID, p.events(b.Session), *bl.EndTime) {
			states[st] = true
		}
	}
	for _, st := range []string{"running", "gating", "merged", "blocked", "waiting"} {
		if !states[st] {
			t.Errorf("the run never went through %s (the fixture is meant to)", st)
		}
	}
	if rp.ids["total-tokens"] != "340" || rp.ids["total-cost"] != "$0.60" {
		t.Errorf("totals %q tokens, %q cost; want 340 and $0.60 (bd-3's agent)", rp.ids["total-tokens"], rp.ids["total-cost"])
	}
	if !strings.Contains(doc, "claude-test-1") {
		t.Error("the spend by agent does not name the model the agent reported")
	}
	byID := map[string]*state.BacklogBead{}
	for _, b := range bl.Backlog.Beads {
		byID[b.ID] = b
	}
	if merged := p.sessionByID(byID["bd-1"].Session).Merged; len(merged) < 12 || !strings.Contains(rp.outcomes["bd-1"], merged[:12]) {
		t.Errorf("bd-1's outcome %q lacks its merge commit %s", rp.outcomes["bd-1"], merged)
	}
	if o := rp.outcomes["bd-2"]; !strings.Contains(o, "blocked") || !strings.Contains(o, "merge_gate_red") || !strings.Contains(o, "vibeteam resume "+byID["bd-2"].Session+" --approve-merge") {
		t.Errorf("bd-2's outcome %q: want blocked, the reason and the command", o)
	}
	if o := rp.outcomes["bd-4"]; !strings.Contains(o, "pending_merge") || !strings.Contains(o, "vibeteam resume "+byID["bd-4"].Session+" --approve-merge") {
		t.Errorf("bd-4's outcome %q: want pending_merge and the command", o)
	}
	// Written to a file: its path is printed.
	r = p.exec("report", bl.ID)
	wantCode(t, r, 0)
	if path := strings.TrimSpace(r.stdout); path != p.path(".vibeteam/reports/"+bl.ID+".html") || !p.exists(".vibeteam/reports/"+bl.ID+".html") {
		t.Errorf("report printed %q", r.stdout)
	}
	t.Run("browser", func(t *testing.T) { reportInBrowser(t, doc, bl) })
}

// reportInBrowser loads the report in a real headless browser: no console
// message, the bars drawn where the stated scale puts them, a screenshot
// that is not blank. VIBETEAM_REPORT_PNG=FILE keeps the screenshot (the
// README's).
func reportInBrowser(t *testing.T, doc string, bl *state.Session) {
	browser, err := exec.LookPath("chromium-headless-shell")
	if err != nil {
		t.Skip("chromium-headless-shell is not installed (apt-get install chromium-headless-shell)")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "report.png")
	run := func(args ...string) (string, string) {
		t.Helper()
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + filepath.Join(dir, "profile"),
			"--disable-background-networking", "--disable-component-update", "--no-first-run", "--hide-scrollbars",
			"--force-device-scale-factor=1", "--enable-logging=stderr", "--v=0"}
		cmd := exec.Command(browser, append(append(base, args...), "file://"+page)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", browser, err, errb.String())
		}
		return out.String(), errb.String()
	}
	dom, logs := run("--dump-dom")
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "CONSOLE") {
			t.Errorf("the browser's console: %s", l)
		}
	}
	if !strings.Contains(dom, `id="timeline"`) || strings.Count(dom, "data-state=") < 8 {
		t.Fatalf("the browser's DOM lacks the timeline:\n%.2000s", dom)
	}
	rp := parseReport(t, dom)
	pxs, _ := strconv.ParseFloat(rp.svg["data-px-per-second"], 64)
	m := regexp.MustCompile(`scale: 100 px = (\S+)`).FindStringSubmatch(rp.ids["scale"])
	if m == nil {
		t.Fatalf("the page does not state its scale: %q", rp.ids["scale"])
	}
	per, err := time.ParseDuration(m[1])
	if err != nil || pxs <= 0 || abs(100/per.Seconds()-pxs) > 0.01*pxs {
		t.Fatalf("stated scale %q, data-px-per-second %v", m[1], pxs)
	}
	start, end := bl.StartTime, *bl.EndTime
	width, _ := strconv.ParseFloat(rp.svg["width"], 64)
	if need := 240 + end.Sub(start).Seconds()*pxs; width < need {
		t.Errorf("the timeline is %v px wide; the run's %s at the stated scale needs %v", width, end.Sub(start), need)
	}
	run("--window-size=1600,1100", "--screenshot="+shot)
	checkScreenshot(t, shot, rp, start, pxs)
	if keep := os.Getenv("VIBETEAM_REPORT_PNG"); keep != "" {
		data, _ := os.ReadFile(shot)
		if err := os.WriteFile(keep, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// checkScreenshot decodes the screenshot: it is not blank, and the last
// bar's right edge is where the stated scale puts the run's last moment
// (the page's margin, the frame's border, the label column, then the
// time axis).
func checkScreenshot(t *testing.T, path string, rp *reportPage, start time.Time, pxs float64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for _, bars := range rp.bars {
		for _, b := range bars {
			if b.end.After(last) {
				last = b.end
			}
		}
	}
	b := img.Bounds()
	inked, rightmost := 0, -1
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				inked++
			}
			// A bar's colour: the running blue (#4c78a8), the waiting
			// orange (#f58518), the blocked brown (#8c564b) or the merged
			// green (#54a24b), as the rows end in.
			for _, c := range [][3]uint32{{0x4c, 0x78, 0xa8}, {0xf5, 0x85, 0x18}, {0x8c, 0x56, 0x4b}, {0x54, 0xa2, 0x4b}} {
				if near(r>>8, c[0]) && near(g>>8, c[1]) && near(bl>>8, c[2]) && x > rightmost {
					rightmost = x
				}
			}
		}
	}
	if total := b.Dx() * b.Dy(); inked < total/50 {
		t.Errorf("the screenshot is nearly blank: %d of %d pixels inked", inked, total)
	}
	const margin, border = 24, 1
	want := float64(margin+border+240) + last.Sub(start).Seconds()*pxs
	if abs(float64(rightmost+1)-want) > 2 {
		t.Errorf("the last bar ends at x=%d on the screen; the stated scale puts it at %.1f", rightmost+1, want)
	}
}

func near(a, b uint32) bool { return a+3 >= b && a <= b+3 }

// A grimoire's report has a row per step, a loop's iterations on one row
// (a bar each, at the times of their step events), and the step that
// blocked the run in the colour of its end, with the command to resume.
func TestReportOfAGrimoire(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("g.yaml", `name: looped
steps:
  - name: tries
    type: loop
    max_iterations: 3
    on_max_iterations: continue
    steps:
      - name: attempt
        type: script
        command: sleep 0.1
  - name: broken
    type: script
    command: exit 3
`)
	wantCode(t, p.exec("run", "g.yaml", "--headless"), 3)
	s := p.only()
	r := p.exec("report", s.ID, "--out", "-")
	wantCode(t, r, 0)
	rp := parseReport(t, r.stdout)
	if got := strings.Join(rp.rows, " "); got != "session tries attempt broken" {
		t.Fatalf("rows %q, want the session, then one per step", got)
	}
	starts := map[string]time.Time{}
	n := 0
	for _, e := range p.events(s.ID) {
		switch f := e.Payload.(type) {
		case events.StepStarted:
			starts[f.Address] = e.Time
		case events.StepCompleted:
			st := map[string]string{"done": "running", "blocked": "blocked"}[string(f.Status)]
			if f.Name == "attempt" {
				n++
			}
			if !rp.hasBar(f.Name, st, starts[f.Address], e.Time) {
				t.Errorf("no %s bar for %s at %s: %+v", st, f.Name, f.Address, rp.bars[f.Name])
			}
		}
	}
	if n != 3 || len(rp.bars["attempt"]) != 3 {
		t.Errorf("%d iterations, %d bars on the loop's step row; want 3 of each", n, len(rp.bars["attempt"]))
	}
	if o := rp.outcomes["session"]; !strings.Contains(o, "blocked") || !strings.Contains(o, "vibeteam resume "+s.ID) {
		t.Errorf("the end says %q", o)
	}
}
