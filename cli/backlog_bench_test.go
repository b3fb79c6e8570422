package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// BenchmarkBacklog100 is `run --ready --jobs 8` over 100 independent
// beads, each an agent step of a fast fake agent (200 ms) and a merge.
// The ideal is the agents' time spread over 8 plus the merges one after
// the other (they share one queue), a merge's own time being what it
// takes when nothing else runs (the median of 7 beads run one at a time:
// in the big run a merge step's time holds its waits for the queue, the
// repository's lock and the CPU); x-ideal is the wall time over it
// (target ≤ 1.3). merges/s is merges landed per second of the run.
// bd-calls/bead is how many times the big run ran bd (the fake's log), per
// bead: each real bd call costs 0.1–0.3 s (target ≤ 2).
//
// The repositories are made in memory (/dev/shm) where there is one, or
// in VIBETEAM_BENCH_DIR when it is set: on an ext4 without a journal (this
// project's CI machines) every file made skips past the inodes deleted in
// the minute before, so the same run takes from 1× to 1.7× as long
// depending on what the disk did just before it (a test suite, the
// previous run's clean-up); that measures the disk, not vibeteam.
func BenchmarkBacklog100(b *testing.B) {
	for _, gate := range []bool{false, true} {
		name := "plain"
		if gate {
			name = "gate"
		}
		b.Run(name, func(b *testing.B) {
			var wall, ideal, perMerge time.Duration
			var merges, calls float64
			for i := 0; i < b.N; i++ {
				_, _, _, quiet, _ := backlogOnce(b, 7, 1, gate)
				merge := quiet[len(quiet)/2]
				w, agents, m, _, bdCalls := backlogOnce(b, 100, 8, gate)
				calls += float64(bdCalls) / 100
				wall += w
				ideal += agents/8 + time.Duration(m)*merge
				perMerge += merge
				merges += m
			}
			b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "ms/run")
			b.ReportMetric(float64(ideal.Milliseconds())/float64(b.N), "ideal-ms")
			b.ReportMetric(float64(perMerge.Milliseconds())/float64(b.N), "ms/merge")
			b.ReportMetric(float64(wall)/float64(ideal), "x-ideal")
			b.ReportMetric(merges/wall.Seconds(), "merges/s")
			b.ReportMetric(calls/float64(b.N), "bd-calls/bead")
		})
	}
}

// benchDir is a new directory for one run, removed after the benchmark,
// where the runs are measured (see BenchmarkBacklog100).
func benchDir(b *testing.B) string {
	b.Helper()
	root := os.Getenv("VIBETEAM_BENCH_DIR")
	if root == "" {
		if info, err := os.Stat("/dev/shm"); err == nil && info.IsDir() {
			root = "/dev/shm"
		}
	}
	dir, err := os.MkdirTemp(root, "vibeteam-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// backlogOnce runs n beads with jobs at once: the wall time, the time the
// agent steps took in all, the merges, the times of the merge steps,
// shortest first, and how many times it ran bd.
func backlogOnce(b *testing.B, n, jobs int, gate bool) (wall, agents time.Duration, merges float64, mergeTimes []time.Duration, bdCalls int) {
	b.Helper()
	dir := benchDir(b)
	write := func(rel, content string) {
		full := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write(".vibeteam/adapters/fake.yaml", fmt.Sprintf("name: fake\ncommand: %s\nmodes:\n  headless:\n    args: [--mode=headless]\n    prompt: { position: arg }\n", fakeAgent))
	gateLine := ""
	if gate {
		gateLine = "    gate: true\n"
		write(".vibeteam/config.yaml", "grimoires:\n  default: ship\nmerge:\n  gate: test -f README\n")
	} else {
		write(".vibeteam/config.yaml", "grimoires:\n  default: ship\n")
	}
	// The agent ends as agents are asked to: with its result block.
	result := filepath.Join(benchDir(b), "result.md")
	if err := os.WriteFile(result, []byte("Done.\n```json\n{\"success\": true, \"summary\": \"wrote the file\"}\n```\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	write(".vibeteam/grimoires/ship.yaml", "name: ship\nsteps:\n  - name: work\n    type: agent\n    adapter: fake\n    spell: |\n      sleep=200ms write={{.bead.id}}.txt:done cat="+result+"\n  - name: merge\n    type: merge\n    require_review: false\n"+gateLine)
	write("README", "hello\n")
	db := map[string]any{}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("bd-%d", i)
		db[id] = map[string]any{"id": id, "title": "bead " + id, "status": "open", "issue_type": "task", "priority": 2}
	}
	data, _ := json.Marshal(db)
	dbPath := filepath.Join(benchDir(b), "beads.json")
	if err := os.WriteFile(dbPath, data, 0o644); err != nil {
		b.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "root"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	cmd := exec.Command(vibeteam, "--base-dir", dir, "run", "--ready", "--jobs", fmt.Sprint(jobs), "--headless")
	cmd.Dir = dir
	bdLog := filepath.Join(benchDir(b), "bd.log")
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "PATH="+fakeBDDir+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKEBD_DB="+dbPath, "FAKEBD_LOG="+bdLog)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall = time.Since(start)
	if err != nil {
		b.Fatalf("run --ready: %v\n%s", err, out)
	}
	logged, _ := os.ReadFile(bdLog)
	bdCalls = strings.Count(string(logged), "\n")
	mgr := state.NewManager(dir)
	list, err := mgr.List()
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range list {
		for _, r := range s.Runs {
			d := time.Duration(r.DurationMS) * time.Millisecond
			switch r.Type {
			case "agent":
				if r.Status != "done" {
					b.Fatalf("session %s: the agent step is %s (%s)", s.ID, r.Status, r.Reason)
				}
				agents += d
			case "merge":
				mergeTimes = append(mergeTimes, d)
				if r.Status == "done" {
					merges++
				}
			}
		}
	}
	if int(merges) != n {
		b.Fatalf("%v merges of %d beads\n%s", merges, n, strings.TrimSpace(string(out)))
	}
	slices.Sort(mergeTimes)
	return wall, agents, merges, mergeTimes, bdCalls
}
