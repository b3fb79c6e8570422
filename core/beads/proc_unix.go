//go:build unix

package beads

import (
	"os/exec"
	"syscall"
)

// supervise starts bd in a process group of its own and, when its context
// ends, kills the whole group: a wrapper script's children go with it.
func supervise(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error {
		if c.Process == nil {
			return nil
		}
		return syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
}
