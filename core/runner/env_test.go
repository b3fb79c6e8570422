package runner

import (
	"slices"
	"strings"
	"testing"
)

// TestEachStartGetsItsEnvironment: the steps of a script share one made
// environment, but a start whose variables, directory or tag differ, or
// after vibeteam's own environment changed, gets its own.
func TestEachStartGetsItsEnvironment(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	t.Setenv("VIBETEAM_ENV_TEST", "before")
	show := func(env map[string]string, dir, tag string) string {
		t.Helper()
		var out strings.Builder
		p, err := StartHeadless(Spec{Command: "sh", Args: []string{"-c", `echo "$VIBETEAM_ENV_TEST $STEP $PWD $VIBETEAM_TASK"`},
			Dir: dir, Env: env, Tag: tag, GroupOnly: true, NoInput: true, MergeOutput: true}, func(c Chunk) { out.Write(c.Clean) })
		if err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		return strings.TrimSpace(out.String())
	}
	check := func(got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	check(show(nil, dir, "s/script"), "before  "+dir+" s/script")
	check(show(nil, dir, "s/script"), "before  "+dir+" s/script")
	check(show(map[string]string{"STEP": "1"}, dir, "s/script"), "before 1 "+dir+" s/script")
	check(show(map[string]string{"STEP": "2"}, dir, "s/script"), "before 2 "+dir+" s/script")
	check(show(map[string]string{"STEP": "2"}, other, "s/script"), "before 2 "+other+" s/script")
	check(show(map[string]string{"STEP": "2"}, other, "t/script"), "before 2 "+other+" t/script")
	t.Setenv("VIBETEAM_ENV_TEST", "after")
	check(show(map[string]string{"STEP": "2"}, other, "t/script"), "after 2 "+other+" t/script")
	check(show(nil, dir, ""), "after  "+dir)
}

// TestChildEnvIsTheMergedEnvironment: whatever the sequence of starts, the
// environment made from the last one's is the one made afresh, entry for
// entry and in the same order (a task tag in vibeteam's own environment
// too, as when vibeteam runs inside a task).
func TestChildEnvIsTheMergedEnvironment(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	starts := []struct {
		env      map[string]string
		dir, tag string
	}{
		{nil, dir, "s/a"}, {nil, dir, "s/b"}, {nil, dir, "s/b"}, {nil, dir, ""}, {nil, dir, "s/c"},
		{map[string]string{"A": "1", "PWD": "/x"}, dir, "s/d"}, {map[string]string{"A": "1"}, other, "s/e"},
		{map[string]string{TaskEnv: "mine"}, other, "s/f"}, {map[string]string{TaskEnv: "mine"}, other, ""},
	}
	for _, own := range []string{"", "outer/task"} {
		if own != "" {
			t.Setenv(TaskEnv, own)
		}
		for i, s := range starts {
			got := childEnv(s.env, s.dir, s.tag)
			if want := mergedEnv(withPWD(withTag(s.env, s.tag), s.dir)); !slices.Equal(got, want) {
				t.Errorf("own tag %q, start %d: got\n%q\nwant\n%q", own, i, got, want)
			}
		}
	}
}
