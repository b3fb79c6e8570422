package runner

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/sandbox"
)

// warmPlan is a sandbox plan for a test (no network), or a skip where
// bubblewrap is missing.
func warmPlan(t *testing.T) (*sandbox.Plan, string) {
	t.Helper()
	bwrap, err := sandbox.Find()
	if err != nil {
		t.Skipf("bubblewrap is not installed: %v", err)
	}
	dir := t.TempDir()
	policy := &sandbox.Policy{Bwrap: bwrap, BaseDir: dir, WorkDir: dir, Home: t.TempDir(), StateDir: filepath.Join(dir, ".vibeteam", "sandbox", "t"), Config: sandbox.Config{Network: sandbox.NetworkNone}}
	plan, err := policy.Plan(dir, nil, sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return plan, dir
}

// idleBox waits for w to keep a box, and returns its pid.
func idleBox(t *testing.T, w *Warmer) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		n := len(w.idle)
		var pid int
		if n > 0 {
			pid = w.idle[0].p.pid
		}
		w.mu.Unlock()
		if n > 0 {
			return pid
		}
		time.Sleep(5 * time.Millisecond) // polled: the box is made on the warmer's goroutine
	}
	t.Fatal("no box was made ahead within a minute")
	return 0
}

// runOnce runs spec to its end, with input typed in, and returns its
// output and result.
func runOnce(t *testing.T, spec Spec, input string) (string, Result, int) {
	t.Helper()
	var out []byte
	proc, err := StartHeadless(spec, func(c Chunk) { out = append(out, c.Raw...) })
	if err != nil {
		t.Fatal(err)
	}
	// Typed only where the process reads it: one that reads nothing may be
	// done, its input closed, before a Send (a start in a kept sandbox is
	// that quick).
	if input != "" {
		if err := proc.Send(input); err != nil {
			t.Fatal(err)
		}
	}
	_ = proc.CloseInput()
	<-proc.Done()
	return string(out), proc.Result(), ranIn(proc)
}

// ranIn is the pid of the kept sandbox's bwrap a process ran in, or its
// own pid (a cold start: its bwrap).
func ranIn(proc Process) int {
	if h, ok := proc.(*headless); ok && h.host != nil {
		return h.host.p.pid
	}
	return proc.Pid()
}

// A start in a box made ahead is the cold start, begun earlier: the same
// argv (quotes, newlines, control characters and $ kept as they are), the
// same environment, directory, open files (the box's fd 3 and the script
// the shell read are not passed on), input and exit status.
func TestWarmStartIsTheColdStart(t *testing.T) {
	plan, dir := warmPlan(t)
	script := `printf '<%s>\n' "$0" "$@"; env | sort; pwd; ls /proc/self/fd; cat; exit 3`
	spec := Spec{Command: "/bin/sh", Args: []string{"-c", script, "it's", "two\nlines", "$HOME `x`", "\x01\xff"},
		Dir: dir, Env: map[string]string{"ODD": "a'b\nc", "VIBETEAM_X": "$PATH"}, Tag: "warm-test", MergeOutput: true, Sandbox: plan}
	cold, coldRes, _ := runOnce(t, spec, "typed\n")
	if coldRes.ExitCode != 3 {
		t.Fatalf("cold start: %+v\n%s", coldRes, cold)
	}

	w := NewWarmer()
	defer w.Close()
	spec.Warm = w
	first, firstRes, _ := runOnce(t, spec, "typed\n") // cold: nothing made ahead yet
	w.mu.Lock()
	made := len(w.idle) + len(w.making)
	w.mu.Unlock()
	if made != 0 {
		t.Fatalf("%d boxes made after one start of a shape: want none till it starts again", made)
	}
	if second, _, _ := runOnce(t, spec, "typed\n"); second != cold { // cold again, and boxes made for the next
		t.Errorf("second start's output differs from the cold one's:\n%s", second)
	}
	box := idleBox(t, w)
	warm, warmRes, pid := runOnce(t, spec, "typed\n")
	if pid != box {
		t.Fatalf("the second start was pid %d, not the box made ahead (%d)", pid, box)
	}
	for name, got := range map[string]string{"first": first, "warm": warm} {
		if got != cold {
			t.Errorf("%s start's output differs from the cold one's:\n--- cold\n%s\n--- %s\n%s", name, cold, name, got)
		}
	}
	if firstRes != coldRes || warmRes != coldRes {
		t.Errorf("results: cold %+v, first %+v, warm %+v", coldRes, firstRes, warmRes)
	}
}

// A box of another shape is not taken (another directory: its mounts and
// --chdir are others), and Close ends the boxes kept: nothing of them is
// left alive.
func TestWarmBoxOnlyForItsShape(t *testing.T) {
	plan, dir := warmPlan(t)
	w := NewWarmer()
	spec := Spec{Command: "/bin/sh", Args: []string{"-c", "pwd"}, Dir: dir, NoInput: true, MergeOutput: true, Sandbox: plan, Warm: w}
	for range 2 {
		proc, err := StartHeadless(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		<-proc.Done()
	}
	box := idleBox(t, w)
	other := t.TempDir()
	otherPlan, err := (&sandbox.Policy{Bwrap: plan.Bwrap, BaseDir: other, WorkDir: other, Home: t.TempDir(), StateDir: filepath.Join(other, ".v"), Config: sandbox.Config{Network: sandbox.NetworkNone}}).Plan(other, nil, sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	out, _, pid := runOnce(t, Spec{Command: "/bin/sh", Args: []string{"-c", "pwd"}, Dir: other, MergeOutput: true, Sandbox: otherPlan, Warm: w}, "")
	if pid == box || out != other+"\n" {
		t.Fatalf("a start in %s: pid %d (the box of %s is %d), output %q", other, pid, dir, box, out)
	}
	if err := syscall.Kill(box, 0); err != nil {
		t.Fatalf("the box of %s ended: %v", dir, err)
	}
	w.Close()
	if err := syscall.Kill(box, 0); err != syscall.ESRCH {
		t.Fatalf("after Close, the box's bwrap %d: %v, want gone (reaped)", box, err)
	}
	// What was inside, killed with it, is not this process's child to
	// reap here (no subreaper): the system's init reaps it.
	for deadline := time.Now().Add(time.Minute); syscall.Kill(-box, 0) != syscall.ESRCH; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a minute after Close, the box's group %d is still there", box)
		}
	}
}

// StopStrays, between a run's steps, leaves a box waiting alone (a child
// in a session of its own, as a stray is), and a box's end leaves no
// zombie behind. In a process of its own, a child subreaper as vibeteam is.
func TestWarmBoxIsNoStray(t *testing.T) {
	if os.Getenv("VIBETEAM_STRAYS_HELPER") == "warm" {
		warmStraysHelper(t)
		return
	}
	warmPlan(t)
	t.Parallel()
	passInOwnProcess(t, "TestWarmBoxIsNoStray", "warm")
}

func warmStraysHelper(t *testing.T) {
	if err := BecomeSubreaper(); err != nil {
		t.Skipf("cannot become a child subreaper: %v", err)
	}
	plan, dir := warmPlan(t)
	w := NewWarmer()
	spec := Spec{Command: "/bin/sh", Args: []string{"-c", "echo step"}, Dir: dir, GroupOnly: true, NoInput: true, MergeOutput: true, Sandbox: plan, Warm: w}
	runOnce := func() int {
		proc, err := StartHeadless(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		<-proc.Done()
		if !proc.Result().Success() {
			t.Fatalf("step: %+v", proc.Result())
		}
		return ranIn(proc)
	}
	runOnce()
	runOnce()
	box := idleBox(t, w)
	// StopStrays sees the box only when it was started from the main
	// thread (the one orphans come back to); what keeps it then is that
	// it is known as a leader, as every process vibeteam starts is.
	if !liveLeader(box) {
		t.Fatalf("the box %d waits unknown: StopStrays would take it for a stray", box)
	}
	if n := StopStrays(time.Second); n != 0 {
		t.Fatalf("StopStrays stopped %d processes with only a box waiting", n)
	}
	if pid := runOnce(); pid != box {
		t.Fatalf("after StopStrays the step ran as pid %d, not in the box %d", pid, box)
	}
	idleBox(t, w)
	w.Close()
	for _, pid := range children() {
		if st, ok := readStat(pid); ok {
			t.Fatalf("after Close, pid %d (state %c, group %d) is still a child of this process", pid, st.state, st.pgrp)
		}
	}
}

// A bind mount shows the file it found when the box was made: a working
// directory made anew since (or a file git replaced by a rename) would be
// the old one inside. Such a box is not taken: the start sees what is
// there now.
func TestWarmBoxOfAReplacedDirectoryIsNotTaken(t *testing.T) {
	plan, dir := warmPlan(t)
	w := NewWarmer()
	defer w.Close()
	spec := Spec{Command: "/bin/sh", Args: []string{"-c", "cat marker"}, Dir: dir, MergeOutput: true, Sandbox: plan, Warm: w}
	if err := os.WriteFile(filepath.Join(dir, "marker"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if out, _, _ := runOnce(t, spec, ""); out != "one\n" {
			t.Fatalf("a start before: %q", out)
		}
	}
	box := idleBox(t, w)
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".vibeteam"), 0o755); err != nil { // the plan guards it
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "marker"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, pid := runOnce(t, spec, "")
	if out != "two\n" || pid == box {
		t.Fatalf("after the directory was made anew: output %q, pid %d (the box made before: %d)", out, pid, box)
	}
}

// hosted is a warmer that keeps a host for spec's shape (sh -c true in a
// sandbox, started twice), the spec, and the host's bwrap pid.
func hosted(t *testing.T) (*Warmer, Spec, int) {
	t.Helper()
	plan, dir := warmPlan(t)
	w := NewWarmer()
	t.Cleanup(w.Close)
	spec := Spec{Command: "/bin/sh", Args: []string{"-c", "true"}, Dir: dir, MergeOutput: true, Sandbox: plan, Warm: w}
	for range 2 {
		runOnce(t, spec, "")
	}
	return w, spec, idleBox(t, w)
}

// A start in a kept sandbox leaves nothing for the next: what it left
// running is gone when it is done (as a sandbox's pid namespace ends with
// it), and what it left in /tmp and /run is gone, while the work directory
// keeps its work.
func TestHostedStartLeavesNothingBehind(t *testing.T) {
	_, spec, host := hosted(t)
	spec.Args = []string{"-c", "sleep 300 & setsid sleep 301 & mkdir -p /tmp/d /run/d && echo x > /tmp/d/left && echo x > /run/left && echo kept > work.txt"}
	if _, res, in := runOnce(t, spec, ""); in != host || !res.Success() {
		t.Fatalf("the start that leaves things: ran in %d (the host is %d): %+v", in, host, res)
	}
	// What a cold start sees: its init (bwrap's, the server) and the shell.
	// The server's program shows where it is (a test binary under /tmp).
	exe, _ := os.Executable()
	top := strings.Split(strings.TrimPrefix(exe, "/tmp/"), "/")[0]
	probe := `n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo "$n processes"; ls -A /run; ls -A /tmp | grep -vxF '` + top + `'; test -e /tmp/d && echo /tmp/d left; test -e /run/left && echo /run/left left; cat work.txt`
	cold := spec
	cold.Warm, cold.Args = nil, []string{"-c", probe}
	want, _, _ := runOnce(t, cold, "")
	spec.Args = []string{"-c", probe}
	out, res, in := runOnce(t, spec, "")
	if in != host || !res.Success() {
		t.Fatalf("the next start ran in %d (the host is %d): %+v\n%s", in, host, res, out)
	}
	if out != want || !strings.Contains(out, "kept") {
		t.Errorf("the next start sees:\n%s\na cold start:\n%s", out, want)
	}
}

// A start in a kept sandbox stops as any: SIGTERM to its group, its
// result the signal, and the host serves the next start.
func TestHostedStartStops(t *testing.T) {
	_, spec, host := hosted(t)
	long := spec
	long.Args = []string{"-c", "sleep 300"}
	proc, err := StartHeadless(long, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ranIn(proc) != host {
		t.Fatalf("ran in %d, not the host %d", ranIn(proc), host)
	}
	stopped := make(chan struct{})
	go func() { proc.Stop(time.Second); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("Stop did not return within a minute")
	}
	if r := proc.Result(); r.Signal == "" {
		t.Errorf("a stopped start's result: %+v, want a signal", r)
	}
	if _, res, in := runOnce(t, spec, ""); in != host || !res.Success() {
		t.Errorf("the start after a stop ran in %d (the host %d): %+v", in, host, res)
	}
}

// What a start runs cannot read or trace the server that started it (it
// speaks for the starts after it): not its environment, its files, its
// memory. (It may list the numbers of its open files: the directory is
// root's, as the process is.)
func TestHostedStartCannotReachItsServer(t *testing.T) {
	_, spec, host := hosted(t)
	for _, probe := range []string{"cat /proc/$PPID/environ", "readlink /proc/$PPID/fd/0", "cat /proc/$PPID/mem", "cat /proc/$PPID/maps"} {
		spec.Args = []string{"-c", probe}
		out, res, in := runOnce(t, spec, "")
		if in != host {
			t.Fatalf("%s ran in %d, not the host %d", probe, in, host)
		}
		if res.Success() {
			t.Errorf("%s succeeded inside: %q", probe, out)
		}
	}
}

// A start cannot end its server: the sandbox's pid 1 gets from inside
// only the signals it handles, and it drops them all. The start runs on,
// and the next start runs in the same host.
func TestHostedStartCannotEndItsServer(t *testing.T) {
	_, spec, host := hosted(t)
	killer := spec
	killer.Args = []string{"-c", `test "$PPID" = 1 || echo "parent $PPID"; for s in KILL TERM INT HUP QUIT USR1 USR2 ALRM SEGV; do kill -s $s 1; done; sleep 0.2; echo survived`}
	out, res, in := runOnce(t, killer, "")
	if in != host || !res.Success() || out != "survived\n" {
		t.Errorf("a start that signalled its server: ran in %d (the host %d), %+v, output %q", in, host, res, out)
	}
	spec.Args = []string{"-c", "echo next"}
	if out, res, in := runOnce(t, spec, ""); in != host || out != "next\n" || !res.Success() {
		t.Errorf("the start after it: ran in %d (the host %d), %+v, output %q", in, host, res, out)
	}
}
