package worktree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestMain isolates git from the machine's configuration: no global or
// system config, so no identity either (CommitAll and Merge must cope).
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "worktree-test-home")
	if err != nil {
		panic(err)
	}
	empty := filepath.Join(home, "gitconfig")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	os.Setenv("GIT_CONFIG_GLOBAL", empty)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	os.Setenv("LC_ALL", "C") // git's messages in English, as the tests read them
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL",
		"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"} {
		os.Unsetenv(k)
	}
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

// tgit runs git as the test's "user" (with an identity of its own).
func tgit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := tgitErr(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func tgitErr(dir string, args ...string) (string, error) {
	c := exec.Command("git", append([]string{"-c", "user.name=User", "-c", "user.email=user@example.com"}, args...)...)
	c.Dir = dir
	var stderr strings.Builder
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return string(out), fmt.Errorf("%v: %s", err, stderr.String())
	}
	return string(out), nil
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newRepo makes a repository on main with a.txt, b.txt, c.txt committed
// and .gitignore ignoring *.log.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	// Resolve links (a TMPDIR behind one) so paths compare as git prints them.
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	tgit(t, dir, "init", "-q", "-b", "main")
	for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
		write(t, filepath.Join(dir, f), "one\ntwo\nthree\n"+f+"\n")
	}
	write(t, filepath.Join(dir, ".gitignore"), "*.log\n")
	tgit(t, dir, "add", ".")
	tgit(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

func open(t *testing.T, dir string) *Repo {
	t.Helper()
	r, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ensure(t *testing.T, r *Repo, id, base, session string) *Worktree {
	t.Helper()
	wt, created, err := r.Ensure(context.Background(), id, base, session)
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Fatalf("Ensure(%s): created = false for a new bead", id)
	}
	return wt
}

// commitIn commits a file change in dir as the agent would.
func commitIn(t *testing.T, dir, file, content, msg string) string {
	t.Helper()
	write(t, filepath.Join(dir, file), content)
	tgit(t, dir, "add", "--", file)
	tgit(t, dir, "commit", "-q", "-m", msg)
	return strings.TrimSpace(tgit(t, dir, "rev-parse", "HEAD"))
}

func rev(t *testing.T, dir, r string) string {
	t.Helper()
	return strings.TrimSpace(tgit(t, dir, "rev-parse", "--verify", r))
}

// snap is everything a person could lose in a checkout: HEAD, the branch
// it is on, the index (staged blobs), git status with untracked and
// ignored files, every ref (branches, stash, ...), and the mode and sha256
// of every file under the top level, untracked and ignored ones included
// (the .git directory or file excepted).
type snap struct {
	Head, Symref, Staged, Status, Refs string
	Files                              map[string]string
}

func snapshot(t *testing.T, dir string) snap {
	t.Helper()
	s := snap{
		Head:   strings.TrimSpace(tgit(t, dir, "rev-parse", "HEAD")),
		Staged: tgit(t, dir, "ls-files", "--stage", "-z"),
		Status: tgit(t, dir, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored"),
		Refs:   tgit(t, dir, "for-each-ref", "--format=%(refname) %(objectname)"),
		Files:  map[string]string{},
	}
	s.Symref, _ = tgitErr(dir, "symbolic-ref", "-q", "HEAD")
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		rel, _ := filepath.Rel(dir, p)
		s.Files[rel] = info.Mode().String() + " " + hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sameSnap(t *testing.T, what string, before, after snap) {
	t.Helper()
	if reflect.DeepEqual(before, after) {
		return
	}
	bv, av := reflect.ValueOf(before), reflect.ValueOf(after)
	for i := 0; i < bv.NumField(); i++ {
		if !reflect.DeepEqual(bv.Field(i).Interface(), av.Field(i).Interface()) {
			t.Errorf("%s: %s changed:\nbefore: %q\nafter:  %q", what, bv.Type().Field(i).Name, bv.Field(i).Interface(), av.Field(i).Interface())
		}
	}
}

func parents(t *testing.T, dir, commit string) []string {
	t.Helper()
	f := strings.Fields(tgit(t, dir, "rev-list", "--parents", "-n", "1", commit))
	return f[1:]
}
