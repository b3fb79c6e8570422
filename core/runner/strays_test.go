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
	cmd := exec.Command(os.Args[0], "-test.run=^TestStopStraysSeesEachNewStray$", "-test.v")
	cmd.Env = append(os.Environ(), "VIBETEAM_STRAYS_HELPER=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("%v\n%s", err, out)
	}
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
