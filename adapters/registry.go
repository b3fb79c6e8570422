package adapters

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// SourceBuiltin is Info.Source for the adapters that ship with vibeteam.
const SourceBuiltin = "built-in"

// Info describes one registered adapter type, for listings and diagnostics.
type Info struct {
	Name        string
	Source      string // SourceBuiltin, or the path of the user's file
	Command     string
	OnPath      bool // the command can be found (exec.LookPath)
	Description string
}

type entry struct {
	def    *definition
	source string
}

// Registry holds the adapter types a run can use: the built-ins, overridden
// or extended by the user's files. It is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	entries map[string]entry
}

// NewRegistry returns a registry holding the built-in adapters.
func NewRegistry() *Registry { return newRegistry(builtinFS) }

// newRegistry loads the built-ins from fsys. They ship inside the binary,
// so a broken one is a bug in vibeteam itself, found by its tests: it panics
// rather than making every caller handle an error no user can cause.
func newRegistry(fsys fs.FS) *Registry {
	r := &Registry{entries: map[string]entry{}}
	files, err := fs.Glob(fsys, "builtin/*.yaml")
	if err != nil {
		panic(fmt.Sprintf("adapters: built-in adapters: %v", err))
	}
	var errs ErrorList
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			panic(fmt.Sprintf("adapters: built-in adapters: %v", err))
		}
		def, err := parseDefinition(f, data)
		if err != nil {
			errs = append(errs, asErrorList(err)...)
			continue
		}
		if _, dup := r.entries[def.name]; dup {
			errs = append(errs, &FileError{File: f, Field: "name", Msg: fmt.Sprintf("adapter %q defined twice", def.name)})
			continue
		}
		r.entries[def.name] = entry{def: def, source: SourceBuiltin}
	}
	if err := errs.err(); err != nil {
		panic("adapters: broken built-in adapter:\n" + err.Error())
	}
	return r
}

func asErrorList(err error) ErrorList {
	var l ErrorList
	if errors.As(err, &l) {
		return l
	}
	return ErrorList{{Msg: err.Error()}}
}

// LoadDir adds the adapter files (*.yaml, *.yml) of dir, normally
// <baseDir>/.vibeteam/adapters. A file defining the name of a built-in
// replaces it. A missing dir is not an error: most projects have none. The
// good files are loaded even when others are bad; the error is an ErrorList
// of the problems of every bad file.
func (r *Registry) LoadDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load adapters: %w", err)
	}
	var errs ErrorList
	loaded := map[string]string{} // name → file, to catch two files defining one name
	for _, e := range ents {
		ext := strings.ToLower(path.Ext(e.Name()))
		if ext != ".yaml" && ext != ".yml" {
			continue
		}
		file := filepath.Join(dir, e.Name())
		// Stat follows symlinks, so a linked adapter file works while a
		// directory named x.yaml is skipped.
		if st, err := os.Stat(file); err != nil || st.IsDir() {
			if err != nil {
				errs = append(errs, &FileError{File: file, Msg: err.Error()})
			}
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			errs = append(errs, &FileError{File: file, Msg: err.Error()})
			continue
		}
		def, err := parseDefinition(file, data)
		if err != nil {
			errs = append(errs, asErrorList(err)...)
			continue
		}
		if prev, dup := loaded[def.name]; dup {
			errs = append(errs, &FileError{File: file, Field: "name",
				Msg: fmt.Sprintf("adapter %q is already defined in %s", def.name, prev)})
			continue
		}
		loaded[def.name] = file
		r.mu.Lock()
		r.entries[def.name] = entry{def: def, source: file}
		r.mu.Unlock()
	}
	return errs.err()
}

// Has reports whether an adapter type is registered.
func (r *Registry) Has(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.entries[name]
	return ok
}

// HasMode reports whether adapter name can run in mode.
func (r *Registry) HasMode(name, mode string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	if !ok {
		return false
	}
	_, ok = e.def.modes[Mode(mode)]
	return ok
}

// TakesQueue reports whether a task of adapter name in mode can be given
// pendingInputs: headless ones read them on stdin; in a terminal they are
// typed when the adapter's idle state shows, so it needs one.
func (r *Registry) TakesQueue(name, mode string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	if !ok {
		return false
	}
	m, ok := e.def.modes[Mode(mode)]
	if !ok {
		return false
	}
	if Mode(mode) == Headless && !m.usePTY {
		return true
	}
	if Mode(mode) == Headless {
		return false // a PTY without automation: nothing would type them
	}
	for _, s := range e.def.states {
		if s.Name == StateIdle {
			return true
		}
	}
	return false
}

// Names returns the registered adapter types, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.entries))
	for n := range r.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// New returns a fresh adapter instance of typeName for one task. Instances
// share nothing mutable, so parallel tasks cannot affect each other.
func (r *Registry) New(typeName string, opts Options) (Adapter, error) {
	r.mu.RLock()
	e, ok := r.entries[typeName]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown adapter %q (known: %s)", typeName, strings.Join(r.Names(), ", "))
	}
	return newInstance(e.def, opts), nil
}

// Info describes every registered adapter, sorted by name.
func (r *Registry) Info() []Info {
	r.mu.RLock()
	out := make([]Info, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, Info{
			Name:        e.def.name,
			Source:      e.source,
			Command:     e.def.command,
			Description: e.def.description,
		})
	}
	r.mu.RUnlock()
	// LookPath touches the file system; do it outside the lock.
	for i := range out {
		_, err := exec.LookPath(out[i].Command)
		out[i].OnPath = err == nil
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
