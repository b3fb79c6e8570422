package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/sandbox"
)

// BenchmarkSandboxedScriptSteps starts 200 script steps (sh -c true, as a
// script step runs, watched here) unsandboxed, 200 in the sandbox a
// session gives them as a run starts them (a Warmer: each in a sandbox
// made while the one before ran), and 200 cold (each making its own, as
// the first step of a shape does), interleaved, and reports each one's
// p50 and what the sandbox adds per step (issue 27: at most 10 ms at p50).
func BenchmarkSandboxedScriptSteps(b *testing.B) {
	bwrap, err := sandbox.Find()
	if err != nil {
		b.Skip("bubblewrap is not installed")
	}
	dir := b.TempDir()
	policy := &sandbox.Policy{Bwrap: bwrap, BaseDir: dir, WorkDir: dir, Home: b.TempDir(), StateDir: filepath.Join(dir, ".vibeteam", "sandbox", "bench"), Config: sandbox.Config{Network: sandbox.NetworkNone}}
	plan, err := policy.Plan(dir, nil, sandbox.Config{})
	if err != nil {
		b.Fatal(err)
	}
	step := func(p *sandbox.Plan, w *Warmer) time.Duration {
		start := time.Now()
		proc, err := StartHeadless(Spec{Command: "/bin/sh", Args: []string{"-c", "true"}, Dir: dir, GroupOnly: true, NoInput: true, MergeOutput: true, Sandbox: p, Warm: w}, nil)
		if err != nil {
			b.Fatal(err)
		}
		<-proc.Done()
		if !proc.Result().Success() {
			b.Fatalf("step failed: %+v", proc.Result())
		}
		return time.Since(start)
	}
	const steps = 200
	for b.Loop() {
		warm := NewWarmer()
		var plain, cold, boxed []time.Duration
		for range steps {
			plain = append(plain, step(nil, nil))
			boxed = append(boxed, step(plan, warm))
			cold = append(cold, step(plan, nil))
		}
		warm.Close()
		p50 := func(d []time.Duration) float64 {
			slices.Sort(d)
			return float64(d[len(d)/2]) / float64(time.Millisecond)
		}
		pp, bp, cp := p50(plain), p50(boxed), p50(cold)
		b.ReportMetric(pp, "ms/step-plain-p50")
		b.ReportMetric(bp, "ms/step-sandboxed-p50")
		b.ReportMetric(bp-pp, "ms/step-added-p50")
		b.ReportMetric(bp/pp, "ratio")
		b.ReportMetric(cp-pp, "ms/step-added-cold-p50")
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
