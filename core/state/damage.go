package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/vibeteam/vibeteam/core/vocab"
)

// DamagedError is a session file that cannot be read as a session: empty,
// cut short, null, not JSON.
type DamagedError struct {
	ID, Path, Reason string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("session %s is damaged (%s): %s", e.ID, e.Path, e.Reason)
}

// unreadable says why data, which json.Unmarshal into a Session answered
// err, is not a session file; "" when it is one.
func unreadable(data []byte, err error) string {
	trimmed := bytes.TrimSpace(data)
	var syntax *json.SyntaxError
	switch {
	case len(trimmed) == 0:
		return fmt.Sprintf("the file is empty (%d bytes)", len(data))
	case string(trimmed) == "null":
		return "the file holds null, not a session"
	case err == nil:
		return ""
	case err.Error() == "unexpected end of JSON input":
		return fmt.Sprintf("the file is cut short (%d bytes)", len(data))
	case errors.As(err, &syntax):
		return fmt.Sprintf("not JSON at byte %d: %v", syntax.Offset, err)
	}
	return "not a session: " + err.Error()
}

// JournalDamage is a journal line, not the last, that could not be read:
// the session holds what came before it, nothing after.
type JournalDamage struct {
	Path string
	Line int
	Why  string
	// Lost is how many whole changes follow the bad line, not applied;
	// Steps are the step runs and tasks they recorded ("name (key) done",
	// "task t DONE"), in order.
	Lost  int
	Steps []string
	// Again are the steps and tasks a resume from before the gap runs
	// again: those not ended at the last whole state (the bad line may
	// have been their end), and those the lost lines recorded.
	Again []string
}

func (d *JournalDamage) Error() string {
	return fmt.Sprintf("%s:%d: a damaged line (%s) with %s after it", d.Path, d.Line, d.Why, d.LostText())
}

// LostText says what the replay left out: the changes after the bad line
// and the steps they recorded.
func (d *JournalDamage) LostText() string {
	what := fmt.Sprintf("%d later change(s)", d.Lost)
	if len(d.Steps) > 0 {
		what += " of " + strings.Join(d.Steps, ", ")
	}
	return what
}

// unended names s's step runs and tasks that were not ended at the last
// whole state, as lostChanges does.
func unended(s *Session) []string {
	var keys, out []string
	for k, r := range s.Runs {
		if r.Status == vocab.StepRunning || r.Status == "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s (%s)", s.Runs[k].Name, k))
	}
	var tasks []string
	for id, st := range s.TaskStatus {
		if st == TaskRunning {
			tasks = append(tasks, "task "+id)
		}
	}
	sort.Strings(tasks)
	return append(out, tasks...)
}

// lostChanges counts the whole changes in rest (the journal after a bad
// line) that a replay would have applied, and names the steps and tasks
// they recorded, each once: by name, and with the last status recorded.
func lostChanges(rest []byte, seq uint64) (n int, names, withStatus []string) {
	last := map[string]string{}
	note := func(name, status string) {
		if _, ok := last[name]; !ok {
			names = append(names, name)
		}
		if status != "" || last[name] == "" {
			last[name] = status
		}
	}
	for _, line := range bytes.Split(rest, []byte("\n")) {
		var c Change
		if json.Unmarshal(line, &c) != nil || c.Seq <= seq {
			continue
		}
		n++
		switch {
		case c.Run != nil:
			note(fmt.Sprintf("%s (%s)", c.Run.Name, c.RunKey), string(c.Run.Status))
		case c.Task != "" && c.Status != "":
			note("task "+c.Task, string(c.Status))
		case c.Task != "" && c.Record != nil:
			note("task "+c.Task, string(c.Record.Status))
		case c.Task != "":
			note("task "+c.Task, "")
		}
	}
	for _, name := range names {
		if st := last[name]; st != "" {
			name += " " + st
		}
		withStatus = append(withStatus, name)
	}
	return n, names, withStatus
}
