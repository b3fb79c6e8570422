package egress

import "syscall"

// childAttr kills the bridge's command when the bridge dies, so that a
// killed bridge never leaves it running without a way out.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
