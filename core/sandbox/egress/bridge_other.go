//go:build !linux

package egress

import "syscall"

// childAttr: only Linux has a parent-death signal (and the bridge runs in
// a bubblewrap sandbox, which is Linux-only).
func childAttr() *syscall.SysProcAttr { return nil }
