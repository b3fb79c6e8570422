// Package yamlnode walks the yaml.Node tree of a vibeteam file (a stage
// workflow, a grimoire or an adapter file) and reports its problems: one
// walker, one error type and one wording, so the same mistake reads the same
// in every kind of file.
//
// A Walker reads mappings (unknown and duplicate keys, merge keys, with a
// "did you mean" from internal/suggest), lists and scalars (text, strings,
// booleans, whole numbers, durations), and collects every problem in an
// ErrorList of *Error, each located as file:line:col. SyntaxError places
// yaml.v3's own errors the same way.
//
// The types of a file (which keys, which values) are the loaders' business:
// they call the walker's readers and add their own checks with Errorf, Fail
// and the message helpers here (MissingKey, OneOf, ...).
package yamlnode

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/vibeteam/vibeteam/core/vocab"
)

// Pos is a position in a source file. Line and Col are 1-based; 0 means
// unknown (a YAML syntax error may come with a line only, a file that cannot
// be read with neither). The zero Pos means "unknown" altogether, as for a
// definition reloaded from a session file. Positions are of the file a
// definition was loaded from and are never stored with it.
type Pos struct {
	File string `json:"-"`
	Line int    `json:"-"`
	Col  int    `json:"-"`
}

func (p Pos) String() string {
	switch {
	case p.File == "" && p.Line == 0:
		return ""
	case p.Line == 0:
		return p.File
	default:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	}
}

// Error is one problem in a file. Field is a dotted path to the offending
// value (stages[1].tasks[0].adapter, modes.headless.args[2]) so a problem
// can be found even when the position is unknown. Pos is embedded so that
// e.File, e.Line and e.Col read as plainly as e.Field.
type Error struct {
	Pos
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
	loc := e.File
	if e.Line > 0 {
		if loc != "" {
			loc += ":"
		}
		loc += strconv.Itoa(e.Line)
		if e.Col > 0 {
			loc += ":" + strconv.Itoa(e.Col)
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

// Code is usage (exit 2): the file is the person's to fix.
func (e *Error) Code() int { return vocab.ExitUsage }

// Code is usage (exit 2), as each of its errors.
func (l ErrorList) Code() int { return vocab.ExitUsage }

// String is Error: without it, the String of the embedded Pos would be
// promoted and print the position alone.
func (e *Error) String() string { return e.Error() }

// ErrorList is every problem found in one or more files. Reporting them all
// at once spares the user one edit-and-rerun cycle per mistake.
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

// Sort orders the problems by file, line and column. The sort is stable so
// problems without a position keep the order they were found in, which
// follows the file.
func (l ErrorList) Sort() {
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

// Dedupe drops repeats of a problem at the same spot, keeping the first. They
// arise when one mapping is used in several places through an alias or a
// merge key: the mistake is written once, so it is reported once. It reuses
// l's storage.
func (l ErrorList) Dedupe() ErrorList {
	type key struct {
		file      string
		line, col int
		msg       string
	}
	seen := make(map[key]bool, len(l))
	out := l[:0]
	for _, e := range l {
		k := key{e.File, e.Line, e.Col, e.Msg}
		if e.Line > 0 && seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	return out
}
