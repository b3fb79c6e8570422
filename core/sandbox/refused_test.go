package sandbox

import (
	"strings"
	"testing"
)

// A refusal split across the pieces a process's output arrives in is
// found, once its line is whole or the output ends; a path the sandbox
// lets write is no refusal.
func TestWatchFindsARefusalAcrossPieces(t *testing.T) {
	plan := &Plan{Writable: []string{"/work"}}
	w := plan.Watch()
	for _, piece := range []string{"building\n/bin/sh: 1: cannot create /work/ok: Read-only", " file system\nsh: cannot create /home/u/.cache/x/y", ": Read-only file system"} {
		w.Write([]byte(piece))
	}
	got := w.Found()
	if !strings.Contains(got, "the sandbox refused a write to /home/u/.cache/x/y") {
		t.Errorf("Found() = %q", got)
	}
	var none *Watch // an unsandboxed process's
	none.Write([]byte("x: Read-only file system\n"))
	if none.Found() != "" {
		t.Error("a nil watch found something")
	}
	quiet := plan.Watch()
	quiet.Write([]byte("/bin/sh: 1: cannot create /work/ok: Read-only file system\n" + strings.Repeat("x", 10000)))
	if got := quiet.Found(); got != "" {
		t.Errorf("a write inside the work dir is no refusal: %q", got)
	}
}
