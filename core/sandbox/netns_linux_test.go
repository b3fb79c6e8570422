package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// newNetns makes a network namespace (root only) and opens it, leaving
// no thread of this process in it.
func newNetns(t *testing.T) *os.File {
	t.Helper()
	type made struct {
		ns  *os.File
		err error
	}
	done := make(chan made, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- made{err: err}
			return
		}
		defer home.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- made{err: err}
			return
		}
		ns, err := os.Open("/proc/thread-self/ns/net")
		if unix.Setns(int(home.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- made{ns, err}
	}()
	m := <-done
	if m.err != nil {
		t.Skipf("cannot make a network namespace here (not root?): %v", m.err)
	}
	t.Cleanup(func() { m.ns.Close() })
	return m.ns
}

// namespaceOf is the namespace an open namespace file is.
func namespaceOf(t *testing.T, ns *os.File) string {
	t.Helper()
	s, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", ns.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// threadNamespaces are the network namespaces of this process's threads.
func threadNamespaces(t *testing.T) map[string]bool {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, task := range tasks {
		if ns, err := os.Readlink(task); err == nil {
			out[ns] = true
		}
	}
	return out
}

// A sandboxed process of a plan with the session's network namespace
// starts in it (no nsenter before bwrap), many at once, and no thread of
// vibeteam is left there afterwards: its own connections (git, the
// model's API through the proxy) stay in the host's namespace.
func TestStartJoinsTheSessionsNetworkNamespace(t *testing.T) {
	ns := newNetns(t)
	host, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	want := namespaceOf(t, ns)
	if want == host {
		t.Fatalf("the test's namespace is the host's (%s)", host)
	}
	plan := &Plan{Netns: ns}
	var wg sync.WaitGroup
	got := make([]string, 8)
	errs := make([]error, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("readlink", "/proc/self/ns/net")
			var out strings.Builder
			cmd.Stdout = &out
			if errs[i] = plan.Start(cmd.Start); errs[i] == nil {
				errs[i] = cmd.Wait()
			}
			got[i] = strings.TrimSpace(out.String())
		}()
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || got[i] != want {
			t.Errorf("process %d: in %q (%v), want the session's %q", i, got[i], errs[i], want)
		}
	}
	if threads := threadNamespaces(t); len(threads) != 1 || !threads[host] {
		t.Errorf("this process's threads are in %v after the starts, want only the host's %s", threads, host)
	}
	// Without a namespace (network all), the host's.
	out, err := exec.Command("readlink", "/proc/self/ns/net").Output()
	if err := (&Plan{}).Start(func() error { return err }); err != nil || strings.TrimSpace(string(out)) != host {
		t.Errorf("a plan without a namespace: %q (%v), want the host's %q", out, err, host)
	}
}
