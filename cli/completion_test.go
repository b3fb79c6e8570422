package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	for _, sh := range []string{"bash", "zsh", "fish"} {
		r := p.exec("completion", sh)
		wantCode(t, r, 0)
		if !strings.Contains(r.stdout, "__complete") || r.stderr != "" {
			t.Errorf("completion %s: %q, stderr %q", sh, r.stdout, r.stderr)
		}
		// Where the shell is installed, the script must at least parse.
		if path, err := exec.LookPath(sh); err == nil {
			script := filepath.Join(t.TempDir(), "script")
			if err := os.WriteFile(script, []byte(r.stdout), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(path, "-n", script).CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v\n%s", sh, err, out)
			}
		}
	}
}

// completeIn runs the generated bash completion the way bash does on Tab:
// COMP_WORDS and COMP_CWORD set, _vibeteam called, COMPREPLY printed.
func completeIn(t *testing.T, dir string, env []string, words ...string) []string {
	t.Helper()
	script := `source <(vibeteam completion bash) || exit 9
COMP_WORDS=(vibeteam "$@"); COMP_CWORD=$#
_vibeteam
printf '%s\n' "${COMPREPLY[@]}"`
	cmd := exec.Command("bash", append([]string{"-c", script, "bash"}, words...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(vibeteam)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash completion of %q: %v", words, err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			got = append(got, l)
		}
	}
	return got
}

func TestBashCompletion(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	if filepath.Base(vibeteam) != "vibeteam" {
		t.Fatalf("the test binary must be called vibeteam, is %s", vibeteam)
	}
	p := newProject(t)
	p.write(".vibeteam/workflows/review.yaml", "id: review\n")
	p.write(".vibeteam/workflows/release.yml", "id: release\n")
	p.write("local.yaml", "id: local\n")
	p.write("notes.txt", "")
	p.write("flows/nested.json", "{}")
	mgr := state.NewManager(p.dir)
	for id, st := range map[string]state.Status{"594f289f": state.StatusCompleted, "59aa0011": state.StatusFailed, "abcd1234": state.StatusWaiting} {
		if err := mgr.Save(&state.Session{ID: id, Workflow: "wf", Status: st, StartTime: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"VIBETEAM_BASE_DIR=" + p.dir}
	for _, c := range []struct {
		words []string
		want  []string // exactly, in order
		has   []string // among others
		hasnt []string
	}{
		{words: []string{""}, has: []string{"run", "resume", "sessions", "show", "completion", "version", "help"}, hasnt: []string{"__complete"}},
		{words: []string{"ru"}, want: []string{"run"}},
		{words: []string{"se"}, want: []string{"sessions"}},
		{words: []string{"--base-dir", p.dir, "sh"}, want: []string{"show"}},
		{words: []string{"--"}, has: []string{"--base-dir", "--version", "--help"}},
		{words: []string{"run", "--"}, has: []string{"--set", "--auto-approve", "--headless", "--keep-sessions", "--on-interaction", "--events", "--verbose"}, hasnt: []string{"--grace"}},
		{words: []string{"run", "--au"}, want: []string{"--auto-approve"}},
		{words: []string{"run", "--on-interaction", ""}, want: []string{"ask", "park", "fail"}},
		{words: []string{"run", "--on-interaction", "=", "p"}, want: []string{"park"}},
		// "--on-interaction=<TAB>": bash's words end with "=", and readline
		// replaces the empty text after it: bare values, or the line
		// would read "--on-interaction==park".
		{words: []string{"run", "--on-interaction", "="}, want: []string{"ask", "park", "fail"}},
		{words: []string{"run", "re"}, want: []string{"release", "review"}},
		{words: []string{"run", "rev"}, want: []string{"review"}},
		{words: []string{"run", ""}, has: []string{"review", "release", "demo", "local.yaml", "flows/"}, hasnt: []string{"notes.txt", ".vibeteam/"}},
		{words: []string{"run", "flows/"}, want: []string{"flows/nested.json"}},
		{words: []string{"run", "--headless", "de"}, want: []string{"demo"}},
		{words: []string{"run", "demo", ""}, want: nil},
		{words: []string{"validate", "local.yaml", "l"}, want: []string{"local.yaml"}},
		{words: []string{"show", "59"}, want: []string{"594f289f", "59aa0011"}},
		{words: []string{"show", "594"}, want: []string{"594f289f"}},
		{words: []string{"resume", ""}, want: []string{"59aa0011", "abcd1234"}}, // not the completed one
		{words: []string{"resume", "--set", "x=1", "a"}, want: []string{"abcd1234"}},
		{words: []string{"help", "comp"}, want: []string{"completion"}},
		{words: []string{"completion", ""}, want: []string{"bash", "zsh", "fish"}},
		{words: []string{"schema", ""}, want: []string{"workflow", "adapter"}},
		{words: []string{"frobnicate", ""}, want: nil},
	} {
		got := completeIn(t, p.dir, env, c.words...)
		slices.Sort(got)
		if c.want != nil || (c.has == nil && c.hasnt == nil) {
			want := slices.Clone(c.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%q: completions %q, want %q", c.words, got, want)
			}
		}
		for _, w := range c.has {
			if !slices.Contains(got, w) {
				t.Errorf("%q: completions %q lack %q", c.words, got, w)
			}
		}
		for _, w := range c.hasnt {
			if slices.Contains(got, w) {
				t.Errorf("%q: completions %q include %q", c.words, got, w)
			}
		}
	}
	// --base-dir on the command line names the project, as for the command.
	elsewhere := t.TempDir()
	if got := completeIn(t, elsewhere, nil, "--base-dir", p.dir, "show", "ab"); !slices.Equal(got, []string{"abcd1234"}) {
		t.Errorf("with --base-dir: %q", got)
	}
	if got := completeIn(t, elsewhere, nil, "show", "--base-dir="+p.dir, "ab"); !slices.Equal(got, []string{"abcd1234"}) {
		t.Errorf("with --base-dir=: %q", got)
	}
}
