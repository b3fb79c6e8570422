package taskrun

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/runner"
)

// The submitted text with the turn's answer below it (opencode after a
// reply) is evidence where the adapter has a working state; the text alone
// over the idle box (opencode before the turn starts) is not.
func TestAnsweredBelow(t *testing.T) {
	data, err := os.ReadFile("../../adapters/testdata/screens/opencode_idle_after_reply.txt")
	if err != nil {
		t.Fatal(err)
	}
	replied := string(data)
	var kept []string
	for _, l := range strings.Split(replied, "\n") {
		if !strings.Contains(l, "Hello from the fake model") && !strings.Contains(l, "▣") {
			kept = append(kept, l)
		}
	}
	notYet := strings.Join(kept, "\n")
	idle := regexp.MustCompile(`(?m)^ *┃( +Ask anything(…|\.\.\.).*)? *\n *┃ *\n *┃ +\S.*\n *╹▀`)
	for _, c := range []struct {
		name, screen string
		want         bool
	}{
		{"replied", replied, true},
		{"not started", notYet, false},
	} {
		loc := idle.FindStringIndex(c.screen)
		if loc == nil {
			t.Fatalf("%s: no idle match", c.name)
		}
		d := runner.Detection{Screen: c.screen, Match: c.screen[loc[0]:loc[1]]}
		if !shownOutside(d, loc[0], "hello there") {
			t.Fatalf("%s: the submitted text is not found", c.name)
		}
		if got := answeredBelow(d, loc[0], "hello there"); got != c.want {
			t.Errorf("%s: answeredBelow = %v, want %v", c.name, got, c.want)
		}
	}
}
