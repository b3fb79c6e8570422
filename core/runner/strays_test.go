package runner

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStopStraysSeesEachNewStray: StopStrays, called after every step,
// finds the daemon each step leaves, however many times it looked before
// (its list of children is read afresh each time). It runs in a process of
// its own, made a child subreaper, as the vibeteam command is.
func TestStopStraysSeesEachNewStray(t *testing.T) {
	if os.Getenv("VIBETEAM_STRAYS_HELPER") == "1" {
		straysHelper(t)
		return
	}
	t.Parallel()
	passInOwnProcess(t, "TestStopStraysSeesEachNewStray", "1")
}

func straysHelper(t *testing.T) {
	if err := BecomeSubreaper(); err != nil {
		t.Skipf("cannot become a child subreaper: %v", err)
	}
	if n := StopStrays(time.Second); n != 0 {
		t.Fatalf("stopped %d before any stray", n)
	}
	for round := 0; round < 3; round++ {
		// sh ends at once; its daemon, in a session of its own, comes
		// back to this process.
		out, err := exec.Command("sh", "-c", "setsid sleep 313 >/dev/null 2>&1 & echo $!").Output()
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("pid %q: %v", out, err)
		}
		// Until setsid has run, it is still in this process's session.
		for deadline := time.Now().Add(10 * time.Second); ; {
			if st, ok := readStat(pid); ok && st.session == pid {
				break
			}
			if time.Now().After(deadline) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("round %d: %d never got a session of its own", round, pid)
			}
			time.Sleep(time.Millisecond)
		}
		if n := StopStrays(time.Second); n != 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("round %d: stopped %d strays, want 1", round, n)
		}
		if syscall.Kill(pid, 0) == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("round %d: the stray %d is still there", round, pid)
		}
	}
}

// TestStopTaggedAsASubreaper: at the end of a run, StopTagged still finds
// what a script of the run left with the run's tag outside its group, and
// at a resume's start, what a killed run left (not this process's
// descendants), as the vibeteam command, a child subreaper, runs them.
func TestStopTaggedAsASubreaper(t *testing.T) {
	if os.Getenv("VIBETEAM_STRAYS_HELPER") == "tagged" {
		taggedHelper(t)
		return
	}
	t.Parallel()
	passInOwnProcess(t, "TestStopTaggedAsASubreaper", "tagged")
}

// daemon starts a sleep in a session of its own and prints its pid once
// it is there.
const daemon = `setsid sleep 313 >/dev/null 2>&1 & pid=$!; while [ "$(cut -d' ' -f6 /proc/$pid/stat 2>/dev/null)" != "$pid" ]; do :; done; echo $pid`

func taggedHelper(t *testing.T) {
	tag := "stoptagged-" + strconv.Itoa(os.Getpid())
	gone := func(pid int) bool {
		st, ok := readStat(pid)
		return !ok || st.state == 'Z' || st.state == 'X'
	}
	// A killed run's daemon, not a descendant of this process: it is
	// found by the call before this process starts any with the tag.
	out, err := exec.Command("sh", "-c", "VIBETEAM_TASK="+tag+" "+daemon).Output()
	if err != nil {
		t.Fatal(err)
	}
	foreign, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	defer syscall.Kill(foreign, syscall.SIGKILL)
	if err := BecomeSubreaper(); err != nil {
		t.Skipf("cannot become a child subreaper: %v", err)
	}
	if !StopTagged(tag, time.Second) || !gone(foreign) {
		t.Fatalf("the killed run's daemon %d was not stopped", foreign)
	}

	run := func(command string) string {
		var b strings.Builder
		p, err := StartHeadless(Spec{Command: "sh", Args: []string{"-c", command}, Tag: tag, GroupOnly: true, NoInput: true, MergeOutput: true},
			func(c Chunk) { b.Write(c.Clean) })
		if err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		return strings.TrimSpace(b.String())
	}
	if run("echo nothing left") != "nothing left" {
		t.Fatal("the script did not run")
	}
	if StopTagged(tag, time.Second) {
		t.Error("stopped something where nothing was left")
	}
	// A script's daemon, out of its group: its group's sweep leaves it.
	left, err := strconv.Atoi(run(daemon))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(left, syscall.SIGKILL)
	if gone(left) {
		t.Fatalf("the daemon %d did not outlive its script", left)
	}
	if !StopTagged(tag, time.Second) || !gone(left) {
		t.Fatalf("the script's daemon %d was not stopped", left)
	}
}

// passInOwnProcess runs test name again in a process of its own, with
// VIBETEAM_STRAYS_HELPER=helper, and fails unless it passes there.
func passInOwnProcess(t *testing.T, name, helper string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.v")
	cmd.Env = append(os.Environ(), "VIBETEAM_STRAYS_HELPER="+helper)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("%v\n%s", err, out)
	}
}
