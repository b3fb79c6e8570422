package runner

import (
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
