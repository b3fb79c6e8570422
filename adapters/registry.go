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
	"slices"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/vibeteam/vibeteam/internal/source"
	"github.com/vibeteam/vibeteam/internal/yamlnode"
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
	// Version says how to ask the command its version (vibeteam doctor);
	// nil when the file has no version key, and the version is not asked.
	Version *VersionCheck
	// Auth is the environment the CLI takes its credentials from.
	Auth Auth
}

// VersionCheck is an adapter file's version key.
type VersionCheck struct {
	// Tested is the version the adapter was checked against; "" when the
	// file does not say.
	Tested string
	Args   []string // what makes the command print its version; never empty
}

// Auth is an adapter file's auth key.
type Auth struct {
	// Env are environment variable names, any one of which, set and not
	// empty, gives the CLI its credentials. Empty: the file names none.
	Env []string
	// Note says what else works, such as the CLI's own login, when none of
	// Env is set.
	Note string
}

type entry struct {
	// load gives the definition: a built-in's is parsed on first use.
	load   func() *definition
	source string
}

// parsed is an entry of a definition parsed already (a user's file).
func parsed(def *definition, source string) entry {
	return entry{load: func() *definition { return def }, source: source}
}

// Registry holds the adapter types a run can use: the built-ins, overridden
// or extended by the user's files. It is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	entries map[string]entry
	broken  map[string]BrokenFile // by file
}

// NewRegistry returns a registry holding the built-in adapters.
func NewRegistry() *Registry {
	r := &Registry{entries: map[string]entry{}, broken: map[string]BrokenFile{}}
	for name, load := range builtins() {
		r.entries[name] = entry{load: load, source: SourceBuiltin}
	}
	return r
}

// builtins are the built-in adapters by name (their file's), each parsed
// on first use and once per process: a run of shell tasks does not pay for
// parsing claude's. newRegistry is the same, parsed at once (its tests).
var builtins = sync.OnceValue(func() map[string]func() *definition {
	files, err := fs.Glob(builtinFS, "builtin/*.yaml")
	if err != nil {
		panic(fmt.Sprintf("adapters: built-in adapters: %v", err))
	}
	loads := make(map[string]func() *definition, len(files))
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".yaml")
		loads[name] = sync.OnceValue(func() *definition {
			data, err := fs.ReadFile(builtinFS, f)
			if err != nil {
				panic(fmt.Sprintf("adapters: built-in adapters: %v", err))
			}
			def, err := parseDefinition(f, data)
			if err != nil {
				panic("adapters: broken built-in adapter:\n" + err.Error())
			}
			if def.name != name {
				panic(fmt.Sprintf("adapters: built-in %s names itself %q", f, def.name))
			}
			return def
		})
	}
	return loads
})

// newRegistry loads the built-ins from fsys. They ship inside the binary,
// so a broken one is a bug in vibeteam itself, found by its tests: it panics
// rather than making every caller handle an error no user can cause.
func newRegistry(fsys fs.FS) *Registry {
	r := &Registry{entries: map[string]entry{}, broken: map[string]BrokenFile{}}
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
			errs = append(errs, &FileError{Pos: yamlnode.Pos{File: f}, Field: "name", Msg: fmt.Sprintf("adapter %q defined twice", def.name)})
			continue
		}
		r.entries[def.name] = parsed(def, SourceBuiltin)
	}
	if err := errorOf(errs); err != nil {
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
// replaces it. A missing dir is not an error: most projects have none.
//
// A file that cannot be loaded (bad YAML, unknown keys, a FIFO, too large)
// does not stop the others: it is kept as broken (see BrokenFiles), so that
// it fails only the workflows that use its adapter, and "vibeteam adapters"
// can still show what is wrong. A broken file named like a built-in hides
// the built-in, which its author meant to replace. The error is only for a
// dir that cannot be listed.
func (r *Registry) LoadDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load adapters: %w", err)
	}
	loaded := map[string]string{} // name → file, to catch two files defining one name
	for _, e := range ents {
		ext := strings.ToLower(path.Ext(e.Name()))
		if ext != ".yaml" && ext != ".yml" {
			continue
		}
		file := filepath.Join(dir, e.Name())
		def, name, err := loadFile(file)
		if err == nil {
			if prev, dup := loaded[def.name]; dup {
				err = ErrorList{{Pos: yamlnode.Pos{File: file}, Field: "name", Msg: fmt.Sprintf("adapter %q is already defined in %s", def.name, prev)}}
			}
		}
		r.mu.Lock()
		if err != nil {
			r.broken[file] = BrokenFile{Name: name, File: file, Err: err}
			if e, ok := r.entries[name]; ok && e.source == SourceBuiltin {
				delete(r.entries, name)
			}
		} else {
			delete(r.broken, file)
			loaded[def.name] = file
			r.entries[def.name] = parsed(def, file)
		}
		r.mu.Unlock()
	}
	return nil
}

// loadFile reads and parses one user adapter file. On failure it still
// returns the adapter name the file was meant to define, from its name key
// when that can be read, else from the file name.
func loadFile(file string) (*definition, string, error) {
	name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	data, err := source.Read(file)
	if err != nil {
		return nil, name, ErrorList{{Pos: yamlnode.Pos{File: file}, Msg: source.Reason(err)}}
	}
	def, err := parseDefinition(file, data)
	if err != nil {
		if n := nameKey(data); n != "" {
			name = n
		}
		return nil, name, err
	}
	return def, def.name, nil
}

// nameKey is the value of a file's top-level name key, if it is a valid
// adapter name, else "".
func nameKey(data []byte) string {
	var doc struct {
		Name string `yaml:"name"`
	}
	if yaml.Unmarshal(data, &doc) != nil || !namePattern.MatchString(doc.Name) {
		return ""
	}
	return doc.Name
}

// ParseFile checks one adapter file, as LoadDir would load it, for
// "vibeteam validate": it returns the adapter's Info, or an ErrorList of
// every problem of the file (or an error naming it if it cannot be read).
func ParseFile(file string) (Info, error) {
	def, _, err := loadFile(file)
	if err != nil {
		return Info{}, err
	}
	return info(def, file), nil
}

// Parse is ParseFile on the contents of file, already read.
func Parse(file string, data []byte) (Info, error) {
	def, err := parseDefinition(file, data)
	if err != nil {
		return Info{}, err
	}
	return info(def, file), nil
}

func info(def *definition, file string) Info {
	i := def.info(file)
	_, lookErr := exec.LookPath(def.command)
	i.OnPath = lookErr == nil
	return i
}

// info is the Info of def from source, without OnPath. Its slices are
// copies: def is shared and never changes.
func (def *definition) info(source string) Info {
	i := Info{
		Name:        def.name,
		Source:      source,
		Command:     def.command,
		Description: def.description,
		Auth:        Auth{Env: slices.Clone(def.auth.env), Note: def.auth.note},
	}
	if def.version != nil {
		i.Version = &VersionCheck{Tested: def.version.tested, Args: slices.Clone(def.version.args)}
	}
	return i
}

// BrokenFile is a user adapter file that could not be loaded.
type BrokenFile struct {
	Name string // the adapter it defines (its name key, else its file name)
	File string
	Err  error // an ErrorList: every problem of the file, located
}

// BrokenFiles returns the adapter files LoadDir could not load, by path.
func (r *Registry) BrokenFiles() []BrokenFile {
	r.mu.RLock()
	out := make([]BrokenFile, 0, len(r.broken))
	for _, b := range r.broken {
		out = append(out, b)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

// Broken returns the problems of the file that was to define adapter name,
// or nil when name is registered or no broken file claims it.
func (r *Registry) Broken(name string) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if _, ok := r.entries[name]; ok {
		return nil
	}
	var files []string
	for f, b := range r.broken {
		if b.Name == name {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return nil
	}
	sort.Strings(files)
	return r.broken[files[0]].Err
}

// CheckLaunch reports what would stop a task of adapter name from starting
// in mode with this prompt (already rendered) and extraArgs: a missing mode,
// a prompt the mode needs but lacks, or one it cannot pass (see
// LaunchConfig). It starts nothing.
func (r *Registry) CheckLaunch(name, mode, prompt string, extraArgs []string) error {
	r.mu.RLock()
	e, ok := r.entries[name]
	r.mu.RUnlock()
	if !ok {
		return fmt.Errorf("unknown adapter %q", name)
	}
	if Mode(mode) == ACP {
		_, err := newInstance(e.load(), Options{}).LaunchConfig(ACP, prompt, extraArgs)
		return err
	}
	m, ok := e.load().modes[Mode(mode)]
	if !ok {
		return fmt.Errorf("adapter %q has no %s mode", name, mode)
	}
	inst := newInstance(e.load(), Options{})
	if prompt == "" && m.prompt.required {
		msg := fmt.Sprintf("adapter %q needs a prompt in %s mode", name, mode)
		if lc, err := inst.LaunchConfig(Mode(mode), "PROMPT", extraArgs); err == nil {
			msg += fmt.Sprintf(" (it runs `%s %s`)", lc.Command, strings.Join(lc.Args, " "))
		}
		return errors.New(msg)
	}
	_, err := inst.LaunchConfig(Mode(mode), prompt, extraArgs)
	return err
}

// CheckCommand reports whether the command of adapter name can be started
// by a task running in dir: found on PATH, or, for a command written as a
// path, an executable file there (a relative one is relative to dir, as
// os/exec takes it).
func (r *Registry) CheckCommand(name, dir string) error {
	r.mu.RLock()
	e, ok := r.entries[name]
	r.mu.RUnlock()
	if !ok {
		return fmt.Errorf("unknown adapter %q", name)
	}
	return checkCommandAt(e.load().command, "command", name, dir)
}

// checkCommandAt checks that cmd (the adapter's what) is installed: a name
// on PATH, or an executable file (relative to dir).
func checkCommandAt(cmd, what, name, dir string) error {
	if !strings.ContainsRune(cmd, filepath.Separator) && !strings.ContainsRune(cmd, '/') {
		if _, err := exec.LookPath(cmd); err != nil {
			if errors.Is(err, exec.ErrDot) {
				return fmt.Errorf("%s %q of adapter %q is found only through a relative PATH entry, which is not used: %v", what, cmd, name, err)
			}
			return fmt.Errorf("%s %q of adapter %q is not installed (not found on PATH)", what, cmd, name)
		}
		return nil
	}
	p := cmd
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	st, err := os.Stat(p)
	switch {
	case err != nil:
		return fmt.Errorf("%s %s of adapter %q does not exist", what, p, name)
	case st.IsDir() || st.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s %s of adapter %q is not an executable file", what, p, name)
	}
	return nil
}

// Has reports whether an adapter type is registered.
func (r *Registry) Has(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.entries[name]
	return ok
}

// TakesMCP reports whether adapter name gives MCP servers to its CLI (its
// file has mcp:).
func (r *Registry) TakesMCP(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	return ok && e.load().mcp != ""
}

// HasMode reports whether adapter name can run in mode.
func (r *Registry) HasMode(name, mode string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	if !ok {
		return false
	}
	if Mode(mode) == ACP {
		return e.load().acp != nil
	}
	_, ok = e.load().modes[Mode(mode)]
	return ok
}

// ACPCommand is the command of adapter name's acp mode ("" without one).
func (r *Registry) ACPCommand(name string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	if !ok || e.load().acp == nil {
		return ""
	}
	if c := e.load().acp.command; c != "" {
		return c
	}
	return e.load().command
}

// CheckModeCommand is CheckCommand for a task of adapter name in mode: in
// acp mode, the acp mode's own command (claude-agent-acp, codex-acp).
func (r *Registry) CheckModeCommand(name, mode, dir string) error {
	if Mode(mode) != ACP {
		return r.CheckCommand(name, dir)
	}
	cmd := r.ACPCommand(name)
	if cmd == "" {
		return fmt.Errorf("adapter %q has no acp mode", name)
	}
	return checkCommandAt(cmd, "acp command", name, dir)
}

// TakesMCPIn reports whether adapter name's agent takes MCP servers in
// mode: in acp mode always (stdio servers go in session/new, which every
// ACP agent takes; http and sse are checked against the agent's
// mcpCapabilities as the session starts), else as TakesMCP.
func (r *Registry) TakesMCPIn(name, mode string) bool {
	if Mode(mode) == ACP {
		return r.HasMode(name, mode)
	}
	return r.TakesMCP(name)
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
	m, ok := e.load().modes[Mode(mode)]
	if !ok {
		return false
	}
	if Mode(mode) == Headless && !m.usePTY {
		return true
	}
	if Mode(mode) == Headless {
		return false // a PTY without automation: nothing would type them
	}
	for _, s := range e.load().states {
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
	return newInstance(e.load(), opts), nil
}

// Info describes every registered adapter, sorted by name.
func (r *Registry) Info() []Info {
	r.mu.RLock()
	out := make([]Info, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, e.load().info(e.source))
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
