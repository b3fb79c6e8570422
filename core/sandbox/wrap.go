package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Wrap is the sandboxed start of path (an absolute program path) with
// args and env ("KEY=value", what the process would get unsandboxed):
// the path of the program to run (bwrap), its argv, and the environment
// kept; Start starts it in the plan's network namespace. Names in explicit
// (set for this process by vibeteam: an adapter's launch environment, a
// task's env:) are kept too. What the command line or the environment
// names under /tmp (the program itself, a script file, an agent's launch
// files), which the sandbox's private /tmp would hide, is shown read-only.
func (p *Plan) Wrap(path string, args, env []string, explicit func(name string) bool) (string, []string, []string) {
	kept := make([]string, 0, len(env)+len(p.Set))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, set := p.Set[name]; set {
			continue
		}
		if p.keeps(name) || explicit != nil && explicit(name) {
			kept = append(kept, kv)
		}
	}
	for _, k := range sortedKeys(p.Set) {
		kept = append(kept, k+"="+p.Set[k])
	}
	argv := make([]string, 0, 1+len(p.Args)+8+len(p.Mounts)+len(p.Before)+1+len(args))
	argv = append(argv, p.Bwrap)
	argv = append(argv, p.Args...)
	// Before the plan's own mounts, so that those (a writable directory,
	// a hidden one) win over these.
	for _, m := range exposed(path, append(slices.Clone(p.Before), args...), kept) {
		argv = append(argv, m.args()...)
	}
	argv = append(argv, p.Mounts...)
	argv = append(argv, "--")
	argv = append(argv, p.Before...)
	argv = append(argv, path)
	argv = append(argv, args...)
	return argv[0], argv, kept
}

func (p *Plan) keeps(name string) bool {
	for _, k := range p.Keep {
		if k == name {
			return true
		}
		if prefix, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// exposed are the paths under the temporary directory that the command
// line and the environment name and that exist: each shown read-only
// inside (a directory named in PATH too). Not a socket, nor one directly
// in a directory shown (/tmp/.X11-unix/X0, an ssh-agent's): an argument
// can be a prompt, and a prompt bead text. Nothing under /run is shown
// unless the temporary directory is there.
func exposed(path string, args, env []string) []mount {
	var out []string
	add := func(s string) {
		if !filepath.IsAbs(s) || !inTemp(s) {
			return
		}
		s = filepath.Clean(s)
		if slices.ContainsFunc(out, func(o string) bool { return under(s, o) }) {
			return
		}
		if fi, err := os.Stat(s); err == nil && fi.Mode()&os.ModeSocket == 0 {
			out = append(out, s)
		}
	}
	add(path)
	for _, a := range args {
		add(a)
	}
	for _, kv := range env {
		name, v, _ := strings.Cut(kv, "=")
		if name == "PWD" {
			continue // the working directory: bound already
		}
		if name == "PATH" {
			for _, d := range filepath.SplitList(v) {
				add(d)
			}
			continue
		}
		add(v)
	}
	var ms []mount
	for _, e := range out {
		ms = append(ms, mount{"--ro-bind", e, e})
		entries, _ := os.ReadDir(e)
		for _, en := range entries {
			if en.Type()&os.ModeSocket != 0 {
				ms = append(ms, mount{"--ro-bind", os.DevNull, filepath.Join(e, en.Name())})
			}
		}
	}
	return ms
}

// inTemp reports whether path is inside /tmp or the temporary directory,
// which the sandbox replaces with empty ones.
func inTemp(path string) bool {
	for _, dir := range []string{tmpRoot, os.TempDir()} {
		if under(path, dir) && filepath.Clean(path) != filepath.Clean(dir) && underPrivate(path) {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
