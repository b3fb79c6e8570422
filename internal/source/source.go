// Package source reads the files vibeteam is told to load (workflows,
// adapter files) and helps place problems in them. Those paths come from
// users and from a directory anyone can drop files into, so a read must never
// block (a FIFO), never run unbounded (/dev/zero) and always name the file.
package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"syscall"

	"github.com/vibeteam/vibeteam/core/vocab"
	"gopkg.in/yaml.v3"
)

// MaxSize bounds a workflow or adapter file. Real ones are a few kilobytes;
// the limit keeps a wrong path (a log, an image) from being parsed at length.
const MaxSize = 4 << 20

// Error is a file that cannot be used as a definition file. Its message
// names the file.
type Error struct {
	Path string
	Msg  string
	Err  error // the underlying error, if any
}

func (e *Error) Error() string { return e.Path + ": " + e.Msg }

// Code is usage (exit 2): the path is the person's to fix.
func (e *Error) Code() int { return vocab.ExitUsage }

// Reason is what a failed Read says without the file's name, for a problem
// reported at the file: an *Error's Msg, else the error itself.
func Reason(err error) string {
	var se *Error
	if errors.As(err, &se) {
		return se.Msg
	}
	return err.Error()
}
func (e *Error) Unwrap() error { return e.Err }

// Read returns the contents of the regular file at path (symlinks are
// followed), or an *Error saying why it is not one: a directory, a FIFO, a
// device, a socket, more than MaxSize bytes, or unreadable.
func Read(path string) ([]byte, error) {
	// Stat first: opening a FIFO for reading blocks until a writer comes.
	st, err := os.Stat(path)
	if err != nil {
		return nil, openError(path, err)
	}
	if err := check(path, st); err != nil {
		return nil, err
	}
	// O_NONBLOCK: should the file have been replaced by a FIFO since the
	// Stat, the open still returns at once, and the Stat of the open file
	// below refuses it. On a regular file the flag has no effect.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, openError(path, err)
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, &Error{Path: path, Msg: err.Error(), Err: err}
	}
	if err := check(path, st); err != nil {
		return nil, err
	}
	// The size can grow after the Stat; the limit holds regardless.
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, &Error{Path: path, Msg: "cannot read: " + err.Error(), Err: err}
	}
	if len(data) > MaxSize {
		return nil, tooLarge(path)
	}
	return data, nil
}

func check(path string, st fs.FileInfo) error {
	if st.Mode().IsRegular() {
		if st.Size() > MaxSize {
			return tooLarge(path)
		}
		return nil
	}
	return &Error{Path: path, Msg: fmt.Sprintf("is %s, not a regular file", kind(st.Mode()))}
}

func tooLarge(path string) error {
	return &Error{Path: path, Msg: fmt.Sprintf("is larger than %d MiB, too large for a workflow or adapter file", MaxSize>>20)}
}

func openError(path string, err error) error {
	msg := err.Error()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		msg = "no such file"
	case errors.Is(err, fs.ErrPermission):
		msg = "permission denied"
	default:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			msg = pe.Err.Error()
		}
	}
	return &Error{Path: path, Msg: msg, Err: err}
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0 || m&fs.ModeCharDevice != 0:
		return "a device"
	}
	return "a special file"
}

// AliasOffset finds where the undefined YAML alias *name is first used in
// data, or returns -1. yaml.v3 reports "unknown anchor 'x' referenced"
// without a position, and "*x" can also appear in comments, quoted strings
// and block text. So each place the text reads "*x" is tried in turn, with
// every other one blanked out: the first that alone still gives the error is
// the alias.
func AliasOffset(data []byte, name string) int {
	re, err := regexp.Compile(`\*` + regexp.QuoteMeta(name) + `(?:$|[\s\]\},])`)
	if err != nil {
		return -1
	}
	found := re.FindAllIndex(data, maxAliasTries)
	if len(found) == 1 {
		return found[0][0]
	}
	want := "yaml: unknown anchor '" + name + "' referenced"
	for i := range found {
		text := bytes.Clone(data)
		for j, m := range found {
			if j != i {
				// A null of the same length, so that nothing moves.
				end := m[0] + 1 + len(name)
				text[m[0]] = '~'
				copy(text[m[0]+1:end], bytes.Repeat([]byte{' '}, end-m[0]-1))
			}
		}
		var n yaml.Node
		if err := yaml.Unmarshal(text, &n); err != nil && err.Error() == want {
			return found[i][0]
		}
	}
	return -1
}

// maxAliasTries bounds the parses AliasOffset spends on one error.
const maxAliasTries = 20
