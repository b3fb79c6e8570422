//go:build !unix

package worktree

import "os/exec"

func ownGroup(c *exec.Cmd) {}
