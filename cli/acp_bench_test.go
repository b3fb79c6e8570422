package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// acpBenchProject is a directory with the adapter "acpfake" running
// testdata/fakeacp with script, its times written to times.log, and the
// workflow wf.
func acpBenchProject(b *testing.B, script, wf string) string {
	b.Helper()
	dir := b.TempDir()
	files := map[string]string{
		"script.json": script,
		"wf.yaml":     wf,
		".vibeteam/adapters/acpfake.yaml": "command: " + fakeACP + "\nmodes:\n  acp:\n    env: { FAKEACP_SCRIPT: " + filepath.Join(dir, "script.json") +
			", FAKEACP_TIMES: " + filepath.Join(dir, "times.log") + ", FAKEACP_STATE: " + dir + " }\n",
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// runACPBench runs `vibeteam run wf.yaml` in dir (with args) and returns
// the finished command (its rusage).
func runACPBench(b *testing.B, dir string, args ...string) *exec.Cmd {
	b.Helper()
	cmd := exec.Command(vibeteam, append([]string{"--base-dir", dir, "run", "wf.yaml"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	return cmd
}

// acpTimes reads the fake agent's times.log: the values of the lines of
// kind what, in order.
func acpTimes(b *testing.B, dir, what string) []int64 {
	b.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "times.log"))
	if err != nil {
		b.Fatal(err)
	}
	var out []int64
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == what {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatalf("times.log: %q", line)
			}
			out = append(out, n)
		}
	}
	return out
}

// acpEventTimes are the times of the session's events of kind (and, when
// status is not "", that status), in order, from the event log of the
// one session in dir.
func acpEventTimes(b *testing.B, dir, kind, status string) []time.Time {
	b.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, ".vibeteam", "logs", "*.jsonl"))
	if len(logs) != 1 {
		b.Fatalf("want one event log, found %v", logs)
	}
	f, err := os.Open(logs[0])
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var out []time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			Event  string    `json:"event"`
			Status string    `json:"status"`
			Time   time.Time `json:"time"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Event == kind && (status == "" || e.Status == status) {
			out = append(out, e.Time)
		}
	}
	return out
}

// reportMS reports the p50 and p99 of ds in ms.
func reportMS(b *testing.B, ds []time.Duration, prefix string) {
	if len(ds) == 0 {
		b.Fatal("no samples")
	}
	slices.Sort(ds)
	at := func(q float64) float64 {
		return float64(ds[min(len(ds)-1, int(q*float64(len(ds))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), prefix+"p50-ms")
	b.ReportMetric(at(0.99), prefix+"p99-ms")
}

// BenchmarkACPPermissionAnswer: a session/request_permission, under
// --auto-approve, to the policy's answer (by option kind) read back by the
// agent: the fake ACP agent's round trip through the whole of vibeteam
// (target p50 ≤ 2 ms).
func BenchmarkACPPermissionAnswer(b *testing.B) {
	const asks = 200
	steps := make([]string, asks)
	for i := range steps {
		steps[i] = fmt.Sprintf(`{"ask": "t%d", "title": "touch x", "kind": "execute", "input": {"command": "touch x"}, "options": [["no", "No", "reject_once"], ["ok", "Yes", "allow_once"]]}`, i)
	}
	script := `{"turns": [{"steps": [` + strings.Join(steps, ",") + `]}]}`
	var lat []time.Duration
	for i := 0; i < b.N; i++ {
		dir := acpBenchProject(b, script, "id: p\nstages:\n  - id: s\n    tasks:\n      - { id: t, adapter: acpfake, executionMode: acp, prompt: go }\n")
		runACPBench(b, dir, "--auto-approve")
		got := acpTimes(b, dir, "perm_ns")
		if len(got) != asks {
			b.Fatalf("%d permission answers, want %d", len(got), asks)
		}
		for _, ns := range got {
			lat = append(lat, time.Duration(ns))
		}
	}
	reportMS(b, lat, "")
}

// BenchmarkACPDoneLatency: the fake agent writes session/prompt's result
// (end_turn) to the task's DONE event in the event log, for 20 tasks in
// sequence (target p50 ≤ 2 ms).
func BenchmarkACPDoneLatency(b *testing.B) {
	const tasks = 20
	var wf strings.Builder
	wf.WriteString("id: d\nstages:\n")
	for i := 0; i < tasks; i++ {
		fmt.Fprintf(&wf, "  - id: s%d\n    tasks:\n      - { id: t%d, adapter: acpfake, executionMode: acp, prompt: go }\n", i, i)
	}
	var lat, closed []time.Duration
	for i := 0; i < b.N; i++ {
		dir := acpBenchProject(b, `{"turns": [{"steps": [{"say": "done"}]}]}`, wf.String())
		runACPBench(b, dir)
		results, done := acpTimes(b, dir, "result_ns"), acpEventTimes(b, dir, "task_status", "DONE")
		stdin := acpTimes(b, dir, "stdin_closed_ns")
		if len(results) != tasks || len(done) != tasks || len(stdin) != tasks {
			b.Fatalf("%d results, %d DONE events, %d stdin closed; want %d", len(results), len(done), len(stdin), tasks)
		}
		for k := range results {
			lat = append(lat, done[k].Sub(time.Unix(0, results[k])))
			closed = append(closed, time.Duration(stdin[k]-results[k]))
		}
	}
	reportMS(b, lat, "")
	// When the agent's stdin was closed: DONE no longer waits for that
	// and the agent's exit (the turn decides), so this is mostly later.
	reportMS(b, closed, "stdin-closed-")
}

// BenchmarkACPFlood: an agent that sends 100,000 session/update chunks as
// fast as it can; every one must reach the event log as an agent.message
// (no loss), at ≥ 10,000 a second, with vibeteam's peak RSS under 64 MB.
func BenchmarkACPFlood(b *testing.B) {
	const chunks = 100000
	for i := 0; i < b.N; i++ {
		dir := acpBenchProject(b, fmt.Sprintf(`{"turns": [{"steps": [{"flood": %d}]}]}`, chunks),
			"id: f\nstages:\n  - id: s\n    tasks:\n      - { id: t, adapter: acpfake, executionMode: acp, prompt: go }\n")
		cmd := runACPBench(b, dir)
		msgs := acpEventTimes(b, dir, "agent.message", "")
		if len(msgs) != chunks {
			b.Fatalf("%d agent.message events, want %d: chunks were lost", len(msgs), chunks)
		}
		span := msgs[len(msgs)-1].Sub(msgs[0])
		b.ReportMetric(float64(chunks)/span.Seconds(), "chunks/s")
		b.ReportMetric(float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)/1024, "peak-RSS-MB")
	}
}
