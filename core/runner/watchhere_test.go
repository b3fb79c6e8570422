package runner

import (
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startHere starts script under sh with Spec.WatchHere, its output
// gathered in out.
func startHere(t *testing.T, script string, onOutput func(string)) (Process, *strings.Builder, *sync.Mutex) {
	t.Helper()
	var mu sync.Mutex
	out := &strings.Builder{}
	p, err := StartHeadless(Spec{Command: "sh", Args: []string{"-c", script}, NoInput: true, MergeOutput: true, WatchHere: true}, func(c Chunk) {
		mu.Lock()
		out.Write(c.Raw)
		mu.Unlock()
		if onOutput != nil {
			onOutput(string(c.Raw))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, out, &mu
}

func isDone(p Process) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

func watchesHere(t *testing.T) bool {
	t.Helper()
	if !pidfdWatch() {
		t.Log("no pidfds: WatchHere declines, a goroutine watches")
		return false
	}
	return true
}

// A process watched on its caller's goroutine is done when WatchHere says
// so: every byte read, its result set, nothing left to wait for.
func TestWatchHereSeesTheEnd(t *testing.T) {
	t.Parallel()
	here := watchesHere(t)
	p, out, mu := startHere(t, "printf abc; sleep 0.05; printf def; exit 4", nil)
	wake := NewWake()
	defer wake.Close()
	if got := p.(HereWatcher).WatchHere(wake, time.Time{}); got != here {
		t.Fatalf("WatchHere = %v, want %v", got, here)
	}
	if here && !isDone(p) {
		t.Fatal("WatchHere said done, Done is not closed")
	}
	<-p.Done()
	mu.Lock()
	defer mu.Unlock()
	if out.String() != "abcdef" || p.Result().ExitCode != 4 {
		t.Fatalf("output %q, result %+v; want abcdef and exit 4", out.String(), p.Result())
	}
}

// A wake, fired from the output's callback or from another goroutine,
// ends the watch here; a goroutine watches the rest, and nothing of the
// output is lost.
func TestWakeEndsWatchHere(t *testing.T) {
	t.Parallel()
	for _, from := range []string{"callback", "goroutine"} {
		t.Run(from, func(t *testing.T) {
			t.Parallel()
			if !watchesHere(t) {
				t.Skip()
			}
			wake := NewWake()
			defer wake.Close()
			seen := make(chan struct{}, 1)
			p, out, mu := startHere(t, "echo one; sleep 1; echo two; exit 5", func(s string) {
				if strings.Contains(s, "one") {
					if from == "callback" {
						wake.Fire()
					} else {
						seen <- struct{}{}
					}
				}
			})
			if from == "goroutine" {
				go func() {
					<-seen
					wake.Fire()
				}()
			}
			if p.(HereWatcher).WatchHere(wake, time.Time{}) {
				t.Fatal("WatchHere said done; the wake should have ended it first")
			}
			if isDone(p) {
				t.Fatal("done when the wake came: the process sleeps 1 s more")
			}
			<-p.Done()
			mu.Lock()
			defer mu.Unlock()
			if out.String() != "one\ntwo\n" || p.Result().ExitCode != 5 {
				t.Fatalf("output %q, result %+v; want both lines and exit 5", out.String(), p.Result())
			}
		})
	}
}

// The deadline ends the watch here too (a step's timeout).
func TestWatchHereDeadline(t *testing.T) {
	t.Parallel()
	if !watchesHere(t) {
		t.Skip()
	}
	p, out, mu := startHere(t, "sleep 1; echo late", nil)
	wake := NewWake()
	defer wake.Close()
	if p.(HereWatcher).WatchHere(wake, time.Now().Add(20*time.Millisecond)) {
		t.Fatal("WatchHere said done before a process that sleeps 1 s ended")
	}
	<-p.Done()
	mu.Lock()
	defer mu.Unlock()
	if out.String() != "late\n" {
		t.Fatalf("output %q, want the line written after the deadline", out.String())
	}
}

// Whatever waits for the process before its caller watches it has it
// watched by a goroutine: WatchHere then declines, and Done still tells
// the end. A wake fired before the watch ends it at once.
func TestWatchHereTakenOrWokenBefore(t *testing.T) {
	t.Parallel()
	p, out, mu := startHere(t, "echo hi", nil)
	done := p.Done()
	wake := NewWake()
	defer wake.Close()
	if p.(HereWatcher).WatchHere(wake, time.Time{}) {
		t.Fatal("WatchHere watched a process Done had handed to a goroutine")
	}
	<-done
	mu.Lock()
	if out.String() != "hi\n" {
		t.Errorf("output %q", out.String())
	}
	mu.Unlock()

	p, _, _ = startHere(t, "sleep 1", nil)
	wake.Fire()
	start := time.Now()
	if p.(HereWatcher).WatchHere(wake, time.Time{}) {
		t.Fatal("WatchHere watched past a wake fired before it")
	}
	if isDone(p) {
		t.Fatalf("done %v after the watch began: the wake did not end it", time.Since(start))
	}
	<-p.Done()
	if !p.Result().Success() {
		t.Fatalf("result %+v", p.Result())
	}

	// Fired before any watch polled it (its eventfd is made as one begins).
	fresh := NewWake()
	defer fresh.Close()
	fresh.Fire()
	p, _, _ = startHere(t, "sleep 1", nil)
	if p.(HereWatcher).WatchHere(fresh, time.Time{}) {
		t.Fatal("WatchHere watched past a wake fired before its first watch")
	}
	if isDone(p) {
		t.Fatal("done after the watch began: the early fire was lost")
	}
	<-p.Done()
}

// A Stop from another goroutine while the caller watches: the process
// goes, the watch sees its end, and both return.
func TestStopWhileWatchedHere(t *testing.T) {
	t.Parallel()
	if !watchesHere(t) {
		t.Skip()
	}
	ready := make(chan struct{}, 1)
	p, _, _ := startHere(t, "echo ready; exec sleep 60", func(s string) {
		if strings.Contains(s, "ready") {
			ready <- struct{}{}
		}
	})
	stopped := make(chan struct{})
	go func() {
		<-ready
		p.Stop(5 * time.Second)
		close(stopped)
	}()
	wake := NewWake()
	defer wake.Close()
	if !p.(HereWatcher).WatchHere(wake, time.Time{}) {
		t.Fatal("WatchHere did not see the stopped process end")
	}
	<-stopped
	if r := p.Result(); r.Signal == "" {
		t.Fatalf("result %+v, want the signal that stopped it", r)
	}
}

// A wake fired after Close writes nowhere: not into a file that took its
// descriptor's number.
func TestWakeFiredAfterClose(t *testing.T) {
	t.Parallel()
	wake := NewWake()
	wake.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	wake.Fire()
	fd := int(r.Fd()) // Fd makes it blocking: once, before the next line
	if err := syscall.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if n, _ := syscall.Read(fd, buf); n > 0 {
		t.Fatalf("a closed wake wrote %d bytes into a pipe", n)
	}
}
