//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is one process seen in /proc.
type proc struct {
	pid, ppid int
	state     string // R, S, D, Z, ...
	cmdline   string
}

func (p proc) String() string {
	return fmt.Sprintf("pid %d (ppid %d, state %s): %s", p.pid, p.ppid, p.state, clip(p.cmdline, 300))
}

// procsMentioning lists the live processes (zombies left out, and this
// test binary) whose argv or environment contains s. Processes that end
// while they are read are skipped.
func procsMentioning(s string) []proc {
	entries, _ := os.ReadDir("/proc")
	needle := []byte(s)
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		environ, _ := os.ReadFile(filepath.Join(dir, "environ"))
		if !bytes.Contains(cmdline, needle) && !bytes.Contains(environ, needle) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		out = append(out, proc{pid: pid, ppid: ppid, state: f[0],
			cmdline: strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))})
	}
	return out
}

// strays is the processes that mention the world's directory (its HOME,
// CODEX_HOME, project, ...) in their argv or environment. Once vibeteam
// has exited there must be none: everything an agent starts (Codex's
// app-server daemon included) is the task's, and ends with it.
func (w *world) strays() []proc { return procsMentioning(w.root + string(os.PathSeparator)) }

// reapStrays fails the test when processes of the world outlive vibeteam,
// and kills them. A process that is on its way out gets a few seconds to go
// (a generous bound on a loaded machine; a survivor stays for good).
func (w *world) reapStrays() {
	w.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	strays := w.strays()
	for len(strays) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		strays = w.strays()
	}
	if len(strays) == 0 {
		return
	}
	var lines []string
	for _, p := range strays {
		lines = append(lines, "  "+p.String())
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	w.t.Errorf("%d process(es) escaped: still running after vibeteam exited, with the test's directory %s in their argv or environment (killed now):\n%s",
		len(strays), w.root, strings.Join(lines, "\n"))
}
