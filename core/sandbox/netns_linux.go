package sandbox

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// startIn runs start on a thread of its own that is in the network
// namespace ns meanwhile: a process forked there begins in it (os/exec:
// a goroutine locked to its thread passes the thread's namespaces on).
// The thread goes back to vibeteam's namespace before it is unlocked; if
// it cannot, it stays locked and the runtime ends it with the goroutine,
// so no other goroutine ever runs in ns.
func startIn(ns *os.File, start func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("sandbox: this thread's network namespace: %w", err)
			return
		}
		defer home.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread() // nothing changed
			done <- fmt.Errorf("sandbox: joining the session's network namespace: %w", err)
			return
		}
		err = start()
		if unix.Setns(int(home.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}
