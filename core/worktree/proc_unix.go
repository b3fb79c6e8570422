//go:build unix

package worktree

import (
	"os/exec"
	"syscall"
)

// ownGroup starts git in a process group of its own: a Ctrl-C typed at the
// terminal, or a kill of vibeteam's whole group, does not cut a ref move
// or a checkout update in half; git finishes what it began.
//
// At its timeout the whole group goes, git and what it started.
func ownGroup(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
}
