package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/state"
)

// BenchmarkSandboxedRunSteps runs, through the real binary, a grimoire of
// 200 script steps (true) unsandboxed and in the sandbox a run gives them
// by default (network allow: the egress proxy, and the binary as its own
// bridge inside each step), and reports each one's p50 step time as the
// session records it, what the sandbox adds per step, and the ratio
// (issue 27: at most 10 ms added at p50). core/runner's
// BenchmarkSandboxedScriptSteps is bwrap alone.
func BenchmarkSandboxedRunSteps(b *testing.B) {
	if _, err := sandbox.Find(); err != nil {
		b.Skip("bubblewrap is not installed")
	}
	const steps = 200
	dir := b.TempDir()
	var g strings.Builder
	g.WriteString("name: many\nsteps:\n")
	for i := range steps {
		fmt.Fprintf(&g, "  - { name: s%d, type: script, command: \"true\" }\n", i)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".vibeteam", "grimoires"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".vibeteam", "grimoires", "many.yaml"), []byte(g.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	run := func(flag string) float64 {
		cmd := exec.Command(vibeteam, "--base-dir", dir, "run", "many", flag)
		cmd.Env = append(withoutEnv(os.Environ(), "VIBETEAM_SANDBOX"), "NO_COLOR=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("run %s: %v\n%s", flag, err, out)
		}
		list, err := state.NewManager(dir).List()
		if err != nil {
			b.Fatal(err)
		}
		var last *state.Session
		for _, s := range list {
			if last == nil || s.StartTime.After(last.StartTime) {
				last = s
			}
		}
		var d []time.Duration
		for _, r := range last.Runs {
			if r.StartedAt != nil && r.EndedAt != nil {
				d = append(d, r.EndedAt.Sub(*r.StartedAt))
			}
		}
		if len(d) != steps {
			b.Fatalf("%d step runs recorded, want %d", len(d), steps)
		}
		slices.Sort(d)
		return float64(d[len(d)/2]) / float64(time.Millisecond)
	}
	for b.Loop() {
		plain, boxed := run("--no-sandbox"), run("--sandbox")
		b.ReportMetric(plain, "ms/step-plain-p50")
		b.ReportMetric(boxed, "ms/step-sandboxed-p50")
		b.ReportMetric(boxed-plain, "ms/step-added-p50")
		b.ReportMetric(boxed/plain, "ratio")
		// The machine's load meanwhile (Linux's): a sandboxed start is
		// several processes and namespaces, each waiting for a processor.
		if load, err := os.ReadFile("/proc/loadavg"); err == nil {
			if f := strings.Fields(string(load)); len(f) > 0 {
				if l, err := strconv.ParseFloat(f[0], 64); err == nil {
					b.ReportMetric(l, "load1")
				}
			}
		}
	}
}
