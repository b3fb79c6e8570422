package cli

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// BenchmarkHelp is the time of `vibeteam --help`, the whole process.
func BenchmarkHelp(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if out, err := exec.Command(vibeteam, "--help").CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
	}
}

// BenchmarkValidate500Tasks is the time of `vibeteam validate` on a
// generated workflow of 50 stages × 10 tasks, the whole process.
func BenchmarkValidate500Tasks(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	sb.WriteString("id: big\ngoal: a big one\nstages:\n")
	for s := 0; s < 50; s++ {
		fmt.Fprintf(&sb, "  - id: stage-%d\n    tasks:\n", s)
		for t := 0; t < 10; t++ {
			fmt.Fprintf(&sb, "      - id: task-%d-%d\n        adapter: shell\n        executionMode: headless\n        prompt: echo {{.goal}} %d\n        env: { N: \"%d\" }\n        extraArgs: [\"-e\"]\n", s, t, t, t)
		}
	}
	path := dir + "/big.yaml"
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if out, err := exec.Command(vibeteam, "--base-dir", dir, "validate", path).CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
	}
}

// BenchmarkReaction measures, through the real binary, the time from the
// last byte of a prompt written by the agent to the auto-policy's key read
// by the agent (target: p50 ≤ quiet period + 30 ms; quiet is 150 ms).
func BenchmarkReaction(b *testing.B) {
	const prompts = 20
	var all []float64
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		write := func(rel, content string) {
			if err := os.MkdirAll(dir+"/"+rel[:strings.LastIndexByte(rel, '/')+1], 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(dir+"/"+rel, []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		write(".vibeteam/adapters/prompter.yaml", fmt.Sprintf(`name: prompter
command: %s
modes:
  interactive: { args: [], prompt: { position: arg } }
quietPeriod: 150ms
states:
  - { name: interaction_confirm, pattern: 'Proceed #\d+\? \(y/n\)' }
autoPolicy:
  handlers:
    - { when: '\(y/n\)', use: confirmYes }
`, fakeAgent))
		write("wf.yaml", fmt.Sprintf("id: react\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: prompter, prompt: \"prompts=%d:%s/times.txt\" }\n", prompts, dir))
		cmd := exec.Command(vibeteam, "--base-dir", dir, "run", "wf.yaml", "--auto-approve")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		data, err := os.ReadFile(dir + "/times.txt")
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range strings.Fields(string(data)) {
			us, _ := strconv.ParseFloat(f, 64)
			all = append(all, us/1000)
		}
	}
	sort.Float64s(all)
	b.ReportMetric(all[len(all)/2], "p50-ms")
	b.ReportMetric(all[len(all)*9/10], "p90-ms")
	b.ReportMetric(all[len(all)-1], "max-ms")
}

// BenchmarkPeakRSS runs an interactive task that writes 100 MB and then
// 1 GB through the whole product (PTY, screen, logs, events) and reports
// vibeteam's peak RSS for each (target ≤ 64 MB, flat in the output size).
func BenchmarkPeakRSS(b *testing.B) {
	for i := 0; i < b.N; i++ {
		for _, size := range []int64{100 << 20, 1 << 30} {
			dir := b.TempDir()
			if err := os.MkdirAll(dir+"/.vibeteam/adapters", 0o755); err != nil {
				b.Fatal(err)
			}
			adapter := fmt.Sprintf(`name: flood
command: %s
modes:
  interactive: { args: [], prompt: { position: arg } }
states:
  - { name: working, pattern: 'INFO' }
  - { name: interaction_idle, pattern: '(?m)^> $' }
`, fakeAgent)
			if err := os.WriteFile(dir+"/.vibeteam/adapters/flood.yaml", []byte(adapter), 0o644); err != nil {
				b.Fatal(err)
			}
			wf := fmt.Sprintf("id: flood\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: flood, prompt: \"flood=%d\" }\n", size)
			if err := os.WriteFile(dir+"/wf.yaml", []byte(wf), 0o644); err != nil {
				b.Fatal(err)
			}
			cmd := exec.Command(vibeteam, "--base-dir", dir, "run", "wf.yaml")
			cmd.Dir = dir
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v\n%s", err, out)
			}
			elapsed := time.Since(start)
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			name := fmt.Sprintf("RSS-MB-%dMB", size>>20)
			b.ReportMetric(float64(ru.Maxrss)/1024, name)
			b.ReportMetric(float64(size>>20)/elapsed.Seconds(), fmt.Sprintf("MB/s-%dMB", size>>20))
			os.RemoveAll(dir + "/.vibeteam/logs")
		}
	}
}

// runWorkflow times one `vibeteam run` of a generated workflow, whole
// process, in a fresh directory.
func runWorkflow(b *testing.B, yaml string, env ...string) time.Duration {
	b.Helper()
	dir := b.TempDir()
	if err := os.WriteFile(dir+"/wf.yaml", []byte(yaml), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(vibeteam, "--base-dir", dir, "run", dir+"/wf.yaml")
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	return time.Since(start)
}

// BenchmarkScriptGrimoireTelemetry is the 200-step script grimoire with
// OpenTelemetry on and its endpoint unreachable, against the same run with
// it off, in pairs (the first of a pair alternating): the rise is what
// telemetry adds to the run, whole process, exit flush included (target:
// at most 5%).
func BenchmarkScriptGrimoireTelemetry(b *testing.B) {
	var g strings.Builder
	g.WriteString("name: long\nsteps:\n")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&g, "  - name: s%d\n    type: script\n    command: echo %d\n", i, i)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	dead := "OTEL_EXPORTER_OTLP_ENDPOINT=http://" + l.Addr().String()
	l.Close()
	const pairs = 7
	var on, off []time.Duration
	var ratios []float64
	for i := 0; i < b.N; i++ {
		for k := 0; k < pairs; k++ {
			var o, f time.Duration
			if k%2 == 0 {
				o, f = runWorkflow(b, g.String(), dead), runWorkflow(b, g.String())
			} else {
				f, o = runWorkflow(b, g.String()), runWorkflow(b, g.String(), dead)
			}
			on, off, ratios = append(on, o), append(off, f), append(ratios, float64(o)/float64(f))
		}
	}
	slices.Sort(ratios)
	b.ReportMetric(float64(median(on).Microseconds())/1000, "otel-ms/run")
	b.ReportMetric(float64(median(off).Microseconds())/1000, "off-ms/run")
	b.ReportMetric((ratios[len(ratios)/2]-1)*100, "rise-%")
}

// BenchmarkWideStage is one stage of N `true` tasks: the checkpoint cost
// must grow with the work, not with its square (ms per task should stay
// about flat from 100 to 1000).
func BenchmarkWideStage(b *testing.B) {
	for _, n := range []int{100, 300, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			var sb strings.Builder
			sb.WriteString("id: wide\nstages:\n  - id: s\n    tasks:\n")
			for i := 0; i < n; i++ {
				fmt.Fprintf(&sb, "      - { id: t%d, adapter: shell, executionMode: headless, prompt: \"true\" }\n", i)
			}
			var total time.Duration
			for i := 0; i < b.N; i++ {
				total += runWorkflow(b, sb.String())
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N)/float64(n), "ms/task")
		})
	}
}

// BenchmarkLongWorkflow is 200 one-task stages of `echo`, against `sh`
// running the same 200 commands (each through sh -c, as the shell adapter
// does): the ratio is the engine's overhead per step (target: ≤ 1.5× sh;
// a bare Go spawn and wait of each is about 1.2×).
func BenchmarkLongWorkflow(b *testing.B) {
	var wf strings.Builder
	wf.WriteString("id: long\nstages:\n")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&wf, "  - id: s%d\n    tasks:\n      - { id: t%d, adapter: shell, executionMode: headless, prompt: \"echo %d\" }\n", i, i, i)
	}
	versusSh(b, wf.String(), 200)
}

// BenchmarkScriptGrimoire is a grimoire of 200 script steps of `echo`,
// against sh running the same 200 commands, each through sh -c (target:
// ≤ 1.4× sh).
func BenchmarkScriptGrimoire(b *testing.B) {
	var g strings.Builder
	g.WriteString("name: long\nsteps:\n")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&g, "  - name: s%d\n    type: script\n    command: echo %d\n", i, i)
	}
	versusSh(b, g.String(), 200)
}

// versusSh times `vibeteam run` of a definition whose n steps each echo
// their index, against sh running `sh -c 'echo i'` for the same n, in
// pairs run back to back (7 per b.N, which of the two goes first
// alternating), and reports the medians of both and the median of the
// pairs' ratios. Pairs, because a VM's neighbours make the machine half as
// slow again for seconds at a time: the two runs of a pair see the same
// machine, and a median of medians taken at different moments does not.
func versusSh(b *testing.B, def string, n int) {
	var script strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&script, "sh -c 'echo %d'\n", i)
	}
	runSh := func() time.Duration {
		start := time.Now()
		if out, err := exec.Command("sh", "-c", script.String()).CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		return time.Since(start)
	}
	const pairs = 7
	var ours, sh []time.Duration
	var ratios []float64
	for i := 0; i < b.N; i++ {
		for k := 0; k < pairs; k++ {
			var o, s time.Duration
			if k%2 == 0 {
				o = runWorkflow(b, def)
				s = runSh()
			} else {
				s = runSh()
				o = runWorkflow(b, def)
			}
			ours, sh, ratios = append(ours, o), append(sh, s), append(ratios, float64(o)/float64(s))
		}
	}
	slices.Sort(ratios)
	b.ReportMetric(float64(median(ours).Microseconds())/1000, "ms/run")
	b.ReportMetric(float64(median(sh).Microseconds())/1000, "sh-ms/run")
	b.ReportMetric(ratios[len(ratios)/2], "x-sh")
}

func median(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	if len(ds)%2 == 1 {
		return ds[len(ds)/2]
	}
	return (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
}

// BenchmarkResume10000Runs is `vibeteam resume` of a grimoire session that
// holds 10,000 finished step runs and blocked at its last step (target:
// under 1 s, the whole process).
func BenchmarkResume10000Runs(b *testing.B) {
	const n = 10000
	var g strings.Builder
	g.WriteString("name: big\nsteps:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&g, "  - {name: s%d, type: script, command: echo %d}\n", i, i)
	}
	def, err := workflow.Parse([]byte(g.String()), "big.yaml", workflow.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		now := time.Now()
		s := &state.Session{ID: "0000abcd", Workflow: "big", Status: state.StatusBlocked, WorkflowDefinition: def,
			BaseDir: dir, StartTime: now, Runs: map[string]*state.StepRun{}, Tasks: map[string]*state.TaskRecord{},
			TaskStatus: map[string]state.TaskStatus{}, History: []state.HistoryEntry{}, Cursor: strconv.Itoa(n - 1)}
		for k := 0; k < n-1; k++ {
			s.Runs[strconv.Itoa(k)] = &state.StepRun{Name: "s" + strconv.Itoa(k), Type: "script", Status: "done",
				Output: strconv.Itoa(k) + "\n", StartedAt: &now, EndedAt: &now, DurationMS: 1, Attempts: 1}
		}
		if err := state.NewManager(dir).Save(s); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if out, err := exec.Command(vibeteam, "--base-dir", dir, "resume", s.ID).CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/resume")
}
