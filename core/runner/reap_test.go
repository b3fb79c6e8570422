package runner

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// marker is a sleep duration no other process on the machine uses, so the
// processes of one test are found by their command line alone, whatever
// group, session or environment they ended up in. A failed test leaves
// none behind.
func marker(t *testing.T) string {
	m := fmt.Sprintf("300.%09d", rand.IntN(1e9))
	t.Cleanup(func() { killMarked(t, m) })
	return m
}

// survivors lists the live processes whose command line holds m.
func survivors(t *testing.T, m string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(m)) {
			continue
		}
		if st, ok := readStat(pid); ok && st.state != 'Z' && st.state != 'X' {
			out = append(out, fmt.Sprintf("%d %q state %c pgrp %d", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}), st.state, st.pgrp))
		}
	}
	return out
}

// waitDone fails the test if p does not finish in a time no healthy run
// comes near.
func waitDone(t *testing.T, p Process) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(60 * time.Second):
		p.Kill()
		t.Fatal("process did not finish")
	}
}

// escapeScript starts a process that leaves the task's session and waits
// until it runs, so that the leader exits with it surely alive.
func escapeScript(dir, m string) string {
	f := filepath.Join(dir, "escaped")
	return fmt.Sprintf(`setsid sh -c 'echo > %s; exec sleep %s' & while [ ! -e %s ]; do sleep 0.01; done; echo started`, f, m, f)
}

func TestHeadlessExitStopsEscapedProcesses(t *testing.T) {
	t.Parallel()
	m := marker(t)
	var mu sync.Mutex
	var out strings.Builder
	p, err := StartHeadless(Spec{Command: "sh", Args: []string{"-c", escapeScript(t.TempDir(), m)}, Tag: "test/" + m},
		func(c Chunk) { mu.Lock(); out.Write(c.Clean); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	waitDone(t, p)
	if res := p.Result(); !res.Success() {
		t.Fatalf("sh ended %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(out.String(), "started") {
		t.Fatalf("output %q", out.String())
	}
	if s := survivors(t, m); len(s) > 0 {
		t.Errorf("survived the task: %v", s)
	}
}

func TestTerminalExitStopsEscapedProcesses(t *testing.T) {
	t.Parallel()
	m := marker(t)
	term, err := StartTerminal(Spec{Command: "sh", Args: []string{"-c", escapeScript(t.TempDir(), m)}, Tag: "test/" + m}, TerminalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Kill()
	waitDone(t, term)
	if res := term.Result(); !res.Success() {
		t.Fatalf("sh ended %+v", res)
	}
	if !strings.Contains(term.Screen(), "started") {
		t.Fatalf("screen %q", term.Screen())
	}
	if s := survivors(t, m); len(s) > 0 {
		t.Errorf("survived the task: %v", s)
	}
}

// An escaped process without the tag is out of reach, and holds the output
// open: Done comes all the same, a few seconds later.
func TestDoneWhenAnUnfoundProcessHoldsTheOutput(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"headless", "pty"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			m := marker(t)
			spec := Spec{Command: "sh", Args: []string{"-c", escapeScript(t.TempDir(), m)}}
			var p Process
			var err error
			if mode == "headless" {
				p, err = StartHeadless(spec, nil)
			} else {
				p, err = StartTerminal(spec, TerminalOptions{})
			}
			if err != nil {
				t.Fatal(err)
			}
			waitDone(t, p)
			if len(survivors(t, m)) == 0 {
				t.Error("the untagged escaped process is gone: nothing held the output")
			}
		})
	}
}

// killMarked SIGKILLs the processes whose command line holds m.
func killMarked(t *testing.T, m string) {
	for _, s := range survivors(t, m) {
		var pid int
		if _, err := fmt.Sscan(s, &pid); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// stubbornScript starts a process outside the session and one inside the
// group, both ignoring SIGTERM (an ignored signal stays ignored across
// exec), and says "ready" once both run.
func stubbornScript(dir, m string) string {
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	return fmt.Sprintf(`setsid sh -c 'trap "" TERM; echo > %[1]s; exec sleep %[3]s' &
sh -c 'trap "" TERM; echo > %[2]s; exec sleep %[3]s' &
while [ ! -e %[1]s ] || [ ! -e %[2]s ]; do sleep 0.01; done
echo ready
wait`, a, b, m)
}

func TestStopEndsEscapedAndStubbornProcesses(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"headless", "pty"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			m := marker(t)
			spec := Spec{Command: "sh", Args: []string{"-c", stubbornScript(t.TempDir(), m)}, Tag: "test/" + m}
			ready := make(chan struct{})
			var once sync.Once
			onOutput := func(c Chunk) {
				if bytes.Contains(c.Clean, []byte("ready")) {
					once.Do(func() { close(ready) })
				}
			}
			var p Process
			var err error
			if mode == "headless" {
				p, err = StartHeadless(spec, onOutput)
			} else {
				p, err = StartTerminal(spec, TerminalOptions{OnOutput: onOutput})
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Kill()
			select {
			case <-ready:
			case <-p.Done():
				t.Fatalf("ended before it was ready: %+v", p.Result())
			case <-time.After(60 * time.Second):
				t.Fatal("never ready")
			}
			p.Stop(200 * time.Millisecond)
			if s := survivors(t, m); len(s) > 0 {
				t.Errorf("survived Stop: %v", s)
			}
			if res := p.Result(); res.Signal == "" {
				t.Errorf("result %+v, want killed by a signal", res)
			}
		})
	}
}

// A group whose members outlast the leader, one ignoring SIGTERM and one
// taking its time to exit on it: Stop returns only once all are gone, with
// no tag to help.
func TestStopWaitsForTheWholeGroup(t *testing.T) {
	t.Parallel()
	m := marker(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	script := fmt.Sprintf(`sh -c 'trap "" TERM; echo > %[1]s; exec sleep %[3]s' &
sh -c 'trap "sleep 0.3; exit 1" TERM; echo > %[2]s; sleep %[3]s & wait' &
while [ ! -e %[1]s ] || [ ! -e %[2]s ]; do sleep 0.01; done
echo ready
wait`, a, b, m)
	for i := 0; i < 3; i++ {
		ready := make(chan struct{})
		var once sync.Once
		p, err := StartHeadless(Spec{Command: "sh", Args: []string{"-c", script}}, func(c Chunk) {
			if bytes.Contains(c.Clean, []byte("ready")) {
				once.Do(func() { close(ready) })
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-ready:
		case <-time.After(60 * time.Second):
			p.Kill()
			t.Fatal("never ready")
		}
		p.Stop(time.Second)
		if pids, _ := GroupMembers(p.Pid()); len(pids) > 0 {
			t.Errorf("group members alive after Stop: %v", pids)
		}
		if s := survivors(t, m); len(s) > 0 {
			t.Errorf("survived Stop: %v", s)
		}
		_ = os.Remove(a)
		_ = os.Remove(b)
	}
}

func TestKillEndsAStopInProgress(t *testing.T) {
	t.Parallel()
	m := marker(t)
	ready := make(chan struct{})
	var once sync.Once
	term, err := StartTerminal(Spec{Command: "sh", Args: []string{"-c", stubbornScript(t.TempDir(), m)}, Tag: "test/" + m},
		TerminalOptions{OnOutput: func(c Chunk) {
			if bytes.Contains(c.Clean, []byte("ready")) {
				once.Do(func() { close(ready) })
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		term.Kill()
		t.Fatal("never ready")
	}
	stopped := make(chan struct{})
	go func() { term.Stop(time.Hour); close(stopped) }()
	term.Kill()
	select {
	case <-stopped:
	case <-time.After(60 * time.Second):
		t.Fatal("Stop did not return after Kill")
	}
	if s := survivors(t, m); len(s) > 0 {
		t.Errorf("survived Kill: %v", s)
	}
}

// orphanRun starts script the way a vibeteam that then died would have: own
// group, tagged, not watched by a reaper.
func orphanRun(t *testing.T, script, tag string) (*exec.Cmd, uint64) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = mergedEnv(withTag(nil, tag))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start, ok := ProcStart(cmd.Process.Pid)
	if !ok {
		t.Skip("no /proc")
	}
	return cmd, start
}

func TestStopOrphanStopsGroupAndTaggedProcesses(t *testing.T) {
	t.Parallel()
	m := marker(t)
	tag := "orphan/" + m
	dir := t.TempDir()
	cmd, start := orphanRun(t, escapeScript(dir, m)+"; exec sleep "+m, tag)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	for f := filepath.Join(dir, "escaped"); ; {
		if _, err := os.Stat(f); err == nil {
			break
		}
		select {
		case <-exited:
			t.Fatal("leader ended early")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if StopOrphan(cmd.Process.Pid, start+1, time.Second) {
		t.Error("stopped a process whose start time differs")
	}
	if !StopOrphan(cmd.Process.Pid, start, time.Second, tag) {
		t.Error("StopOrphan reported nothing stopped")
	}
	if s := survivors(t, m); len(s) > 0 {
		t.Errorf("survived StopOrphan: %v", s)
	}
	<-exited
}

func TestStopOrphanFindsTaggedProcessesAfterTheLeader(t *testing.T) {
	t.Parallel()
	m := marker(t)
	tag := "orphan/" + m
	cmd, start := orphanRun(t, escapeScript(t.TempDir(), m), tag)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	// Its command line may read empty for a moment, while it execs sleep
	// (the file it wrote first is what the script waited for).
	for deadline := time.Now().Add(10 * time.Second); len(survivors(t, m)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the escaped process is gone already: nothing to test")
		}
	}
	if StopOrphan(cmd.Process.Pid, start, time.Second) {
		t.Error("without a tag, a gone leader leaves nothing to stop")
	}
	if !StopOrphan(cmd.Process.Pid, start, time.Second, tag) {
		t.Error("StopOrphan reported nothing stopped")
	}
	if s := survivors(t, m); len(s) > 0 {
		t.Errorf("survived StopOrphan: %v", s)
	}
}

func TestHasEnvMatchesWholeEntries(t *testing.T) {
	t.Parallel()
	m := marker(t)
	p, err := StartHeadless(Spec{Command: "sh", Args: []string{"-c", "read x"}, Env: map[string]string{"A": "1"}, Tag: "s/" + m}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.CloseInput(); waitDone(t, p) }()
	for _, c := range []struct {
		entry string
		want  bool
	}{
		{TaskEnv + "=s/" + m, true},
		{"A=1", true},
		{TaskEnv + "=s/" + m[:len(m)-1], false},
		{TaskEnv + "=s", false},
		{"=s/" + m, false},
	} {
		if got := hasEnv(p.Pid(), []byte(c.entry)); got != c.want {
			t.Errorf("hasEnv(%q) = %v", c.entry, got)
		}
	}
	if spared()[p.Pid()] || !spared()[os.Getpid()] || !spared()[os.Getppid()] {
		t.Error("spared is not this process and its ancestors")
	}
}

// The next run of a task carries the same tag: a late Kill of the finished
// run must not reach it.
func TestKillAfterDoneSparesTheNextRun(t *testing.T) {
	t.Parallel()
	tag := "test/" + marker(t)
	first, err := StartHeadless(Spec{Command: "true", Tag: tag}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, first)
	next, err := StartHeadless(Spec{Command: "sh", Args: []string{"-c", "read x; exit 3"}, Tag: tag}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Kill()
	first.Kill()
	first.Stop(time.Second)
	_ = next.CloseInput()
	waitDone(t, next)
	if res := next.Result(); res.ExitCode != 3 {
		t.Errorf("next run ended %+v, want exit 3", res)
	}
}

// StartTime, read without /proc, identifies the process for StopOrphan
// as its /proc start time does; an earlier time beyond the slack does not.
func TestStartTimeIdentifiesTheProcess(t *testing.T) {
	t.Parallel()
	m := marker(t)
	p, err := StartHeadless(Spec{Command: "sh", Args: []string{"-c", "exec sleep " + m}, NoInput: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	start, ok := StartTime(p)
	real, ok2 := ProcStart(p.Pid())
	if !ok || !ok2 || start > real || real-start > startSlack {
		t.Fatalf("StartTime %d (%v), /proc says %d (%v)", start, ok, real, ok2)
	}
	if real > startSlack && StopOrphan(p.Pid(), real-startSlack-1, time.Second) {
		t.Error("stopped a process started later than the slack allows")
	}
	if !StopOrphan(p.Pid(), start, time.Second) {
		t.Error("StopOrphan did not recognise the process by StartTime's")
	}
	waitDone(t, p)
	if s := survivors(t, m); len(s) > 0 {
		t.Errorf("survived StopOrphan: %v", s)
	}
}
