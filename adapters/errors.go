package adapters

import (
	"fmt"
	"sort"
	"strings"
)

// FileError is one problem in an adapter definition file, located so a user
// can jump to it: "file:line:col: field: msg".
type FileError struct {
	File  string
	Line  int // 1-based; 0 when unknown (e.g. the file could not be read)
	Col   int // 1-based; 0 when unknown (YAML syntax errors carry only a line)
	Field string
	Msg   string
}

func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is every problem found in one or more adapter files, so a user
// fixes them all in one pass instead of one per run.
type ErrorList []*FileError

func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap lets errors.As find the individual *FileError values.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// err returns l as an error, or nil when it is empty. Returning a nil
// ErrorList as error would give a non-nil interface.
func (l ErrorList) err() error {
	if len(l) == 0 {
		return nil
	}
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return l
}
