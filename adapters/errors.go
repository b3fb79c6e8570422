package adapters

import "github.com/vibeteam/vibeteam/internal/yamlnode"

// FileError is one problem in an adapter definition file, located so a user
// can jump to it: "file:line:col: field: msg". e.File, e.Line and e.Col are
// those of its embedded Pos. It is the error type of workflow files too
// (workflow.Error), so the same mistake reads the same in both.
type FileError = yamlnode.Error

// ErrorList is every problem found in one or more adapter files, so a user
// fixes them all in one pass instead of one per run.
type ErrorList = yamlnode.ErrorList

// errorOf returns l sorted by file and position, without repeats (a mapping
// used through several aliases is reported once), as an error; nil when it
// is empty, since an empty ErrorList as an error would be a non-nil one.
func errorOf(l ErrorList) error {
	l.Sort()
	return l.Dedupe().Err()
}
