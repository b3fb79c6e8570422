package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// TestLongLoopStaysBounded: a loop of many iterations keeps the session
// bounded (the runs of its last iterations, and a count), and a kill in
// the middle resumes at the iteration it was in, without running a
// finished one again.
func TestLongLoopStaysBounded(t *testing.T) {
	t.Parallel()
	const iterations = 120
	p := newProject(t)
	trace := filepath.Join(t.TempDir(), "trace")
	p.write("g.yaml", `name: long
steps:
  - name: l
    type: loop
    max_iterations: `+strconv.Itoa(iterations)+`
    on_max_iterations: exit
    steps:
      - name: a
        type: script
        command: echo {{.l.iteration}} >> "$TRACE"
      - name: b
        type: script
        command: echo b{{.l.iteration}}-{{.previous.output}}
  - name: after
    type: script
    command: echo after {{.l.iteration}} {{.previous.output}} >> "$TRACE"
`)
	cmd := p.command("run", "g.yaml")
	cmd.Env = append(cmd.Env, "TRACE="+trace)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Killed once past the iterations the session keeps.
	deadline := time.Now().Add(60 * time.Second)
	for {
		data, _ := os.ReadFile(trace)
		if strings.Count(string(data), "\n") > 3*state.KeptIterations {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("too slow\n%s", errb.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	id := onlySessionID(t, p)
	mid := p.sessionByID(id)
	if n := len(mid.Runs); n > 2*(state.KeptIterations+1)+2 {
		t.Errorf("%d runs in the session mid-loop, want at most the last %d iterations'", n, state.KeptIterations+1)
	}
	resume := p.command("resume", id)
	resume.Env = append(resume.Env, "TRACE="+trace)
	r := runResult(t, resume)
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	// Every iteration ran once (the step killed may have run twice in a
	// row), and in order; the step after the loop saw the last one.
	data, _ := os.ReadFile(trace)
	var want strings.Builder
	for i := 1; i <= iterations; i++ {
		want.WriteString(strconv.Itoa(i) + "\n")
	}
	want.WriteString("after " + strconv.Itoa(iterations) + " b" + strconv.Itoa(iterations) + "-\n")
	if got := collapseRepeats(string(data)); got != want.String() {
		t.Errorf("trace:\n%s", got)
	}
	s := p.sessionByID(id)
	// The iteration running when the latest pruning came, and the ones
	// kept before it.
	kept := state.KeptIterations + 1
	if n := len(s.Runs); n != 2*kept+2 {
		t.Errorf("%d runs kept after %d iterations", n, iterations)
	}
	if l := s.Runs["0"]; l == nil || l.PrunedThrough != iterations-kept {
		t.Errorf("loop run: %+v", l)
	}
	if len(s.IterationSummaries) != kept+1 || !strings.Contains(s.IterationSummaries[0], "not kept") {
		t.Errorf("iteration summaries: %d\n%s", len(s.IterationSummaries), strings.Join(s.IterationSummaries, "\n"))
	}
	st, _ := os.Stat(state.NewManager(p.dir).SessionPath(id))
	t.Logf("session file %d bytes after %d iterations", st.Size(), iterations)
}
