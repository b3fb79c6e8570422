package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// BenchmarkReport100 is `vibeteam report` (the whole process) on the
// backlog run of BenchmarkBacklog100: 100 beads, each an agent step and a
// gated merge. Targets: under 1 s (ms/report) and a file under 2 MB (KB);
// cpu-ms/report is its processor time (the wall time on a loaded machine
// is mostly waiting for a core).
func BenchmarkReport100(b *testing.B) {
	root := b.TempDir()
	b.Setenv("VIBETEAM_BENCH_DIR", root)
	backlogOnce(b, 100, 8, true)
	dirs, _ := filepath.Glob(filepath.Join(root, "vibeteam-bench-*", ".vibeteam"))
	if len(dirs) != 1 {
		b.Fatalf("want the run's one project in %s, have %v", root, dirs)
	}
	dir := filepath.Dir(dirs[0])
	var id string
	list, _ := state.NewManager(dir).List()
	for _, s := range list {
		if s.Backlog != nil {
			id = s.ID
		}
	}
	out := filepath.Join(b.TempDir(), "report.html")
	var spent, cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		cmd := exec.Command(vibeteam, "--base-dir", dir, "report", id, "--out", out)
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("report: %v\n%s", err, msg)
		}
		spent += time.Since(start)
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	b.StopTimer()
	data, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	if n := strings.Count(string(data), `<g class="row"`); n != 100 {
		b.Fatalf("%d rows, want 100", n)
	}
	b.ReportMetric(float64(spent.Milliseconds())/float64(b.N), "ms/report")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/report")
	b.ReportMetric(float64(len(data))/1024, "KB")
}
