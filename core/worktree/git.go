package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// GitError is a git command that failed: its arguments, where it ran, its
// exit code and what it said on stderr.
type GitError struct {
	Args     []string
	Dir      string
	ExitCode int // -1 when git did not run or was killed
	Stderr   string
	Err      error
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s (in %s): %s", strings.Join(e.Args, " "), e.Dir, msg)
}

func (e *GitError) Unwrap() error { return e.Err }

// envDrop are the variables that would point git at another repository,
// index or work tree than the directory it runs in (they are set when
// vibeteam itself runs from a git hook), or change what it writes.
var envDrop = map[string]bool{
	"GIT_DIR": true, "GIT_WORK_TREE": true, "GIT_INDEX_FILE": true, "GIT_COMMON_DIR": true,
	"GIT_OBJECT_DIRECTORY": true, "GIT_ALTERNATE_OBJECT_DIRECTORIES": true, "GIT_NAMESPACE": true,
	"GIT_PREFIX": true, "GIT_REFLOG_ACTION": true, "GIT_QUARANTINE_PATH": true,
}

func gitEnv(extra ...string) []string {
	env := make([]string, 0, len(os.Environ())+4+len(extra))
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !envDrop[k] {
			env = append(env, kv)
		}
	}
	// Never wait for a person: no credential prompt, no editor.
	env = append(env, "GIT_TERMINAL_PROMPT=0", "GIT_EDITOR=true", "GIT_MERGE_AUTOEDIT=no")
	return append(env, extra...)
}

// gitWaitDelay is how long git's output is read after git itself exited.
const gitWaitDelay = 2 * time.Second

// How long one git command may run: a read, and a change that is not
// interrupted (a commit with its hooks, a checkout update).
const (
	gitTimeout     = 5 * time.Minute
	gitKeepTimeout = 30 * time.Minute
)

// cmd describes one git invocation.
type cmd struct {
	dir   string
	args  []string
	stdin string
	env   []string
	// keep runs the command to its end even when the context is cancelled
	// once it has started: it changes refs, an index or a working tree,
	// and killing it half-way could leave them inconsistent.
	keep bool
	// hooks lets the repository's hooks run. Only the commit of the steps'
	// work honours them (pre-commit, commit-msg); vibeteam's own plumbing
	// (worktree creation, the merge into the base, ref moves and branch
	// deletion) runs without, so a hook can neither change nor slip files
	// into what vibeteam does.
	hooks bool
}

// run runs git and returns its stdout; a failure is a *GitError carrying
// git's stderr.
func run(ctx context.Context, c cmd) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if c.keep {
		ctx = context.WithoutCancel(ctx)
	}
	// Bounded all the same: a git that hangs (a hook of the commit, a
	// lock held elsewhere) fails rather than holding the run for ever.
	limit := gitTimeout
	if c.keep {
		limit = gitKeepTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	args := []string{"-c", "core.quotepath=off"}
	if !c.hooks {
		args = append(args, "-c", "core.hooksPath="+os.DevNull)
	}
	locks := heldLocks(ctx)
	if c.keep && len(locks) > 0 {
		// It inherits the locks held (see Repo.lock); nothing it
		// could leave running may inherit it too.
		args = append(args, "-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "core.fsmonitor=false")
	}
	args = append(args, c.args...)
	x := exec.CommandContext(ctx, "git", args...)
	x.Dir = c.dir
	x.Env = gitEnv(c.env...)
	ownGroup(x)
	if c.keep && len(locks) > 0 {
		x.ExtraFiles = locks
	}
	// A hook that leaves a child holding git's output open (sleep 45 &)
	// does not hold the run: its pipes are closed a moment after git ends.
	x.WaitDelay = gitWaitDelay
	if c.stdin != "" {
		x.Stdin = strings.NewReader(c.stdin)
	}
	var stdout, stderr bytes.Buffer
	x.Stdout, x.Stderr = &stdout, &stderr
	err := x.Run()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // git succeeded; a hook's child kept the pipe open
	}
	if err != nil {
		ge := &GitError{Args: c.args, Dir: c.dir, ExitCode: -1, Stderr: stderr.String(), Err: err}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			ge.ExitCode = ee.ExitCode()
		}
		if cerr := ctx.Err(); cerr != nil {
			ge.Err = fmt.Errorf("%w (%v)", cerr, err)
		}
		return stdout.String(), ge
	}
	return stdout.String(), nil
}

// git runs git in dir with the given arguments.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	return run(ctx, cmd{dir: dir, args: args})
}

// exitCode is the exit code of a failed git command, -1 for other errors.
func exitCode(err error) int {
	var ge *GitError
	if errors.As(err, &ge) {
		return ge.ExitCode
	}
	return -1
}

// revParse resolves rev to an object id; ok is false when it does not
// exist (any other failure is an error).
func revParse(ctx context.Context, dir, rev string) (id string, ok bool, err error) {
	out, err := git(ctx, dir, "rev-parse", "--verify", "--quiet", "--end-of-options", rev)
	if err != nil {
		if exitCode(err) == 1 {
			return "", false, nil
		}
		return "", false, err
	}
	return strings.TrimSpace(out), true, nil
}

// revParseAll resolves several revisions, each a full ref name (never an
// option), in one git: ok is false when any of them does not resolve or
// git failed, and the caller asks about each with revParse.
func revParseAll(ctx context.Context, dir string, revs ...string) ([]string, bool) {
	for _, r := range revs {
		if !strings.HasPrefix(r, "refs/") {
			return nil, false
		}
	}
	out, err := git(ctx, dir, append(append([]string{"rev-parse"}, revs...), "--")...)
	if err != nil {
		return nil, false
	}
	ids := strings.Fields(out)
	if len(ids) == len(revs)+1 && ids[len(revs)] == "--" {
		ids = ids[:len(revs)] // rev-parse repeats the separator
	}
	if len(ids) != len(revs) {
		return nil, false
	}
	for _, id := range ids {
		if len(id) < 40 || strings.Trim(id, "0123456789abcdef") != "" {
			return nil, false
		}
	}
	return ids, true
}

// headRef is the ref checked out in the worktree at path: its HEAD file,
// read as git reads it, or git symbolic-ref where that file is not a plain
// symbolic ref (another ref backend). A detached HEAD is an error.
func headRef(ctx context.Context, path string) (string, error) {
	dir := linkedGitDir(path)
	if dir == "" {
		if info, err := os.Stat(filepath.Join(path, ".git", "HEAD")); err == nil && !info.IsDir() {
			dir = filepath.Join(path, ".git")
		}
	}
	if dir != "" {
		if b, err := os.ReadFile(filepath.Join(dir, "HEAD")); err == nil {
			if ref, ok := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), "ref: "); ok && strings.HasPrefix(ref, "refs/heads/") && ref != "refs/heads/.invalid" && !strings.ContainsAny(ref, "\n ") {
				return ref, nil
			}
		}
	}
	out, err := git(ctx, path, "symbolic-ref", "--quiet", "HEAD")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// isAncestor reports whether commit a is an ancestor of (or equal to) b.
func isAncestor(ctx context.Context, dir, a, b string) (bool, error) {
	_, err := git(ctx, dir, "merge-base", "--is-ancestor", a, b)
	switch {
	case err == nil:
		return true, nil
	case exitCode(err) == 1:
		return false, nil
	}
	return false, err
}

// identity is the -c options that give git a committer when none is
// configured (a fresh machine or CI): vibeteam <vibeteam@localhost>. A
// configured user.name / user.email, or the GIT_* / EMAIL variables that
// override them, are always used instead.
func identity(ctx context.Context, dir string) ([]string, error) {
	keys := []struct {
		key, value string
		envs       []string
	}{
		{"user.name", "vibeteam", []string{"GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"}},
		{"user.email", "vibeteam@localhost", []string{"GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL", "EMAIL"}},
	}
	// Both keys in one git: the last value of each counts, as for git
	// config --get.
	out, err := git(ctx, dir, "config", "--get-regexp", `^user\.(name|email)$`)
	if err != nil && exitCode(err) != 1 {
		return nil, err
	}
	configured := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(line, " ")
		if k != "" {
			configured[k] = strings.TrimSpace(v) != ""
		}
	}
	var args []string
	for _, k := range keys {
		set := configured[k.key]
		for _, e := range k.envs {
			if os.Getenv(e) != "" {
				set = true
			}
		}
		if !set {
			args = append(args, "-c", k.key+"="+k.value)
		}
	}
	return args, nil
}

// minMergeTree is the first git with git merge-tree --write-tree.
var minMergeTree = [2]int{2, 38}

// gitVersion parses `git version` output such as "git version 2.39.5" or
// "git version 2.39.3 (Apple Git-145)".
func gitVersion(out string) (major, minor int, ok bool) {
	f := strings.Fields(out)
	if len(f) < 3 {
		return 0, 0, false
	}
	parts := strings.SplitN(f[2], ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return major, minor, err1 == nil && err2 == nil
}
