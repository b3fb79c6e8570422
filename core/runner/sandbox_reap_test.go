package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vibeteam/vibeteam/core/sandbox"
)

// A sandboxed step's end leaves nothing of its sandbox behind: the init of
// its pid namespace, which outlives bwrap by a little and comes back to
// vibeteam (a child subreaper), is waited for and reaped when the step
// ends, not left a zombie until the run's end, each step's pid namespace
// with it, while the sweep read /proc and polled for it. It runs in a
// process of its own, made a child subreaper, as the vibeteam command is.
func TestSandboxedStepLeavesNoZombie(t *testing.T) {
	if os.Getenv("VIBETEAM_STRAYS_HELPER") == "sandbox" {
		sandboxReapHelper(t)
		return
	}
	if _, err := sandbox.Find(); err != nil {
		t.Skipf("bubblewrap is not installed: %v", err)
	}
	t.Parallel()
	passInOwnProcess(t, "TestSandboxedStepLeavesNoZombie", "sandbox")
}

func sandboxReapHelper(t *testing.T) {
	if err := BecomeSubreaper(); err != nil {
		t.Skipf("cannot become a child subreaper: %v", err)
	}
	bwrap, err := sandbox.Find()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	policy := &sandbox.Policy{Bwrap: bwrap, BaseDir: dir, WorkDir: dir, Home: t.TempDir(), StateDir: filepath.Join(dir, ".vibeteam", "sandbox", "t"), Config: sandbox.Config{Network: sandbox.NetworkNone}}
	plan, err := policy.Plan(dir, nil, sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for step := range 5 {
		var out []byte
		proc, err := StartHeadless(Spec{Command: "/bin/sh", Args: []string{"-c", "echo inside"}, Dir: dir, GroupOnly: true, NoInput: true, MergeOutput: true, Sandbox: plan}, func(c Chunk) {
			out = append(out, c.Raw...)
		})
		if err != nil {
			t.Fatal(err)
		}
		<-proc.Done()
		if !proc.Result().Success() || string(out) != "inside\n" {
			t.Fatalf("step %d: %+v, output %q", step, proc.Result(), out)
		}
		for _, pid := range children() {
			if st, ok := readStat(pid); ok && (st.state == 'Z' || st.state == 'X') {
				t.Fatalf("step %d ended, and pid %d (group %d) is a zombie child of this process", step, pid, st.pgrp)
			}
		}
	}
}
