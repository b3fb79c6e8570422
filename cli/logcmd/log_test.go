package logcmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
)

// logOf saves a session id under a new base dir, with an event log of a
// start and a finish.
func logOf(t *testing.T, id string) (*state.Manager, string) {
	t.Helper()
	base := t.TempDir()
	mgr := state.NewManager(base)
	if err := mgr.Save(&state.Session{ID: id, Workflow: "fix-bug", Status: state.StatusCompleted}); err != nil {
		t.Fatal(err)
	}
	l, err := state.OpenEventLog(mgr.EventLogPath(id))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.Local)
	for i, p := range []events.Payload{events.SessionStart{Workflow: "fix-bug"}, events.SessionEnd{Status: state.StatusCompleted}} {
		if err := l.Write(state.Event{Time: at.Add(time.Duration(i) * time.Second), Session: id, Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	return mgr, base
}

// Run is called with its options, in-process and in parallel: no flag
// values shared through urfave/cli.
func TestRunPrintsEachSessionsLog(t *testing.T) {
	for _, id := range []string{"a1", "b2", "c3"} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			mgr, _ := logOf(t, id)
			opts := &Options{IO: cmdutil.IO{Out: &out, Err: &errb}, Manager: mgr, ID: id}
			if err := Run(context.Background(), opts); err != nil {
				t.Fatal(err)
			}
			want := []string{"10:00:00 session " + id + " started: workflow fix-bug", "10:00:01 ✓ session " + id + " finished: completed"}
			if got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("log printed:\n%s\nwant:\n%s", out.String(), strings.Join(want, "\n"))
			}
		})
	}
}

// The command hands what its flags and argument say to its run function.
func TestNewCmdLogGathersTheOptions(t *testing.T) {
	_, base := logOf(t, "5e55ab")
	var got *Options
	app := &ucli.App{Commands: []*ucli.Command{NewCmdLog(cmdutil.IO{}, func(_ context.Context, o *Options) error { got = o; return nil })}}
	if err := app.Run([]string{"vibeteam", "log", "--base-dir", base, "--json", "-f", "5e5"}); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.ID != "5e55ab" || !got.JSON || !got.Follow {
		t.Fatalf("options %+v, want session 5e55ab, --json and --follow", got)
	}
}
