package cli

import (
	"bytes"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	return l.b.Write(p)
}

func (l *lockedBuffer) String() (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String(), l.writes
}

// Lines written close together go out in one write, no later than
// lineDelay after the first; Flush writes what waits at once.
func TestDelayedWriter(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		out := &lockedBuffer{}
		w := newDelayedWriter(out)
		_, _ = w.Write([]byte("one\n"))
		_, _ = w.Write([]byte("two\n"))
		if got, _ := out.String(); got != "" {
			t.Fatalf("written at once: %q", got)
		}
		time.Sleep(lineDelay - time.Millisecond)
		synctest.Wait()
		if got, _ := out.String(); got != "" {
			t.Fatalf("written before lineDelay: %q", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got, n := out.String(); got != "one\ntwo\n" || n != 1 {
			t.Fatalf("after lineDelay: %q in %d writes", got, n)
		}
		_, _ = w.Write([]byte("three\n"))
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if got, n := out.String(); got != "one\ntwo\nthree\n" || n != 2 {
			t.Fatalf("after Flush: %q in %d writes", got, n)
		}
		// Nothing waits, so the timer writes nothing more.
		time.Sleep(time.Second)
		synctest.Wait()
		if _, n := out.String(); n != 2 {
			t.Errorf("%d writes", n)
		}
	})
}
