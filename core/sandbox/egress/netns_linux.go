package egress

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// listenInNewNetns listens on addr in a new network namespace, and returns
// the listener and the namespace's file. The work is done by a goroutine
// locked to its thread, which goes back to vibeteam's namespace before it
// is unlocked (if it cannot, the thread stays locked and the runtime ends
// it with the goroutine: no other goroutine ever runs in the new
// namespace). Sockets keep the namespace they were made in, so the
// listener accepts there wherever it is served from.
func listenInNewNetns(addr string) (net.Listener, *os.File, error) {
	type made struct {
		l   net.Listener
		ns  *os.File
		err error
	}
	done := make(chan made, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- made{err: fmt.Errorf("%w: %v", ErrNoNetns, err)}
			return
		}
		defer home.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread() // nothing changed
			done <- made{err: fmt.Errorf("%w: %v", ErrNoNetns, err)}
			return
		}
		l, ns, err := listenHere(addr)
		if unix.Setns(int(home.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- made{l, ns, err}
	}()
	m := <-done
	return m.l, m.ns, m.err
}

// listenHere brings up the loopback interface of the calling thread's
// network namespace, listens on addr there, and opens the namespace.
func listenHere(addr string) (net.Listener, *os.File, error) {
	if err := loopbackUp(); err != nil {
		return nil, nil, fmt.Errorf("%w: loopback: %v", ErrNoNetns, err)
	}
	ns, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrNoNetns, err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		ns.Close()
		return nil, nil, fmt.Errorf("egress bridge: %w", err)
	}
	return l, ns, nil
}

// loopbackUp brings up "lo" of the calling thread's network namespace.
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var req struct {
		name  [syscall.IFNAMSIZ]byte
		flags uint16
		_     [22]byte
	}
	copy(req.name[:], "lo")
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&req))); e != 0 {
		return e
	}
	req.flags |= syscall.IFF_UP
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&req))); e != 0 {
		return e
	}
	return nil
}
