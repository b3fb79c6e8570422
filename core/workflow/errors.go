package workflow

import (
	"sort"
	"strconv"
	"strings"
)

// Error is one problem in a definition file. Field is a dotted path to the
// offending value (stages[1].tasks[0].adapter) so a problem can be found even
// when the position is unknown, as for a definition reloaded from a session.
type Error struct {
	Pos   Pos
	Field string
	Msg   string
	// Warning marks a problem that does not make the file invalid, such as
	// an agent CLI that is not installed here but may be where it runs.
	Warning bool
}

// Error formats as "file:line:col: field: msg", leaving out the parts that are
// unknown, so that editors and terminals can jump to the spot. A warning
// reads "file:line:col: warning: field: msg", as compilers write theirs.
func (e *Error) Error() string {
	loc := e.Pos.File
	if e.Pos.Line > 0 {
		if loc != "" {
			loc += ":"
		}
		loc += strconv.Itoa(e.Pos.Line)
		if e.Pos.Col > 0 {
			loc += ":" + strconv.Itoa(e.Pos.Col)
		}
	}
	sev := ""
	if e.Warning {
		sev = "warning"
	}
	parts := make([]string, 0, 4)
	for _, s := range []string{loc, sev, e.Field, e.Msg} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ": ")
}

// ErrorList is every problem found in one file, in file order. Reporting them
// all at once spares the user one edit-and-rerun cycle per mistake.
type ErrorList []*Error

// Error is one problem per line.
func (l ErrorList) Error() string {
	if len(l) == 0 {
		return "no errors"
	}
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As reach the individual *Error values.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Err returns the list as an error, or a true nil when it is empty: returning
// an empty ErrorList through the error interface would be a non-nil error.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// HasErrors reports whether l holds a problem that is not a warning.
func (l ErrorList) HasErrors() bool {
	for _, e := range l {
		if !e.Warning {
			return true
		}
	}
	return false
}

// sortByPos orders errors by position. The sort is stable so errors without a
// position (Validate on a stored definition) keep the order they were found
// in, which follows the definition.
func (l ErrorList) sortByPos() {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i].Pos, l[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}
