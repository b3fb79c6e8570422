//go:build unix

package state

import (
	"errors"
	"os"
	"syscall"
)

// processAlive reports whether pid exists on this host. Only ESRCH proves a
// process gone; EPERM means it exists under another user, and any other error
// is treated as alive because wrongly taking over a lock is the worse mistake.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}

type flockResult int

const (
	flockAcquired flockResult = iota
	flockBusy
	flockUnsupported
)

// flockTry takes an exclusive flock without blocking. flock locks belong to
// the open file description, so a second descriptor conflicts even inside the
// same process, which is what lets one process see its own lock as held.
func flockTry(f *os.File) flockResult {
	var ferr error
	if err := withFd(f, func(fd int) {
		ferr = retryEINTR(func() error { return syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) })
	}); err != nil {
		return flockUnsupported
	}
	switch {
	case ferr == nil:
		return flockAcquired
	case errors.Is(ferr, syscall.EWOULDBLOCK):
		return flockBusy
	default: // ENOLCK, EINVAL, ENOTSUP: file systems without flock
		return flockUnsupported
	}
}

// flockWait takes an exclusive flock, blocking. It is only used on a lock
// file this process has just created, where other processes hold the flock
// for no longer than it takes them to read the file.
func flockWait(f *os.File) error {
	var ferr error
	if err := withFd(f, func(fd int) {
		ferr = retryEINTR(func() error { return syscall.Flock(fd, syscall.LOCK_EX) })
	}); err != nil {
		return err
	}
	return ferr
}

func withFd(f *os.File, fn func(fd int)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { fn(int(fd)) })
}

func retryEINTR(fn func() error) error {
	for {
		err := fn()
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// syncDir makes a rename in dir durable. Some file systems cannot fsync a
// directory; there the rename is as durable as it is going to get.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		return nil
	}
	return err
}
