package workflow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// workflowExts are tried in this order when a workflow is named, not pathed.
var workflowExts = []string{".yaml", ".yml", ".json"}

// NotFoundError is a workflow that is neither a file nor a named workflow.
// Tried lists every path looked at, so the user can see where to put it.
type NotFoundError struct {
	Name  string
	Tried []string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("workflow %q not found (tried %s)", e.Name, strings.Join(e.Tried, ", "))
}

// Unwrap makes errors.Is(err, fs.ErrNotExist) hold, as for a missing file.
func (e *NotFoundError) Unwrap() error { return fs.ErrNotExist }

// Resolve turns the argument of "vibeteam run" into a file path. An existing
// file is taken as is. A bare name (no path separator, no extension) such as
// "review" is looked up as <baseDir>/.vibeteam/workflows/review.yaml, then
// .yml, then .json, so that named workflows work from any directory.
func Resolve(nameOrPath, baseDir string) (string, error) {
	if nameOrPath == "" {
		return "", errors.New("no workflow given")
	}
	if isFile(nameOrPath) {
		return nameOrPath, nil
	}
	if strings.ContainsAny(nameOrPath, `/\`) || strings.ContainsRune(nameOrPath, filepath.Separator) ||
		filepath.Ext(nameOrPath) != "" {
		if st, err := os.Stat(nameOrPath); err == nil && st.IsDir() {
			return "", fmt.Errorf("%s is a directory, not a workflow file", nameOrPath)
		}
		return "", &NotFoundError{Name: nameOrPath, Tried: []string{nameOrPath}}
	}
	dir := filepath.Join(baseDir, ".vibeteam", "workflows")
	tried := make([]string, 0, len(workflowExts))
	for _, ext := range workflowExts {
		p := filepath.Join(dir, nameOrPath+ext)
		if isFile(p) {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", &NotFoundError{Name: nameOrPath, Tried: tried}
}

// isFile is true for anything that exists and is not a directory: a
// directory named like a workflow ("review/") must not shadow the named one.
func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
