package engine

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// gitState is a working tree as an agent step found it: the commit it was
// on and the content of every file that differed from it, so that the files
// the step changed can be told from those that were changed before.
type gitState struct {
	dir   string
	head  string            // "" outside a git working tree (or before the first commit)
	dirty map[string]string // path → content hash, or "" for a deleted file
	ok    bool
}

// gitTimeout bounds one git read of an agent step's working tree.
const gitTimeout = 2 * time.Minute

func git(dir string, args ...string) ([]byte, error) {
	return gitIn(dir, "", args...)
}

// gitIn runs git in dir with stdin, supervised as every command vibeteam
// runs itself: a process group of its own (killed whole at the timeout),
// and its output read at most 2 s after it exits, so a child it leaves
// behind cannot hold the step.
func gitIn(dir, stdin string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.quotepath=off"}, args...)...)
	cmd.Dir = dir
	// These are reads: git status need not take the index's lock to write
	// back what it refreshed (a file made and removed per read, and a
	// lock the agent's own git could find taken).
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.Output()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil
	}
	return out, err
}

// gitSnapshot reads dir's state; outside a git working tree it is empty and
// changed reports nothing.
func gitSnapshot(dir string) gitState {
	s := gitState{dir: dir}
	// One git for the three answers. Before the first commit HEAD does not
	// resolve and git fails, having printed the first two; outside a
	// working tree the first is not "true".
	out, err := git(dir, "rev-parse", "--is-inside-work-tree", "--show-toplevel", "HEAD")
	f := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(f) < 2 || f[0] != "true" || !filepath.IsAbs(f[1]) {
		return s
	}
	s.ok, s.dir = true, f[1]
	if err == nil && len(f) == 3 {
		s.head = f[2]
	}
	s.dirty = s.dirtyFiles()
	return s
}

// dirtyFiles are the files that differ from HEAD (untracked ones included),
// with their content hashes.
func (s gitState) dirtyFiles() map[string]string {
	out, err := git(s.dir, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
	if err != nil {
		return nil
	}
	files := map[string]string{}
	var paths []string
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) < 4 {
			continue
		}
		path := string(rec[3:])
		files[path] = ""
		if rec[0] != 'D' && rec[1] != 'D' {
			paths = append(paths, path)
		}
	}
	if len(paths) > 0 {
		if hashes, err := gitIn(s.dir, strings.Join(paths, "\n")+"\n", "hash-object", "--stdin-paths"); err == nil {
			for i, h := range strings.Fields(string(hashes)) {
				if i < len(paths) {
					files[paths[i]] = h
				}
			}
		}
	}
	return files
}

// changed lists the files that differ now from how the snapshot found
// them: changed, added or deleted since, committed or not. Paths are
// relative to the repository's top.
func (s gitState) changed() []string {
	if !s.ok {
		return nil
	}
	cand := map[string]bool{}
	if s.head != "" {
		// Against the commit the step started on: what the agent committed
		// counts as much as what it left in the working tree.
		if out, err := git(s.dir, "diff", "--name-only", "-z", "--no-renames", s.head); err == nil {
			for _, p := range strings.Split(string(out), "\x00") {
				if p != "" {
					cand[p] = true
				}
			}
		}
	}
	now := s.dirtyFiles()
	for p := range now {
		cand[p] = true
	}
	for p := range s.dirty {
		cand[p] = true // changed before: changed by the step if its content moved
	}
	var files []string
	for p := range cand {
		was, wasDirty := s.dirty[p]
		is, isDirty := now[p]
		switch {
		case !wasDirty:
			files = append(files, p)
		case !isDirty:
			// Dirty before, as HEAD now: the step reverted or committed it.
			files = append(files, p)
		case was != is:
			files = append(files, p)
		}
	}
	sort.Strings(files)
	return files
}
