package state

import (
	"bytes"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

type countingBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (c *countingBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	return c.b.Write(p)
}

func (c *countingBuffer) String() (string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String(), c.writes
}

// Lines written close together go out in one write, no later than the
// delay after the first; Flush writes what waits at once; after Close
// nothing is written.
func TestGatheringWriter(t *testing.T) {
	t.Parallel()
	const delay = 20 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		out := &countingBuffer{}
		w := NewGatheringWriter(out, delay)
		_, _ = w.Write([]byte("one\n"))
		_, _ = w.Write([]byte("two\n"))
		if got, _ := out.String(); got != "" {
			t.Fatalf("written at once: %q", got)
		}
		time.Sleep(delay - time.Millisecond)
		synctest.Wait()
		if got, _ := out.String(); got != "" {
			t.Fatalf("written before the delay: %q", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got, n := out.String(); got != "one\ntwo\n" || n != 1 {
			t.Fatalf("after the delay: %q in %d writes", got, n)
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
		_, _ = w.Write([]byte("four\n"))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("five\n")); err == nil {
			t.Error("a write after Close was taken")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got, n := out.String(); got != "one\ntwo\nthree\nfour\n" || n != 3 {
			t.Errorf("after Close: %q in %d writes", got, n)
		}
	})
}
