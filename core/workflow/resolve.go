package workflow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/internal/suggest"

	"github.com/vibeteam/vibeteam/builtin"
)

// workflowExts are tried in this order when a workflow is named, not pathed.
var workflowExts = []string{".yaml", ".yml", ".json"}

// namedDirs are where a named workflow is looked for under the base
// directory, in this order: stage workflows, then grimoires, then coven's
// grimoires (for people coming from coven). The first file found wins, and
// every one of them comes before the built-ins, so a user file overrides a
// built-in of the same name. .vibeteam/workflows comes first so that a name
// that resolved before grimoires existed still resolves to the same file.
var namedDirs = [][]string{
	{".vibeteam", "workflows"},
	{".vibeteam", "grimoires"},
	{".coven", "grimoires"},
}

// NotFoundError is a workflow that is neither a file nor a named workflow.
// Tried lists every path looked at, so the user can see where to put it.
type NotFoundError struct {
	Name  string
	Tried []string
	// Suggestion is the named workflow (a file or a built-in) closest to
	// Name, or "".
	Suggestion string
	// Builtins, when set (by Locate), are listed as what else exists.
	Builtins []string
}

// Code is usage (exit 2): the person names another.
func (e *NotFoundError) Code() int { return vocab.ExitUsage }

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("workflow %q not found (tried %s)", e.Name, strings.Join(compactPaths(e.Tried), ", "))
	if e.Suggestion != "" {
		msg += fmt.Sprintf("; did you mean %q?", e.Suggestion)
	}
	if len(e.Builtins) > 0 {
		msg += fmt.Sprintf(" (built-in workflows: %s)", strings.Join(e.Builtins, ", "))
	}
	return msg
}

// Unwrap makes errors.Is(err, fs.ErrNotExist) hold, as for a missing file.
func (e *NotFoundError) Unwrap() error { return fs.ErrNotExist }

// compactPaths writes the extensions tried for one name in one directory
// once: dir/review.{yaml,yml,json}. Nine paths in full are a paragraph.
func compactPaths(paths []string) []string {
	var out []string
	for i := 0; i < len(paths); {
		stem := strings.TrimSuffix(paths[i], filepath.Ext(paths[i]))
		exts := []string{strings.TrimPrefix(filepath.Ext(paths[i]), ".")}
		j := i + 1
		for ; j < len(paths) && filepath.Ext(paths[j]) != "" && strings.TrimSuffix(paths[j], filepath.Ext(paths[j])) == stem; j++ {
			exts = append(exts, strings.TrimPrefix(filepath.Ext(paths[j]), "."))
		}
		if j-i == 1 {
			out = append(out, paths[i])
		} else {
			out = append(out, stem+".{"+strings.Join(exts, ",")+"}")
		}
		i = j
	}
	return out
}

// Resolve turns the argument of "vibeteam run" into a file path. An existing
// file is taken as is. A bare name (no path separator, no extension) such as
// "review" is looked up in each of namedDirs under baseDir as review.yaml,
// then .yml, then .json, so that named workflows work from any directory.
// Built-ins are not files; Locate looks at them too.
func Resolve(nameOrPath, baseDir string) (string, error) {
	if nameOrPath == "" {
		return "", errors.New("no workflow given")
	}
	if isFile(nameOrPath) {
		return nameOrPath, nil
	}
	if isPathLike(nameOrPath) {
		if st, err := os.Stat(nameOrPath); err == nil && st.IsDir() {
			return "", fmt.Errorf("%s is a directory, not a workflow file", nameOrPath)
		}
		return "", &NotFoundError{Name: nameOrPath, Tried: []string{nameOrPath}}
	}
	tried := make([]string, 0, len(namedDirs)*len(workflowExts))
	for _, d := range namedDirs {
		dir := filepath.Join(append([]string{baseDir}, d...)...)
		for _, ext := range workflowExts {
			p := filepath.Join(dir, nameOrPath+ext)
			if isFile(p) {
				return p, nil
			}
			tried = append(tried, p)
		}
	}
	nf := &NotFoundError{Name: nameOrPath, Tried: tried}
	if s := suggest.Closest(nameOrPath, NamedWorkflows(baseDir)); s != nameOrPath {
		nf.Suggestion = s // a built-in of that very name is no suggestion
	}
	return "", nf
}

// grimoireDirs are where a grimoire chosen for a bead (by its label or
// config.yaml) is looked up: by name, and nowhere else.
var grimoireDirs = [][]string{
	{".vibeteam", "grimoires"},
	{".coven", "grimoires"},
}

// ResolveGrimoire finds the grimoire NAME in the grimoire directories under
// baseDir only: never a file of the current directory, never a path (a
// bead's label chose it, and anyone may write a label). A *NotFoundError
// when it is not there (a built-in may still have the name).
func ResolveGrimoire(name, baseDir string) (string, error) {
	var tried []string
	for _, d := range grimoireDirs {
		dir := filepath.Join(append([]string{baseDir}, d...)...)
		for _, ext := range workflowExts {
			p := filepath.Join(dir, name+ext)
			if isFile(p) {
				return p, nil
			}
			tried = append(tried, p)
		}
	}
	return "", &NotFoundError{Name: name, Tried: tried}
}

// isPathLike is an argument that names a file, not a workflow: it has a
// path separator or an extension.
func isPathLike(arg string) bool {
	return strings.ContainsAny(arg, `/\`) || strings.ContainsRune(arg, filepath.Separator) || filepath.Ext(arg) != ""
}

// NamedWorkflows lists the names "vibeteam run NAME" accepts: the files of
// namedDirs under baseDir and the built-ins, sorted, each once.
func NamedWorkflows(baseDir string) []string {
	var names []string
	for _, d := range namedDirs {
		entries, _ := os.ReadDir(filepath.Join(append([]string{baseDir}, d...)...))
		for _, e := range entries {
			ext := filepath.Ext(e.Name())
			if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !slices.Contains(workflowExts, ext) {
				continue
			}
			names = append(names, strings.TrimSuffix(e.Name(), ext))
		}
	}
	names = append(names, builtin.WorkflowNames()...)
	slices.Sort(names)
	return slices.Compact(names)
}

// Found is a workflow found by Locate: a file, or a built-in.
type Found struct {
	// Path is the file, or for a built-in its pseudo-path
	// ("builtin:demo.yaml"), which errors and Definition.Source name.
	Path string
	// Data is a built-in's text; nil for a file.
	Data []byte
}

// Builtin is true for a built-in workflow or grimoire.
func (f Found) Builtin() bool { return f.Data != nil }

// Load parses what was found; see LoadFile and Parse.
func (f Found) Load(opts LoadOptions) (*Definition, error) {
	if f.Builtin() {
		return Parse(f.Data, f.Path, opts)
	}
	return LoadFile(f.Path, opts)
}

// Diagnose is Load for validate; see DiagnoseFile and Diagnose.
func (f Found) Diagnose(opts LoadOptions) (*Definition, ErrorList) {
	if f.Builtin() {
		return Diagnose(f.Data, f.Path, opts)
	}
	return DiagnoseFile(f.Path, opts)
}

// Locate is Resolve, then the built-ins (stage workflows and grimoires) for a
// bare name that no file has. Its NotFoundError lists the built-ins.
func Locate(nameOrPath, baseDir string) (Found, error) {
	p, err := Resolve(nameOrPath, baseDir)
	if err == nil {
		return Found{Path: p}, nil
	}
	var nf *NotFoundError
	if !errors.As(err, &nf) || isPathLike(nameOrPath) {
		return Found{}, err
	}
	if data, src, ok := builtin.Workflow(nameOrPath); ok {
		return Found{Path: src, Data: data}, nil
	}
	nf.Builtins = builtin.WorkflowNames()
	return Found{}, nf
}

// isFile is true for anything that exists and is not a directory: a
// directory named like a workflow ("review/") must not shadow the named one.
func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
